package dev.tessera.spark.exec;

import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
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
 * <p>When device memory runs out while the table grows (after at least one batch went in), the
 * groups it has are emitted early (a "table flush"), a fresh aggregation starts and the batch is
 * redone. A partial aggregation emits them as an output batch: the final aggregation after the
 * shuffle merges a key that comes out more than once. A final or complete aggregation's groups are
 * results, so it hands them to a {@link CpuGroupMerge}, which merges every flush and the last
 * table on the CPU and gives the task's one output batch. When its functions cannot be merged
 * (see {@link dev.tessera.gpu.agg.MergeSpec#whyNot}) the error names the setting to raise.
 */
final class AggregationRunner implements Iterator<ColumnarBatch>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AggregationRunner.class);

  /**
   * What happens to each batch of groups before it is emitted, and to a sum that overflowed as a
   * whole: {@link OrderChecks} for aggregations with order-dependent sums.
   */
  interface GroupsCheck {
    /** No order-dependent sums: the groups as they are; an overflow is Spark's sum error. */
    GroupsCheck NONE = new GroupsCheck() {
      @Override
      public ColumnBatch<DeviceColumn> check(ColumnBatch<DeviceColumn> groups, long rowsRead) {
        return groups;
      }

      @Override
      public RuntimeException overflow(RowErrorException e) {
        // Spark's Sum adds with Add, whose overflow error suggests try_add.
        return (RuntimeException) QueryExecutionErrors.arithmeticOverflowError("long overflow",
            "try_add", null);
      }
    };

    /** The groups to emit (taking ownership of {@code groups}). */
    ColumnBatch<DeviceColumn> check(ColumnBatch<DeviceColumn> groups, long rowsRead);

    /** Spark's error for a task whose GPU sum overflowed. */
    RuntimeException overflow(RowErrorException e);
  }

  private final Iterator<ColumnarBatch> input;
  private final Supplier<HashAggregateKernel.Aggregation> opener;
  private final Program program;
  private final List<JoinTable> tables;
  private final boolean partial;
  private final List<Attribute> output;
  private final BiFunction<ColumnarBatch, RowErrorException, RuntimeException> replay;
  private final Map<String, SQLMetric> metrics;
  /** Where a final aggregation's flushes go; null for a partial aggregation. */
  private final CpuGroupMerge cpuMerge;
  private final GroupsCheck groupsCheck;

  private HashAggregateKernel.Aggregation aggregation;
  /** No batch went into the current aggregation yet: a flush would not free anything. */
  private boolean fresh;
  /** The batch to redo after a flush (owned here until it is added). */
  private ColumnarBatch retry;
  private boolean finished;
  private boolean warned;
  /** The rows the aggregation has read in this task (a bound on any group's values). */
  private long rowsRead;

  /**
   * @param opener opens an aggregation (the caller's spec, pool and stream)
   * @param program the fused filter/project whose outputs are the aggregation's inputs
   * @param tables the join tables the program probes, in its order
   * @param partial whether the groups are partial aggregates (Partial/PartialMerge modes)
   * @param output the attributes of the groups' columns
   * @param replay Spark's own error for a batch in which the program reported an ANSI error
   * @param metrics the node's metrics by {@link ExecMetrics} name
   * @param cpuMerge for a final or complete aggregation, where its flushed groups are merged
   *     (owned by the runner from here on); null for a partial one
   * @param groupsCheck what happens to the groups before they are emitted
   */
  AggregationRunner(Iterator<ColumnarBatch> input,
      Supplier<HashAggregateKernel.Aggregation> opener, Program program, List<JoinTable> tables,
      boolean partial,
      List<Attribute> output, BiFunction<ColumnarBatch, RowErrorException, RuntimeException> replay,
      Map<String, SQLMetric> metrics, CpuGroupMerge cpuMerge, GroupsCheck groupsCheck) {
    if (partial != (cpuMerge == null)) {
      throw new IllegalArgumentException("a CPU merge is for final aggregations only, and they"
          + " need one");
    }
    this.input = input;
    this.opener = opener;
    this.program = program;
    this.tables = List.copyOf(tables);
    this.partial = partial;
    this.output = output;
    this.replay = replay;
    this.metrics = metrics;
    this.cpuMerge = cpuMerge;
    this.groupsCheck = groupsCheck;
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
        if (fresh || (!partial && cpuMerge.whyNot().isPresent())) {
          batch.close();
          throw outOfMemory(e);
        }
        retry = batch;
        flushed(e);
        if (partial) {
          return emit(false);
        }
        flushToCpu();
        aggregation = opener.get();
        fresh = true;
        continue;
      } catch (RuntimeException e) {
        batch.close();
        throw e;
      }
      batch.close();
    }
    if (cpuMerge != null && cpuMerge.started()) {
      flushToCpu();
      return emitMerged();
    }
    return emit(true);
  }

  private void add(ColumnarBatch batch) {
    ColumnBatch<DeviceColumn> view = DeviceBatches.view(batch);
    long started = System.nanoTime();
    try {
      aggregation.update(program, tables, view);
    } catch (RowErrorException e) {
      throw replay.apply(batch, e);
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
    }
    fresh = false;
    rowsRead += view.rowCount();
    metrics.get(ExecMetrics.BYTES_READ).add(DeviceBatches.bytes(view));
  }

  private ColumnarBatch emit(boolean last) {
    ColumnBatch<DeviceColumn> groups = groupsCheck.check(finishAggregation(), rowsRead);
    finished = last;
    return wrap(groups);
  }

  /** The current aggregation's groups; the aggregation is closed (its table freed) after. */
  private ColumnBatch<DeviceColumn> finishAggregation() {
    long started = System.nanoTime();
    try {
      return aggregation.finish();
    } catch (RowErrorException e) {
      throw sparkError(e);
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
      aggregation.close();
      aggregation = null;
    }
  }

  /**
   * Moves the groups of a final aggregation off the device into the CPU merge; the aggregation is
   * closed after.
   */
  private void flushToCpu() {
    try (ColumnBatch<DeviceColumn> groups = finishAggregation()) {
      cpuMerge.add(groups);
    } catch (PoolExhaustedException e) {
      // Emitting the groups needs device memory for them, and copying them staging memory.
      throw new PoolExhaustedException("The final GPU hash aggregation ran out of memory while"
          + " moving its groups to the CPU merge (it does that when device memory runs out)."
          + " Raise " + TesseraConf.DEVICE_CAP_BYTES.key() + " or "
          + TesseraConf.PINNED_CAP_BYTES.key() + ", use smaller batches ("
          + TesseraConf.BATCH_SIZE_BYTES.key() + "), or run it on the CPU with "
          + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
    }
  }

  /** The CPU merge's groups, back on the device, as the task's one output batch. */
  private ColumnarBatch emitMerged() {
    metrics.get(ExecMetrics.CPU_MERGED_ROWS).add(cpuMerge.rowsAdded());
    ColumnBatch<DeviceColumn> merged;
    try {
      merged = cpuMerge.finish();
    } catch (RowErrorException e) {
      throw sparkError(e);
    }
    finished = true;
    return wrap(groupsCheck.check(merged, rowsRead));
  }

  private ColumnarBatch wrap(ColumnBatch<DeviceColumn> groups) {
    metrics.get(ExecMetrics.OUTPUT_ROWS).add(groups.rowCount());
    metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
    return DeviceBatches.wrap(groups, output);
  }

  private void flushed(PoolExhaustedException e) {
    metrics.get(ExecMetrics.TABLE_FLUSHES).add(1);
    if (warned) {
      return;
    }
    warned = true;
    if (!partial) {
      LOG.warn("Tessera: a final GPU hash aggregation ran out of device memory; it merges its"
          + " groups on the CPU, which is slower (logged once per task; raise {} to avoid it): {}",
          TesseraConf.DEVICE_CAP_BYTES.key(), e.getMessage());
    } else {
      LOG.warn("Tessera: a partial GPU hash aggregation ran out of device memory; it emits its"
          + " groups and starts again, so the final aggregation merges more rows (logged once per"
          + " task; raise {} to avoid it): {}", TesseraConf.DEVICE_CAP_BYTES.key(), e.getMessage());
    }
  }

  private PoolExhaustedException outOfMemory(PoolExhaustedException e) {
    String why = fresh ? "even for one batch in an empty table"
        : "and it cannot emit them early: " + cpuMerge.whyNot().orElseThrow();
    return new PoolExhaustedException("The GPU hash aggregation ran out of device memory for its"
        + " groups, " + why + ". Raise "
        + TesseraConf.DEVICE_CAP_BYTES.key() + ", use smaller batches ("
        + TesseraConf.BATCH_SIZE_BYTES.key() + "), or run it on the CPU with "
        + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
  }

  /** Spark's error for an overflowing sum: Spark's own, from its additions in its order. */
  private RuntimeException sparkError(RowErrorException e) {
    return e.error() == RowError.ARITHMETIC_OVERFLOW ? groupsCheck.overflow(e) : e;
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
    if (cpuMerge != null) {
      cpuMerge.close();
    }
  }
}
