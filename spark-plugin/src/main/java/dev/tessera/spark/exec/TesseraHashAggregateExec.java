package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
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
 * Hash aggregation on the GPU, fused with the filters, projections and join probes below it
 * (DESIGN.md §3): each device batch of the input goes through the pipeline (the filters, the
 * probes, the grouping keys and the functions' inputs) straight into the groups, one kernel per
 * batch on CUDA, so a star join and its aggregate are one launch per fact batch. One aggregation
 * state per task takes every batch, and the groups come out once at the end (more than once for
 * a partial aggregation that ran out of device memory; a final one then merges them on the CPU:
 * see {@link AggregationRunner}).
 */
public final class TesseraHashAggregateExec extends TesseraPipelineExec {
  private static final long serialVersionUID = 1L;
  private final AggregateSpec spec;
  private final List<Attribute> output;
  private final boolean partial;
  private final String description;

  /**
   * @param input the node whose device batches the pipeline reads
   * @param builds the broadcast build sides the pipeline probes, by table
   * @param pipeline the fused filters, probes and projections; its outputs are the aggregation's
   *     input columns (keys first)
   * @param spec the aggregation over the pipeline's outputs
   * @param output the attributes of the keys, then of the functions
   * @param partial whether the groups are partial aggregates, merged again after a shuffle (then
   *     a task may emit a key more than once)
   * @param description the Spark aggregate this replaces, for plans and explain
   */
  public TesseraHashAggregateExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline,
      AggregateSpec spec, List<Attribute> output, boolean partial, String description) {
    super(input, builds, pipeline);
    this.spec = spec;
    this.output = List.copyOf(output);
    this.partial = partial;
    this.description = description;
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
        ExecMetrics.CPU_MERGED_ROWS, ExecMetrics.BATCH_SPLITS, ExecMetrics.MEMORY_WAITS};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    Pipeline p = pipeline();
    AggregateSpec a = spec;
    List<Attribute> out = output;
    boolean isPartial = partial;
    List<JoinProbe> probes = probes();
    List<TaskJoinTables.Source> sources = TaskJoinTables.sources(builds(), probes,
        sparkContext());
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> {
          PipelineRunner pipeline = PipelineRunner.forTask(p, sources, probes, m);
          Backend backend = pipeline.backend();
          GpuStream stream = pipeline.stream();
          AggregationRunner runner = new AggregationRunner(pipeline.lastStageInput(batches),
              () -> backend.hashAggregateKernel().open(a, backend.deviceMemory(), stream),
              pipeline.last().program(), pipeline.lastTables(), isPartial, out,
              (batch, e) -> pipeline.replay(pipeline.last(), DeviceBatches.view(batch), e), m,
              isPartial ? null : new CpuGroupMerge(a, backend, stream), backend);
          TaskResources.closeAtTaskEnd(runner);
          return (Iterator<ColumnarBatch>) runner;
        }).rdd();
  }

  @Override
  protected SparkPlan copy(SparkPlan newInput, List<SparkPlan> newBuilds) {
    return new TesseraHashAggregateExec(newInput, newBuilds, pipeline(), spec, output, partial,
        description);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(spec, output, partial, description);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraHashAggregateExec " + description + (partial ? " (partial)" : "")
        + " fused " + steps() + " -> " + output;
  }
}
