package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.RowErrorException;
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
  private final List<OrderDependentSum> orderDependent;
  private final boolean partial;
  private final String description;

  /**
   * @param input the node whose device batches the pipeline reads
   * @param builds the broadcast build sides the pipeline probes, by table
   * @param pipeline the fused filters, probes and projections; its outputs are the aggregation's
   *     input columns (keys first)
   * @param spec the aggregation over the pipeline's outputs
   * @param output the attributes of the keys, then of the functions (the spec's functions after
   *     those are the order checks' helper sums, which are not output)
   * @param orderDependent the sums whose Spark outcome depends on the order of the rows
   * @param partial whether the groups are partial aggregates, merged again after a shuffle (then
   *     a task may emit a key more than once)
   * @param description the Spark aggregate this replaces, for plans and explain
   */
  public TesseraHashAggregateExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline,
      AggregateSpec spec, List<Attribute> output, List<OrderDependentSum> orderDependent,
      boolean partial, String description) {
    super(input, builds, pipeline);
    this.spec = spec;
    this.output = List.copyOf(output);
    this.orderDependent = List.copyOf(orderDependent);
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
        ExecMetrics.KERNEL_TIME, ExecMetrics.CODEGEN_TIME, ExecMetrics.BYTES_READ,
        ExecMetrics.TABLE_FLUSHES,
        ExecMetrics.CPU_MERGED_ROWS, ExecMetrics.BATCH_SPLITS, ExecMetrics.MEMORY_WAITS,
        ExecMetrics.GPU_WAIT_TIME, ExecMetrics.JOIN_TABLES_TIME,
        ExecMetrics.JOIN_TABLES_WAIT_TIME};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    AggregateSpec a = spec;
    List<Attribute> out = output;
    boolean isPartial = partial;
    List<JoinProbe> probes = probes();
    List<TaskJoinTables.Source> sources = TaskJoinTables.sources(builds(), probes,
        sparkContext());
    Pipeline p = TaskJoinTables.pipelineOver(pipeline(), sources);
    Map<String, SQLMetric> m = metricMap();
    OrderChecks checks = orderChecks();
    return new RereadableInputRDD(child().executeColumnar(), (batches, again) -> {
      PipelineRunner pipeline = PipelineRunner.forTask(p, sources, probes, m);
      Backend backend = pipeline.backend();
      GpuStream stream = pipeline.stream();
      // Rare: the task's rows again, in Spark's order, for a sum the GPU cannot show exact.
      OrderChecks.Replay replay = sink -> again.get().forEachRemaining(batch -> {
        try (batch) {
          pipeline.forEachSparkRow(batch, sink);
        }
      });
      AggregationRunner.GroupsCheck groupsCheck = checks.isEmpty()
          ? AggregationRunner.GroupsCheck.NONE
          : new AggregationRunner.GroupsCheck() {
            @Override
            public ColumnBatch<DeviceColumn> check(ColumnBatch<DeviceColumn> groups,
                long rowsRead) {
              return checks.check(groups, rowsRead, replay, backend, stream);
            }

            @Override
            public RuntimeException overflow(RowErrorException e) {
              return checks.overflow(e, replay);
            }
          };
      AggregationRunner runner = new AggregationRunner(pipeline.lastStageInput(batches),
          () -> backend.hashAggregateKernel().open(a, backend.deviceMemory(), stream),
          () -> pipeline.last().program(), pipeline::lastTables, isPartial, out,
          (batch, e) -> pipeline.replay(pipeline.last(), DeviceBatches.view(batch), e), m,
          isPartial ? null : new CpuGroupMerge(a, backend, stream), backend, groupsCheck);
      TaskResources.closeAtTaskEnd(runner);
      return runner;
    });
  }

  private OrderChecks orderChecks() {
    int keys = spec.keyCount();
    return new OrderChecks(orderDependent,
        output.subList(0, keys).stream().map(Attribute::dataType).toList(),
        pipeline().output().stream().map(Attribute::dataType).toList(), output.size());
  }

  @Override
  protected SparkPlan copy(SparkPlan newInput, List<SparkPlan> newBuilds) {
    return new TesseraHashAggregateExec(newInput, newBuilds, pipeline(), spec, output,
        orderDependent, partial, description);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(spec, output, orderDependent, partial, description);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraHashAggregateExec " + description + (partial ? " (partial)" : "")
        + " fused " + steps() + " -> " + output;
  }
}
