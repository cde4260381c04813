package dev.tessera.spark.exec;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.ApplyColumnarRulesAndInsertTransitions;
import org.apache.spark.sql.execution.CollapseCodegenStages;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A GPU segment that keeps the Spark plan it replaced, for the tasks of executors that have no
 * usable device runtime (DESIGN.md §5: an executor without a usable GPU never fails a job). Its
 * child is the GPU plan; the Spark plan is not a child (Spark's rules, explain and the UI see
 * only the GPU plan), and it reads the very same inputs (the same scans and query stages, and
 * the same exchanges through {@link SharedInputExec}), so each task runs one of the two over the
 * same partition: the GPU plan where the executor's runtime is usable, else the Spark plan
 * ({@link CpuFallbackRDD}). A task whose GPU plan runs out of device memory before its first row
 * switches to the Spark plan too (DESIGN.md §2), which is why it is planned in local mode as well
 * as on a cluster (see RuntimeReadiness and CpuFallback).
 *
 * <p>The Spark plan is prepared as Spark would have prepared it (row/columnar transitions, whole
 * stage code generation) when this node executes. Its SQL metrics are not shown in the UI.
 */
public final class CpuFallbackExec extends TesseraPassThroughExec {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(CpuFallbackExec.class);
  private final SparkPlan cpu;

  /**
   * @param gpu the GPU plan (with the same output as {@code cpu})
   * @param cpu the Spark plan it replaced, reading the same inputs
   */
  public CpuFallbackExec(SparkPlan gpu, SparkPlan cpu) {
    super(gpu);
    this.cpu = cpu;
  }

  /** The Spark plan a task without a usable runtime runs. */
  public SparkPlan cpuPlan() {
    return cpu;
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.CPU_FALLBACK_TASKS};
  }

  @Override
  public RDD<InternalRow> doExecute() {
    RDD<InternalRow> gpu = child().execute();
    Map<Object, SparkPlan> shared = new IdentityHashMap<>();
    collectShared(child(), shared);
    SparkPlan resolved = resolve(cpu, shared);
    if (resolved == null) {
      // Not expected: a rule after the rewrite replaced an input the two plans share (exchange
      // reuse, say); the Spark plan would read another shuffle, so it cannot stand in.
      LOG.warn("Tessera: an input of the Spark plan kept for executors without a usable GPU is"
          + " no longer in the GPU plan; no per-task fallback for {}", cpu.nodeName());
      return gpu;
    }
    RDD<InternalRow> spark = prepared(resolved).execute();
    if (gpu.getNumPartitions() != spark.getNumPartitions()) {
      // Not expected (both read the same inputs through narrow steps); without a partition to
      // partition match the Spark plan cannot stand in for the GPU plan.
      LOG.warn("Tessera: the Spark plan kept for executors without a usable GPU has {}"
          + " partitions, the GPU plan {}; no per-task fallback for {}",
          spark.getNumPartitions(), gpu.getNumPartitions(), child().nodeName());
      return gpu;
    }
    return new CpuFallbackRDD(gpu, spark, metricMap().get(ExecMetrics.CPU_FALLBACK_TASKS));
  }

  /** The nodes under {@code node} tagged {@link SharedInputExec#KEY}, by key, as Spark ran them. */
  private static void collectShared(SparkPlan node, Map<Object, SparkPlan> into) {
    Option<Object> key = node.getTagValue(SharedInputExec.KEY);
    if (key.isDefined()) {
      into.putIfAbsent(key.get(), node);
    }
    if (node instanceof ReusedExchangeExec reused) {
      Option<Object> reusedKey = reused.child().getTagValue(SharedInputExec.KEY);
      if (reusedKey.isDefined()) {
        into.putIfAbsent(reusedKey.get(), node);
      }
    }
    for (SparkPlan child : CollectionConverters.asJava(node.children())) {
      collectShared(child, into);
    }
  }

  /** {@code plan} reading the shared inputs as the GPU plan now has them, or null if one is gone. */
  private static SparkPlan resolve(SparkPlan plan, Map<Object, SparkPlan> shared) {
    if (plan instanceof SharedInputExec s) {
      SparkPlan now = shared.get(s.key());
      return now == null ? null : now == s.input() ? s : new SharedInputExec(now);
    }
    List<SparkPlan> children = CollectionConverters.asJava(plan.children());
    List<SparkPlan> resolved = new ArrayList<>(children.size());
    boolean changed = false;
    for (SparkPlan child : children) {
      SparkPlan r = resolve(child, shared);
      if (r == null) {
        return null;
      }
      changed |= r != child;
      resolved.add(r);
    }
    return changed ? plan.withNewChildren(CollectionConverters.asScala(resolved).toSeq()) : plan;
  }

  /** {@code plan} with Spark's transitions and whole-stage code generation, as Spark runs it. */
  static SparkPlan prepared(SparkPlan plan) {
    SparkPlan withTransitions = new ApplyColumnarRulesAndInsertTransitions(
        CollectionConverters.asScala(List.<ColumnarRule>of()).toSeq(), false).apply(plan);
    try {
      return new CollapseCodegenStages(new AtomicInteger()).apply(withTransitions);
    } catch (RuntimeException e) {
      LOG.debug("Tessera: no whole-stage code generation for the kept Spark plan", e);
      return withTransitions;
    }
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new CpuFallbackExec(newChild, cpu);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(cpu);
  }

  @Override
  public String simpleString(int maxFields) {
    return "CpuFallbackExec (runs Spark's " + cpu.nodeName()
        + " in tasks without a usable GPU or out of device memory)";
  }
}
