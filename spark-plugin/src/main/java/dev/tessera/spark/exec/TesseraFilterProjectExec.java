package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
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
 * Filters, projections and broadcast hash joins on the GPU: one fused kernel launch per device
 * batch evaluates every filter and projection of the chain of Spark nodes it replaced, and probes
 * the join tables of the joins among them (see {@link Pipeline} for the joins whose build keys
 * repeat).
 */
public final class TesseraFilterProjectExec extends TesseraPipelineExec {
  private static final long serialVersionUID = 1L;
  private final List<Attribute> output;

  /**
   * @param input the node whose device batches the pipeline reads
   * @param builds the broadcast build sides, one per probe of the pipeline, by table
   * @param output the chain's output attributes
   */
  public TesseraFilterProjectExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline,
      List<Attribute> output) {
    super(input, builds, pipeline);
    this.output = List.copyOf(output);
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME, ExecMetrics.BYTES_READ};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    List<Attribute> out = output;
    List<JoinProbe> probes = probes();
    List<TaskJoinTables.Source> sources = TaskJoinTables.sources(builds(), probes,
        sparkContext());
    Pipeline p = TaskJoinTables.pipelineOver(pipeline(), sources);
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> {
          PipelineRunner runner = PipelineRunner.forTask(p, sources, probes, m);
          return (Iterator<ColumnarBatch>) new Runner(runner.lastStageInput(batches), runner,
              out, m);
        }).rdd();
  }

  @Override
  protected SparkPlan copy(SparkPlan newInput, List<SparkPlan> newBuilds) {
    return new TesseraFilterProjectExec(newInput, newBuilds, pipeline(), output);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(output);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraFilterProjectExec " + steps() + " -> " + output;
  }

  /** Runs the last stage's program on each of its batches, closing it, and passes the result on. */
  private static final class Runner implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final PipelineRunner pipeline;
    private final List<Attribute> output;
    private final Map<String, SQLMetric> metrics;

    Runner(Iterator<ColumnarBatch> input, PipelineRunner pipeline, List<Attribute> output,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.pipeline = pipeline;
      this.output = output;
      this.metrics = metrics;
    }

    @Override
    public boolean hasNext() {
      return input.hasNext();
    }

    @Override
    public ColumnarBatch next() {
      try (ColumnarBatch in = input.next()) {
        ColumnBatch<DeviceColumn> view = DeviceBatches.view(in);
        ColumnBatch<DeviceColumn> result = pipeline.run(pipeline.last(), view);
        metrics.get(ExecMetrics.BYTES_READ).add(DeviceBatches.bytes(view));
        metrics.get(ExecMetrics.OUTPUT_ROWS).add(result.rowCount());
        metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
        return DeviceBatches.wrap(result, output);
      }
    }
  }
}
