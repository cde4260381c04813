package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.expr.Program;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.FilterProjectStep;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Hash aggregation on the GPU, fused with the filters and projections below it (DESIGN.md §3):
 * each device batch of the child goes through {@code program} (the filters, the grouping keys
 * and the functions' inputs) straight into the groups, one kernel per batch on CUDA. One
 * aggregation state per task takes every batch, and the groups come out once at the end (more
 * than once for a partial aggregation that ran out of device memory; a final one then merges
 * them on the CPU: see {@link AggregationRunner}).
 */
public final class TesseraHashAggregateExec extends TesseraDeviceExec {
  private static final long serialVersionUID = 1L;
  private final Program program;
  private final List<FilterProjectStep> steps;
  private final AggregateSpec spec;
  private final List<Attribute> output;
  private final boolean partial;
  private final String description;

  /**
   * @param program the fused filter/project over the child's columns; its outputs are the
   *     aggregation's input columns (keys first)
   * @param steps the Spark filters and projections the program evaluates (explain; replaying a
   *     batch on the CPU for Spark's own ANSI error)
   * @param spec the aggregation over the program's outputs
   * @param output the attributes of the keys, then of the functions
   * @param partial whether the groups are partial aggregates, merged again after a shuffle (then
   *     a task may emit a key more than once)
   * @param description the Spark aggregate this replaces, for plans and explain
   */
  public TesseraHashAggregateExec(SparkPlan child, Program program, List<FilterProjectStep> steps,
      AggregateSpec spec, List<Attribute> output, boolean partial, String description) {
    super(child);
    this.program = program;
    this.steps = List.copyOf(steps);
    this.spec = spec;
    this.output = List.copyOf(output);
    this.partial = partial;
    this.description = description;
  }

  public List<FilterProjectStep> steps() {
    return steps;
  }

  public AggregateSpec spec() {
    return spec;
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME, ExecMetrics.BYTES_READ, ExecMetrics.TABLE_FLUSHES,
        ExecMetrics.CPU_MERGED_ROWS};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    Program p = program;
    List<FilterProjectStep> s = steps;
    AggregateSpec a = spec;
    List<Attribute> out = output;
    List<Attribute> in = CollectionConverters.asJava(child().output());
    boolean isPartial = partial;
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> {
          Backend backend = TesseraRuntime.backend();
          GpuStream stream = backend.newStream();
          AggregationRunner runner = new AggregationRunner(batches,
              () -> backend.hashAggregateKernel().open(a, backend.deviceMemory(), stream), p,
              isPartial, out,
              (batch, e) -> SparkReplay.raiseForDeviceBatch(batch, in, s, e, backend, stream), m,
              isPartial ? null : new CpuGroupMerge(a, backend, stream));
          TaskResources.closeAtTaskEnd(() -> {
            try (stream) {
              runner.close();
            }
          });
          return (Iterator<ColumnarBatch>) runner;
        }).rdd();
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new TesseraHashAggregateExec(newChild, program, steps, spec, output, partial,
        description);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(program, steps, spec, output, partial, description);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraHashAggregateExec " + description + (partial ? " (partial)" : "")
        + " fused " + steps + " -> " + output;
  }
}
