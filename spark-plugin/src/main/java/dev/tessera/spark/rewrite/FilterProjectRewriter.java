package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraBroadcastHashJoinExec;
import dev.tessera.spark.exec.TesseraFilterProjectExec;
import dev.tessera.spark.expr.FilterProjectCompiler;
import dev.tessera.spark.expr.FilterProjectStep;
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
 *     FilterExec          ==>          TesseraFilterProjectExec [Filter, Project]
 *       child                            HostToDeviceExec (the columns the program reads)
 *                                          child
 * </pre>
 *
 * Nodes that cannot run on the GPU stay as they are, with their reasons, which explain reports.
 */
public final class FilterProjectRewriter implements PlanRewriter {
  /** The reasons a node stays on the CPU, on the Spark node itself (visible to AQE and tools). */
  public static final TreeNodeTag<String> CPU_REASON = new TreeNodeTag<>("tessera.cpuReason");

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
      FilterProjectStep step = node instanceof FilterExec f ? FilterProjectStep.filter(f.condition())
          : FilterProjectStep.project(CollectionConverters.asJava(
              ((ProjectExec) node).projectList()).stream().map(e -> (NamedExpression) e).toList());
      try {
        return new DeviceToHostExec(fused(node.children().head(), step));
      } catch (Unsupported e) {
        return stayOnCpu(node, e.getMessage());
      }
    }

    /**
     * A GPU filter/project node computing {@code step} over {@code child}'s output, fused with
     * the GPU filter/project right below {@code child} if there is one (reading what it read).
     * Above a GPU join the node reads the join's device batches directly, so the batches stay
     * on the device from the scan's upload through the joins to the aggregate.
     */
    TesseraFilterProjectExec fused(SparkPlan child, FilterProjectStep step) throws Unsupported {
      if (child instanceof DeviceToHostExec d) {
        SparkPlan below = d.child();
        List<FilterProjectStep> chain = new ArrayList<>();
        if (below instanceof TesseraFilterProjectExec g) {
          chain.addAll(g.steps());
          below = g.child();
        }
        chain.add(step);
        if (below instanceof HostToDeviceExec h) {
          return uploading(h.child(), chain);
        }
        if (below instanceof TesseraBroadcastHashJoinExec) {
          try {
            return readingDevice(below, chain);
          } catch (Unsupported e) {
            // Reading every column may need too many registers: upload what the step reads.
          }
        }
      }
      return uploading(child, List.of(step));
    }

    /** The chain over an upload of the columns of {@code input} it reads. */
    private TesseraFilterProjectExec uploading(SparkPlan input, List<FilterProjectStep> chain)
        throws Unsupported {
      List<Attribute> inputAttributes = CollectionConverters.asJava(input.output());
      FilterProjectCompiler.Compiled compiled = FilterProjectCompiler.compile(chain,
          inputAttributes, ansi, this::expressionEnabled);
      int[] ordinals = compiled.inputOrdinals().stream().mapToInt(Integer::intValue).toArray();
      HostToDeviceExec upload = new HostToDeviceExec(input, ordinals, conf.batchSizeBytes());
      return new TesseraFilterProjectExec(upload, compiled.program(), compiled.output(), chain);
    }

    /** The chain over the device batches of the GPU node {@code input}, every column read. */
    private TesseraFilterProjectExec readingDevice(SparkPlan input, List<FilterProjectStep> chain)
        throws Unsupported {
      FilterProjectCompiler.Compiled compiled = FilterProjectCompiler.compile(chain,
          CollectionConverters.asJava(input.output()), ansi, this::expressionEnabled, true);
      return new TesseraFilterProjectExec(input, compiled.program(), compiled.output(), chain);
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
