package dev.tessera.ssb.bench;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.execution.InputAdapter;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.WholeStageCodegenExec;
import org.apache.spark.sql.execution.ColumnarToRowTransition;
import org.apache.spark.sql.execution.RowToColumnarTransition;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What ran where in one executed plan (adaptive execution's final plan, inside its query stages).
 *
 * <p>Operator nodes are the plan's nodes less the pure wrappers, which do no work of their own:
 * AdaptiveSparkPlanExec, WholeStageCodegenExec, InputAdapter, query stages, ReusedExchangeExec
 * (a second reference to an exchange counted once) and the row/columnar and host/device
 * transitions (ColumnarToRow, RowToColumnar, Tessera's HostToDevice and DeviceToHost). GPU nodes
 * are the operator nodes that are Tessera's. Their ratio is the fraction of the plan on the GPU.
 *
 * @param gpuNodes Tessera's operator nodes
 * @param operatorNodes all operator nodes
 * @param gpuBytesRead the sum of the {@code gpuBytesRead} metric over the nodes that have it
 * @param times the time metrics of Tessera's nodes, summed over the nodes and their tasks
 * @param plan the plan's tree string
 */
public record PlanProfile(int gpuNodes, int operatorNodes, long gpuBytesRead, TaskTimes times,
    String plan) {
  static final String BYTES_READ = "gpuBytesRead";
  private static final String TESSERA_PACKAGE = "dev.tessera.";

  public double gpuFraction() {
    return Stats.fraction(gpuNodes, operatorNodes);
  }

  /** The GPU kernels' time, summed over the nodes and their tasks. */
  public long gpuKernelNanos() {
    return times.kernelNanos();
  }

  /** The profile of {@code executed}, a query's executed plan after it ran. */
  public static PlanProfile of(SparkPlan executed) {
    Counter counter = new Counter();
    counter.visit(executed);
    SparkPlan shown = executed instanceof AdaptiveSparkPlanExec a ? a.executedPlan() : executed;
    return new PlanProfile(counter.gpu, counter.operators, counter.bytesRead, counter.times,
        shown.treeString());
  }

  static boolean isWrapper(SparkPlan node) {
    String name = node.getClass().getSimpleName();
    return node instanceof AdaptiveSparkPlanExec || node instanceof WholeStageCodegenExec
        || node instanceof InputAdapter || node instanceof QueryStageExec
        || node instanceof ReusedExchangeExec || node instanceof ColumnarToRowTransition
        || node instanceof RowToColumnarTransition || name.equals("HostToDeviceExec")
        || name.equals("DeviceToHostExec");
  }

  static boolean isTessera(SparkPlan node) {
    return node.getClass().getName().startsWith(TESSERA_PACKAGE);
  }

  private static final class Counter {
    private final Set<SparkPlan> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    int gpu;
    int operators;
    long bytesRead;
    TaskTimes times = TaskTimes.NONE;

    void visit(SparkPlan node) {
      if (!seen.add(node)) {
        return;
      }
      if (!isWrapper(node)) {
        operators++;
        if (isTessera(node)) {
          gpu++;
        }
      }
      Map<String, SQLMetric> metrics = CollectionConverters.asJava(node.metrics());
      // A metric never set reports -1 or 0 (Spark's initial values), never a negative amount.
      SQLMetric bytes = metrics.get(BYTES_READ);
      bytesRead += bytes == null ? 0 : Math.max(0, bytes.value());
      if (isTessera(node)) {
        for (Map.Entry<String, SQLMetric> m : metrics.entrySet()) {
          times = times.plus(m.getKey(), Math.max(0, m.getValue().value()));
        }
      }
      if (node instanceof AdaptiveSparkPlanExec a) {
        visit(a.executedPlan());
      } else if (node instanceof QueryStageExec q) {
        visit(q.plan());
      } else {
        CollectionConverters.asJava(node.children()).forEach(this::visit);
      }
    }
  }
}
