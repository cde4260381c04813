package dev.tessera.spark.rewrite;

import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import dev.tessera.spark.expr.Pipeline;
import dev.tessera.spark.expr.PipelineCompiler;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What a rule's conversion builds with: the fused GPU pipeline a step joins, and the notes explain
 * shows for the converted node (a fusion that failed, the CPU nodes it adds by design). One per
 * conversion of one node.
 *
 * <p>GPU nodes are put in over their children as they are: a GPU node over a CPU node reads an
 * upload of the columns its program reads, over another GPU node its device batches. The
 * transition pass ({@link Transitions}) inserts the copies between them after Spark's own.
 */
public final class Converter {
  private final RewriteContext context;
  private final List<String> notes = new ArrayList<>();
  private final List<ByDesign> byDesign = new ArrayList<>();

  /** A CPU node a conversion adds on purpose, and why. */
  record ByDesign(SparkPlan node, String why) {}

  Converter(RewriteContext context) {
    this.context = context;
  }

  public RewriteContext context() {
    return context;
  }

  List<String> notes() {
    return notes;
  }

  List<ByDesign> byDesign() {
    return byDesign;
  }

  /** {@code node}, a CPU node the conversion puts in on purpose ({@code why} says what for). */
  public SparkPlan onCpuByDesign(SparkPlan node, String why) {
    byDesign.add(new ByDesign(node, why));
    node.setTagValue(GpuRewrite.BY_DESIGN, why);
    return node;
  }

  /**
   * A GPU node computing {@code step} over {@code child}'s output (probing {@code build}'s join
   * table if the step is a join's probe), fused with the GPU pipeline {@code child} is, if it is
   * one (reading what it read, probing what it probed). Over another GPU node the step reads its
   * device batches directly, so the batches stay on the device from the upload through the joins
   * to the aggregate. A fusion that fails is noted for explain, with why.
   *
   * @param build the broadcast build side of a probe step, or null
   */
  public TesseraFusedExec fused(SparkPlan child, PipelineStep step, SparkPlan build)
      throws Unsupported {
    if (child instanceof TesseraFusedExec g) {
      try {
        return over(g.child(), append(g.steps(), step, g.builds().size()),
            append(g.builds(), build));
      } catch (Unsupported e) {
        notes.add("not fused with the GPU steps below it (" + e.getMessage() + "): it runs as a"
            + " GPU node of its own over their batches");
      }
    }
    return over(child, append(List.of(), step, 0), append(List.of(), build));
  }

  /** The chain over {@code input}: its device batches, or an upload of what the chain reads. */
  private TesseraFusedExec over(SparkPlan input, List<PipelineStep> chain,
      List<SparkPlan> builds) throws Unsupported {
    if (input instanceof TesseraPipelineExec) {
      try {
        Pipeline p = compile(chain, input, true);
        return new TesseraFusedExec(input, builds, p, p.output());
      } catch (Unsupported e) {
        // Reading every column may need too many registers: copy the batches to the host and
        // upload what the step reads.
        notes.add("it reads the batches of the GPU node below it through the host ("
            + e.getMessage() + ")");
      }
    }
    Pipeline p = compile(chain, input, false);
    return new TesseraFusedExec(input, builds, p, p.output());
  }

  /**
   * {@code chain} compiled over {@code input}'s output: reading every column of its device
   * batches ({@code readAllInputs}) or an upload of the columns it reads.
   */
  Pipeline compile(List<PipelineStep> chain, SparkPlan input, boolean readAllInputs)
      throws Unsupported {
    return PipelineCompiler.compile(chain, CollectionConverters.asJava(input.output()),
        context.ansi(), context::expressionEnabled, readAllInputs,
        RewriteContext.MAX_EXPANDED_ROWS);
  }

  /** {@code steps} and then {@code step}, whose probe (if any) gets table {@code table}. */
  private static List<PipelineStep> append(List<PipelineStep> steps, PipelineStep step,
      int table) {
    List<PipelineStep> all = new ArrayList<>(steps);
    all.add(step.isProbe() ? PipelineStep.probe(step.probe().withTable(table)) : step);
    return all;
  }

  private static List<SparkPlan> append(List<SparkPlan> builds, SparkPlan build) {
    List<SparkPlan> all = new ArrayList<>(builds);
    if (build != null) {
      all.add(build);
    }
    return all;
  }
}
