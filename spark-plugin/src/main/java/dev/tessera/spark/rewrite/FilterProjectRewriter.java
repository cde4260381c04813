package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.Pipeline;
import dev.tessera.spark.expr.PipelineCompiler;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.FilterExec;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.aggregate.HashAggregateExec;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The plan rewrite for filters and projections: bottom up, every FilterExec and ProjectExec whose
 * expressions compile becomes part of a fused GPU node, merging with a GPU node directly below it,
 * so consecutive filters and projections are one kernel launch per batch:
 *
 * <pre>
 *   ProjectExec                      DeviceToHostExec
 *     FilterExec          ==>          TesseraFusedExec [Filter, Project]
 *       child                            HostToDeviceExec (the columns the program reads)
 *                                          child
 * </pre>
 *
 * Broadcast hash joins join the chain as probes ({@link JoinRewrite}), so a star join and the
 * aggregate over it are one kernel per batch. Nodes that cannot run on the GPU stay as they are,
 * with their reasons, which explain reports.
 */
public final class FilterProjectRewriter implements PlanRewriter {
  /** The reasons a node stays on the CPU, on the Spark node itself (visible to AQE and tools). */
  public static final TreeNodeTag<String> CPU_REASON = new TreeNodeTag<>("tessera.cpuReason");
  /**
   * On the plan that replaced a Spark node: that node, with its original subtree (what
   * {@link CpuFallback} keeps for executors without a usable GPU).
   */
  static final TreeNodeTag<SparkPlan> REPLACES = new TreeNodeTag<>("tessera.replaces");
  /** On an exchange the rewrite copied (its subtree changed): the exchange it copied. */
  static final TreeNodeTag<SparkPlan> COPIES = new TreeNodeTag<>("tessera.copies");
  /** The most rows of one batch of a join's 1:N expansion (a larger one is split). */
  static final int MAX_EXPANDED_ROWS = 1 << 20;

  @Override
  public SparkPlan rewrite(SparkPlan plan, TesseraConf conf) {
    Pass pass = new Pass(conf, SQLConf.get().ansiEnabled());
    SparkPlan result = pass.rewrite(plan);
    ExplainLog.log(PlanReport.describe(result, pass.reasons), conf.explain());
    return result;
  }

  /** One rewrite of one plan. */
  static final class Pass {
    final TesseraConf conf;
    final boolean ansi;
    final Map<SparkPlan, String> reasons = new IdentityHashMap<>();

    Pass(TesseraConf conf, boolean ansi) {
      this.conf = conf;
      this.ansi = ansi;
    }

    SparkPlan rewrite(SparkPlan node) {
      List<SparkPlan> children = CollectionConverters.asJava(node.children());
      List<SparkPlan> rewritten = new ArrayList<>(children.size());
      boolean changed = false;
      for (SparkPlan child : children) {
        SparkPlan r = rewrite(child);
        changed |= r != child;
        rewritten.add(r);
      }
      SparkPlan current = changed
          ? node.withNewChildren(CollectionConverters.asScala(rewritten).toSeq()) : node;
      SparkPlan result = convert(current);
      if (result != current) {
        result.setTagValue(REPLACES, node);
      } else if (changed && current instanceof Exchange) {
        current.setTagValue(COPIES, node);
      }
      return result;
    }

    /** {@code node} on the GPU, or {@code node} itself. */
    private SparkPlan convert(SparkPlan current) {
      if (current instanceof FilterExec || current instanceof ProjectExec) {
        return toGpu(current);
      }
      if (current instanceof HashAggregateExec aggregate) {
        return AggregateRewrite.toGpu(aggregate, this);
      }
      if (current instanceof BroadcastHashJoinExec join) {
        return JoinRewrite.toGpu(join, this);
      }
      return current;
    }

    private SparkPlan toGpu(SparkPlan node) {
      String name = node.getClass().getSimpleName();
      if (!conf.isExecEnabled(name)) {
        return stayOnCpu(node, name + " is disabled by " + TesseraConf.execEnabledKey(name));
      }
      PipelineStep step = node instanceof FilterExec f ? PipelineStep.filter(f.condition())
          : PipelineStep.project(CollectionConverters.asJava(
              ((ProjectExec) node).projectList()).stream().map(e -> (NamedExpression) e).toList());
      try {
        return new DeviceToHostExec(fused(node.children().head(), step, null));
      } catch (Unsupported e) {
        return stayOnCpu(node, e.getMessage());
      }
    }

    /**
     * A GPU node computing {@code step} over {@code child}'s output (probing {@code build}'s
     * join table if the step is a join's probe), fused with the GPU pipeline right below
     * {@code child} if there is one (reading what it read, probing what it probed). Over another
     * GPU node the step reads its device batches directly, so the batches stay on the device from
     * the scan's upload through the joins to the aggregate.
     *
     * @param build the broadcast build side of a probe step, or null
     */
    TesseraFusedExec fused(SparkPlan child, PipelineStep step, SparkPlan build)
        throws Unsupported {
      if (child instanceof DeviceToHostExec d) {
        SparkPlan below = d.child();
        if (below instanceof TesseraFusedExec g) {
          try {
            return over(g.child(), append(g.steps(), step, g.builds().size()),
                append(g.builds(), build));
          } catch (Unsupported e) {
            // The fused chain may need too many registers: the step alone, over g's batches.
          }
        }
        if (below instanceof TesseraPipelineExec) {
          try {
            return over(below, append(List.of(), step, 0), append(List.of(), build));
          } catch (Unsupported e) {
            // Reading every column may need too many registers: upload what the step reads.
          }
        }
      }
      return over(child, append(List.of(), step, 0), append(List.of(), build));
    }

    /** The chain over {@code input}: its device batches, or an upload of what the chain reads. */
    private TesseraFusedExec over(SparkPlan input, List<PipelineStep> chain,
        List<SparkPlan> builds) throws Unsupported {
      if (input instanceof HostToDeviceExec h) {
        return uploading(h.child(), chain, builds);
      }
      if (input instanceof TesseraPipelineExec) {
        Pipeline p = PipelineCompiler.compile(chain, CollectionConverters.asJava(input.output()),
            ansi, this::expressionEnabled, true, MAX_EXPANDED_ROWS);
        return new TesseraFusedExec(input, builds, p, p.output());
      }
      return uploading(input, chain, builds);
    }

    /** The chain over an upload of the columns of {@code input} it reads. */
    private TesseraFusedExec uploading(SparkPlan input, List<PipelineStep> chain,
        List<SparkPlan> builds) throws Unsupported {
      Pipeline p = PipelineCompiler.compile(chain, CollectionConverters.asJava(input.output()),
          ansi, this::expressionEnabled, false, MAX_EXPANDED_ROWS);
      int[] ordinals = p.inputOrdinals().stream().mapToInt(Integer::intValue).toArray();
      HostToDeviceExec upload = new HostToDeviceExec(input, ordinals, conf.batchSizeBytes());
      return new TesseraFusedExec(upload, builds, p, p.output());
    }

    /** {@code steps} and then {@code step}, whose probe (if any) gets table {@code table}. */
    private static List<PipelineStep> append(List<PipelineStep> steps,
        PipelineStep step, int table) {
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

    private boolean expressionEnabled(String expression) {
      return !TesseraConf.hasExpressionSwitch(expression) || conf.isExpressionEnabled(expression);
    }

    SparkPlan stayOnCpu(SparkPlan node, String reason) {
      reasons.put(node, reason);
      node.setTagValue(CPU_REASON, reason);
      return node;
    }
  }
}
