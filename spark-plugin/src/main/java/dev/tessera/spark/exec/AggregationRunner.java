package dev.tessera.spark.exec;

import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.errors.QueryExecutionErrors;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task of a GPU hash aggregation: every device batch goes through the fused
 * filter/project/aggregate update, and the groups come out once at the end.
 *
 * <p>A partial aggregation that runs out of device memory while its table grows emits the groups
 * it has (a "table flush"), starts a fresh aggregation and redoes the batch: the final
 * aggregation after the shuffle merges a key that comes out more than once. A final or complete
 * aggregation cannot do that (its groups are results), so there the error names the setting to
 * raise.
 */
final class AggregationRunner implements Iterator<ColumnarBatch>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AggregationRunner.class);

  private final Iterator<ColumnarBatch> input;
  private final Supplier<HashAggregateKernel.Aggregation> opener;
  private final Program program;
  private final boolean partial;
  private final List<Attribute> output;
  private final BiFunction<ColumnarBatch, RowErrorException, RuntimeException> replay;
  private final Map<String, SQLMetric> metrics;

  private HashAggregateKernel.Aggregation aggregation;
  /** No batch went into the current aggregation yet: a flush would not free anything. */
  private boolean fresh;
  /** The batch to redo after a flush (owned here until it is added). */
  private ColumnarBatch retry;
  private boolean finished;
  private boolean warned;

  /**
   * @param opener opens an aggregation (the caller's spec, pool and stream)
   * @param program the fused filter/project whose outputs are the aggregation's inputs
   * @param partial whether the groups are partial aggregates (Partial/PartialMerge modes)
   * @param output the attributes of the groups' columns
   * @param replay Spark's own error for a batch in which the program reported an ANSI error
   * @param metrics the node's metrics by {@link ExecMetrics} name
   */
  AggregationRunner(Iterator<ColumnarBatch> input,
      Supplier<HashAggregateKernel.Aggregation> opener, Program program, boolean partial,
      List<Attribute> output, BiFunction<ColumnarBatch, RowErrorException, RuntimeException> replay,
      Map<String, SQLMetric> metrics) {
    this.input = input;
    this.opener = opener;
    this.program = program;
    this.partial = partial;
    this.output = output;
    this.replay = replay;
    this.metrics = metrics;
  }

  @Override
  public boolean hasNext() {
    return !finished;
  }

  @Override
  public ColumnarBatch next() {
    if (finished) {
      throw new NoSuchElementException();
    }
    if (aggregation == null) {
      aggregation = opener.get();
      fresh = true;
    }
    while (retry != null || input.hasNext()) {
      ColumnarBatch batch = retry != null ? retry : input.next();
      retry = null;
      try {
        add(batch);
      } catch (PoolExhaustedException e) {
        if (!partial || fresh) {
          batch.close();
          throw outOfMemory(e);
        }
        retry = batch;
        flushed(e);
        return emit(false);
      } catch (RuntimeException e) {
        batch.close();
        throw e;
      }
      batch.close();
    }
    return emit(true);
  }

  private void add(ColumnarBatch batch) {
    ColumnBatch<DeviceColumn> view = DeviceBatches.view(batch);
    long started = System.nanoTime();
    try {
      aggregation.update(program, view);
    } catch (RowErrorException e) {
      throw replay.apply(batch, e);
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
    }
    fresh = false;
    metrics.get(ExecMetrics.BYTES_READ).add(bytes(view));
  }

  private ColumnarBatch emit(boolean last) {
    long started = System.nanoTime();
    ColumnBatch<DeviceColumn> groups;
    try {
      groups = aggregation.finish();
    } catch (RowErrorException e) {
      throw sparkError(e);
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
      aggregation.close();
      aggregation = null;
    }
    finished = last;
    metrics.get(ExecMetrics.OUTPUT_ROWS).add(groups.rowCount());
    metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
    return DeviceBatches.wrap(groups, output);
  }

  private void flushed(PoolExhaustedException e) {
    metrics.get(ExecMetrics.TABLE_FLUSHES).add(1);
    if (!warned) {
      warned = true;
      LOG.warn("Tessera: a partial GPU hash aggregation ran out of device memory; it emits its"
          + " groups and starts again, so the final aggregation merges more rows (logged once per"
          + " task; raise {} to avoid it): {}", TesseraConf.DEVICE_CAP_BYTES.key(), e.getMessage());
    }
  }

  private static PoolExhaustedException outOfMemory(PoolExhaustedException e) {
    return new PoolExhaustedException("The GPU hash aggregation ran out of device memory for its"
        + " groups, and it cannot emit them early (only a partial aggregation can). Raise "
        + TesseraConf.DEVICE_CAP_BYTES.key() + ", use smaller batches ("
        + TesseraConf.BATCH_SIZE_BYTES.key() + "), or run it on the CPU with "
        + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
  }

  /** Spark's error for an overflowing sum, as Spark's own Sum raises it under ANSI. */
  private static RuntimeException sparkError(RowErrorException e) {
    if (e.error() == RowError.ARITHMETIC_OVERFLOW) {
      return (RuntimeException) QueryExecutionErrors.arithmeticOverflowError("long overflow",
          "try_sum", null);
    }
    return e;
  }

  private static long bytes(ColumnBatch<DeviceColumn> batch) {
    long total = 0;
    for (DeviceColumn c : batch.columns()) {
      total += c.dataBytes() + (c.validity() == null ? 0 : c.validity().size())
          + (c.offsets() == null ? 0 : c.offsets().size());
    }
    return total;
  }

  @Override
  public void close() {
    if (retry != null) {
      retry.close();
      retry = null;
    }
    if (aggregation != null) {
      aggregation.close();
      aggregation = null;
    }
  }
}
