package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The per-partition top-k of {@code ORDER BY ... LIMIT k} on the GPU, fused with the filters,
 * projections and join probes below it: each device batch goes through the pipeline, and its
 * rows into one running top-k per task, which holds at most k rows on the device whatever the
 * input size. Each task outputs one batch of at most k rows, in order (none for no rows). Spark's
 * TakeOrderedAndProjectExec above it merges the partitions' rows (at most k per partition) and
 * projects the result.
 */
public final class TesseraTopKExec extends TesseraPipelineExec {
  private static final long serialVersionUID = 1L;
  private final TopKSpec spec;
  private final List<Attribute> output;
  private final String description;

  /**
   * @param input the node whose device batches the pipeline reads
   * @param builds the broadcast build sides the pipeline probes, by table
   * @param pipeline the fused filters, probes and projections; its outputs are the top-k's
   *     columns, the sort keys among them
   * @param spec the top-k over the pipeline's outputs
   * @param output the attributes of the pipeline's outputs
   * @param description the Spark node this runs the first step of, for plans and explain
   */
  public TesseraTopKExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline,
      TopKSpec spec, List<Attribute> output, String description) {
    super(input, builds, pipeline);
    this.spec = spec;
    this.output = List.copyOf(output);
    this.description = description;
  }

  public TopKSpec spec() {
    return spec;
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.TOP_K_INPUT_ROWS, ExecMetrics.TOP_K_INPUT_BATCHES, ExecMetrics.KERNEL_TIME,
        ExecMetrics.CODEGEN_TIME, ExecMetrics.BYTES_READ, ExecMetrics.BATCH_SPLITS,
        ExecMetrics.MEMORY_WAITS,
        ExecMetrics.GPU_WAIT_TIME, ExecMetrics.JOIN_TABLES_TIME,
        ExecMetrics.JOIN_TABLES_WAIT_TIME};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    TopKSpec s = spec;
    List<Attribute> out = output;
    List<JoinProbe> probes = probes();
    List<TaskJoinTables.Source> sources = TaskJoinTables.sources(builds(), probes,
        sparkContext());
    Pipeline p = TaskJoinTables.pipelineOver(pipeline(), sources);
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> {
          PipelineRunner runner = PipelineRunner.forTask(p, sources, probes, m);
          // The pipeline's output batches (split when memory runs out) are the top-k's input.
          Map<String, SQLMetric> pipelineMetrics = new HashMap<>(m);
          pipelineMetrics.put(ExecMetrics.OUTPUT_ROWS, m.get(ExecMetrics.TOP_K_INPUT_ROWS));
          pipelineMetrics.put(ExecMetrics.OUTPUT_BATCHES,
              m.get(ExecMetrics.TOP_K_INPUT_BATCHES));
          Iterator<ColumnarBatch> rows = new TesseraFusedExec.Runner(
              runner.lastStageInput(batches), runner, out, pipelineMetrics);
          Backend backend = runner.backend();
          TopKKernel.Running running = backend.topKKernel().open(s, backend.deviceMemory(),
              runner.stream());
          TaskResources.closeAtTaskEnd(running);
          return (Iterator<ColumnarBatch>) new Result(rows, running, out, m);
        }).rdd();
  }

  /** The task's one batch: every input batch into the running top-k, then its rows. */
  private static final class Result implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final TopKKernel.Running running;
    private final List<Attribute> output;
    private final Map<String, SQLMetric> metrics;
    private ColumnBatch<DeviceColumn> result;
    private boolean emitted;

    Result(Iterator<ColumnarBatch> input, TopKKernel.Running running, List<Attribute> output,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.running = running;
      this.output = output;
      this.metrics = metrics;
    }

    @Override
    public boolean hasNext() {
      if (emitted) {
        return false;
      }
      if (result == null) {
        while (input.hasNext()) {
          try (ColumnarBatch batch = input.next()) {
            running.add(DeviceBatches.view(batch));
          }
        }
        result = running.finish();
        // Until it is emitted (then Spark's batch owns it).
        TaskResources.closeAtTaskEnd(() -> {
          if (!emitted) {
            result.close();
          }
        });
      }
      if (result.rowCount() == 0) {
        emitted = true;
        result.close();
        return false;
      }
      return true;
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      emitted = true;
      metrics.get(ExecMetrics.OUTPUT_ROWS).add(result.rowCount());
      metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
      return DeviceBatches.wrap(result, output);
    }
  }

  @Override
  protected SparkPlan copy(SparkPlan newInput, List<SparkPlan> newBuilds) {
    return new TesseraTopKExec(newInput, newBuilds, pipeline(), spec, output, description);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(spec, output, description);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraTopKExec limit " + spec.limit() + " by " + description + " fused " + steps()
        + " -> " + output;
  }
}
