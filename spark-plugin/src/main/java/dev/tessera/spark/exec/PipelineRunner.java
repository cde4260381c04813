package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Consumer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task's run of a {@link Pipeline}: it picks the fused program when no table that an inner
 * or outer join probes has a repeated key, the staged form otherwise, and runs every stage but
 * the last, whose batches the node itself consumes (projecting them, or aggregating them).
 */
final class PipelineRunner {
  private final Pipeline pipeline;
  private final Pipeline.Stage fused;
  /** The join tables, acquired on another thread while the task reads its first batch. */
  private final TaskJoinTables.Pending pendingTables;
  private TaskJoinTables tables;
  /** The stages this task runs (picked once the tables are known), or null before. */
  private List<Pipeline.Stage> stages;
  private final Backend backend;
  private final GpuStream stream;
  private final Map<String, SQLMetric> metrics;
  private final ProgramKernel kernel;

  /**
   * The current task's runner: a stream of its own and the join tables (their acquisition
   * started here), closed when the task ends (after what the caller registers later, as Spark
   * runs completion listeners in reverse).
   */
  static PipelineRunner forTask(Pipeline pipeline, List<TaskJoinTables.Source> sources,
      List<JoinProbe> probes, Map<String, SQLMetric> metrics) {
    Backend backend = TesseraRuntime.backend();
    if (!sources.isEmpty()) {
      // The join tables take device memory before the first batch comes.
      GpuAdmission.admitCurrentTask(metrics.get(ExecMetrics.GPU_WAIT_TIME));
    }
    GpuStream stream = backend.newStream();
    TaskJoinTables.Pending tables;
    try {
      tables = TaskJoinTables.acquireInBackground(sources, probes, backend);
    } catch (RuntimeException e) {
      stream.close();
      throw e;
    }
    TaskResources.closeAtTaskEnd(() -> {
      try (stream) {
        tables.close();
      }
    });
    return new PipelineRunner(pipeline, tables, backend, stream, metrics);
  }

  private PipelineRunner(Pipeline pipeline, TaskJoinTables.Pending tables, Backend backend,
      GpuStream stream, Map<String, SQLMetric> metrics) {
    this.pipeline = pipeline;
    this.fused = pipeline.fused();
    this.pendingTables = tables;
    this.backend = backend;
    this.stream = stream;
    this.metrics = metrics;
    this.kernel = backend.programKernel();
  }

  /** The join tables, waiting for their acquisition if it is still under way. */
  private TaskJoinTables tables() {
    if (tables == null) {
      tables = pendingTables.get(metrics.get(ExecMetrics.JOIN_TABLES_TIME),
          metrics.get(ExecMetrics.JOIN_TABLES_WAIT_TIME));
    }
    return tables;
  }

  /** The fused program when no table that a join expands by has a repeated key, else staged. */
  private List<Pipeline.Stage> stages() {
    if (stages == null) {
      stages = tables().anyRepeatedKeys(pipeline.expandingTables()) ? pipeline.staged()
          : List.of(fused);
    }
    return stages;
  }

  Backend backend() {
    return backend;
  }

  GpuStream stream() {
    return stream;
  }

  /** The stage the node runs itself. */
  Pipeline.Stage last() {
    List<Pipeline.Stage> all = stages();
    return all.get(all.size() - 1);
  }

  /** The join tables the last stage's program probes, in its order. */
  List<JoinTable> lastTables() {
    return tables().select(last().tables());
  }

  /**
   * The batches the last stage reads: the input's own (closed by whoever reads them) when the
   * pipeline is one stage, else their expansions through the stages before it. Which of the two
   * is decided after the input's first hasNext (which reads and uploads its first batch), so that
   * the join tables are built meanwhile; an empty input does not wait for them.
   */
  Iterator<ColumnarBatch> lastStageInput(Iterator<ColumnarBatch> input) {
    return new Iterator<>() {
      private Iterator<ColumnarBatch> chosen;

      private Iterator<ColumnarBatch> chosen() {
        if (chosen == null) {
          chosen = !input.hasNext() || stages().size() == 1 ? input : new Expansions(input);
        }
        return chosen;
      }

      @Override
      public boolean hasNext() {
        return chosen().hasNext();
      }

      @Override
      public ColumnarBatch next() {
        return chosen().next();
      }
    };
  }

  /** Runs one stage's program over a batch (still owned by the caller). */
  ColumnBatch<DeviceColumn> run(Pipeline.Stage stage, ColumnBatch<DeviceColumn> batch) {
    ColumnBatch<DeviceColumn> result;
    try {
      result = kernel.run(stage.program(), tables().select(stage.tables()), batch,
          backend.deviceMemory(), stream);
    } catch (RowErrorException e) {
      throw replay(stage, batch, e);
    }
    metrics.get(ExecMetrics.KERNEL_TIME).add(kernel.lastKernelNanos());
    metrics.get(ExecMetrics.CODEGEN_TIME).add(kernel.lastCompileNanos());
    return result;
  }

  /** Spark's own error for a batch of {@code stage} in which the GPU found one. */
  RuntimeException replay(Pipeline.Stage stage, ColumnBatch<DeviceColumn> batch,
      RowErrorException error) {
    return SparkReplay.raiseForDeviceBatch(batch, stage.input(), stage.steps(),
        tables().relations(), error, backend, stream);
  }

  /**
   * Evaluates the whole pipeline over one of the node's input batches (still owned by the caller)
   * with Spark's own expressions and relations, in Spark's order, handing each output row to
   * {@code sink}.
   */
  void forEachSparkRow(ColumnarBatch batch, Consumer<InternalRow> sink) {
    SparkReplay.forEachRow(DeviceBatches.view(batch), fused.input(), fused.steps(),
        tables().relations(), backend, stream, sink);
  }

  /** The expansions of each input batch through the stages before the last. */
  private final class Expansions implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final Deque<ColumnBatch<DeviceColumn>> ready = new ArrayDeque<>();

    Expansions(Iterator<ColumnarBatch> input) {
      this.input = input;
      TaskResources.closeAtTaskEnd(() -> ready.forEach(ColumnBatch::close));
    }

    @Override
    public boolean hasNext() {
      while (ready.isEmpty() && input.hasNext()) {
        try (ColumnarBatch in = input.next()) {
          feed(DeviceBatches.view(in), 0);
        }
      }
      return !ready.isEmpty();
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return DeviceBatches.wrap(ready.removeFirst(), last().input());
    }

    /** Runs stage {@code s} (which expands) over a batch the caller owns. */
    private void feed(ColumnBatch<DeviceColumn> batch, int s) {
      Pipeline.Stage stage = stages().get(s);
      List<ColumnBatch<DeviceColumn>> expanded;
      try (ColumnBatch<DeviceColumn> keyed = run(stage, batch)) {
        expanded = backend.hashJoinKernel().expand(tables().table(stage.expandTable()), keyed,
            stage.keyColumns(), stage.leftOuter(), stage.maxRowsPerBatch(),
            backend.deviceMemory(), stream);
      }
      boolean nextIsLast = s + 1 == stages().size() - 1;
      int handed = 0;
      try {
        for (ColumnBatch<DeviceColumn> e : expanded) {
          handed++;
          if (nextIsLast) {
            ready.addLast(e);
          } else {
            try (e) {
              feed(e, s + 1);
            }
          }
        }
      } finally {
        expanded.subList(handed, expanded.size()).forEach(ColumnBatch::close);
      }
    }
  }
}
