package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Supplier;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Filters, projections and broadcast hash joins on the GPU: one fused kernel launch per device
 * batch evaluates every filter and projection of the chain of Spark nodes it replaced, and probes
 * the join tables of the joins among them (see {@link Pipeline} for the joins whose build keys
 * repeat).
 */
public final class TesseraFusedExec extends TesseraPipelineExec {
  private static final long serialVersionUID = 1L;
  private final List<Attribute> output;

  /**
   * @param input the node whose device batches the pipeline reads
   * @param builds the broadcast build sides, one per probe of the pipeline, by table
   * @param output the chain's output attributes
   */
  public TesseraFusedExec(SparkPlan input, List<SparkPlan> builds, Pipeline pipeline,
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
        ExecMetrics.KERNEL_TIME, ExecMetrics.CODEGEN_TIME, ExecMetrics.BYTES_READ,
        ExecMetrics.BATCH_SPLITS, ExecMetrics.MEMORY_WAITS,
        ExecMetrics.GPU_WAIT_TIME, ExecMetrics.JOIN_TABLES_TIME,
        ExecMetrics.JOIN_TABLES_WAIT_TIME};
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
    return new TesseraFusedExec(newInput, newBuilds, pipeline(), output);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(output);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraFusedExec " + steps() + " -> " + output;
  }

  /**
   * Runs the last stage's program on each of its batches, closing it, and passes the result on
   * (to Spark, or to the top-k of a {@link TesseraTopKExec}).
   * When the output does not fit in device memory (a projection of long strings, or a join that
   * multiplies rows), it waits for other tasks to free memory, then runs the batch in halves,
   * down to one row (DESIGN.md §2): the halves go through host staging memory, the device batch
   * is freed before they come back one at a time.
   */
  static final class Runner implements Iterator<ColumnarBatch> {
    private static final Logger LOG = LoggerFactory.getLogger(TesseraFusedExec.class);
    private final Iterator<ColumnarBatch> input;
    private final PipelineRunner pipeline;
    private final List<Attribute> output;
    private final Map<String, SQLMetric> metrics;
    /** Halves of a batch that did not fit, on the host, to run in order before the input. */
    private final Deque<ColumnBatch<HostColumn>> halves = new ArrayDeque<>();
    private final boolean[] warned = new boolean[1];

    Runner(Iterator<ColumnarBatch> input, PipelineRunner pipeline, List<Attribute> output,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.pipeline = pipeline;
      this.output = output;
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(() -> {
        halves.forEach(ColumnBatch::close);
        halves.clear();
      });
    }

    @Override
    public boolean hasNext() {
      return !halves.isEmpty() || input.hasNext();
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      while (true) {
        ColumnBatch<DeviceColumn> result;
        if (halves.isEmpty()) {
          try (ColumnarBatch in = input.next()) {
            result = runOrSplit(DeviceBatches.view(in));
          }
        } else {
          ColumnBatch<HostColumn> host = halves.peekFirst();
          ColumnBatch<DeviceColumn> device;
          try {
            device = waiting(() -> ColumnTransfer.toDeviceAsync(host,
                pipeline.backend().deviceMemory(), synced()));
            pipeline.stream().synchronize();
          } catch (PoolExhaustedException e) {
            if (host.rowCount() <= 1) {
              throw MemoryPressure.oneRowDoesNotFit("for a GPU filter/projection's input", e);
            }
            halves.removeFirst();
            try (host) {
              pushHalves(host);
            }
            continue;
          }
          halves.removeFirst().close();
          try (device) {
            result = runOrSplit(device);
          }
        }
        if (result != null) {
          metrics.get(ExecMetrics.OUTPUT_ROWS).add(result.rowCount());
          metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
          return DeviceBatches.wrap(result, output);
        }
      }
    }

    private dev.tessera.gpu.GpuStream synced() {
      return pipeline.stream();
    }

    /**
     * The program's output for {@code view} (still owned by the caller), or null when it did
     * not fit: then the batch's halves wait in {@link #halves}.
     */
    private ColumnBatch<DeviceColumn> runOrSplit(ColumnBatch<DeviceColumn> view) {
      try {
        ColumnBatch<DeviceColumn> result =
            waiting(() -> pipeline.run(pipeline.last(), view));
        metrics.get(ExecMetrics.BYTES_READ).add(DeviceBatches.bytes(view));
        return result;
      } catch (PoolExhaustedException e) {
        if (view.rowCount() <= 1) {
          throw MemoryPressure.oneRowDoesNotFit("for a GPU filter/projection's output", e);
        }
        metrics.get(ExecMetrics.BATCH_SPLITS).add(1);
        MemoryPressure.warnOnce(LOG, warned, "Tessera: a GPU filter/projection ran out of memory"
            + " for the output of a batch of {} rows; it runs the batch in smaller parts, which is"
            + " slower (logged once per task; raise {} or lower {} to avoid it): {}",
            view.rowCount(), TesseraConf.DEVICE_CAP_BYTES.key(),
            TesseraConf.BATCH_SIZE_BYTES.key(), e.getMessage());
        try (ColumnBatch<HostColumn> host = waiting(() -> ColumnTransfer.toHost(view,
            pipeline.backend().stagingAllocator(), pipeline.stream()))) {
          pushHalves(host);
        }
        return null;
      }
    }

    /** Puts copies of the halves of {@code host} (owned by the caller) first in line. */
    private void pushHalves(ColumnBatch<HostColumn> host) {
      int half = host.rowCount() / 2;
      BufferAllocator staging = pipeline.backend().stagingAllocator();
      ColumnBatch<HostColumn> first = waiting(() -> MemoryPressure.slice(host, 0, half, staging));
      ColumnBatch<HostColumn> second;
      try {
        second = waiting(() -> MemoryPressure.slice(host, half, host.rowCount(), staging));
      } catch (RuntimeException e) {
        first.close();
        throw e;
      }
      halves.addFirst(second);
      halves.addFirst(first);
    }

    private <T> T waiting(Supplier<T> attempt) {
      return MemoryPressure.waitingForOthers(pipeline.backend(),
          metrics.get(ExecMetrics.MEMORY_WAITS), attempt);
    }
  }
}
