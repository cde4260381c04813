package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.errors.QueryExecutionErrors;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.vectorized.ColumnVector;
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
  /** The program and its tables: asked for at the first batch (the tables may be under way). */
  private final Supplier<Program> program;
  private final Supplier<List<JoinTable>> tables;
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
  /** The backend whose pools a task waits on when memory runs out; null: no waiting (tests). */
  private final Backend backend;
  /** The current aggregation's groups are being emitted in parts: the next part's first group. */
  private long partFrom = -1;
  /** How many groups a part gets (halved while a part does not fit). */
  private int partRows;
  /** Whether the groups being emitted in parts are the task's last. */
  private boolean partsAreLast;
  private final boolean[] warnedParts = new boolean[1];
  /** Halves of a batch that did not fit in an empty table, on the host, to add first. */
  private final Deque<ColumnBatch<HostColumn>> halves = new ArrayDeque<>();
  private DataType[] halfTypes;
  /** The runner's own stream for moving halves (opened when first needed). */
  private GpuStream stream;

  /**
   * @param opener opens an aggregation (the caller's spec, pool and stream)
   * @param program the fused filter/project whose outputs are the aggregation's inputs (asked
   *     for at the first batch: a task's join tables may still be under way before it)
   * @param tables the join tables the program probes, in its order (asked for likewise)
   * @param partial whether the groups are partial aggregates (Partial/PartialMerge modes)
   * @param output the attributes of the groups' columns
   * @param replay Spark's own error for a batch in which the program reported an ANSI error
   * @param metrics the node's metrics by {@link ExecMetrics} name
   * @param cpuMerge for a final or complete aggregation, where its flushed groups are merged
   *     (owned by the runner from here on); null for a partial one
   * @param backend the backend whose pools the task waits on for other tasks to free memory
   *     (null: it does not wait)
   * @param groupsCheck what happens to the groups before they are emitted
   */
  AggregationRunner(Iterator<ColumnarBatch> input,
      Supplier<HashAggregateKernel.Aggregation> opener, Supplier<Program> program,
      Supplier<List<JoinTable>> tables, boolean partial,
      List<Attribute> output, BiFunction<ColumnarBatch, RowErrorException, RuntimeException> replay,
      Map<String, SQLMetric> metrics, CpuGroupMerge cpuMerge, Backend backend,
      GroupsCheck groupsCheck) {
    this.backend = backend;
    if (partial != (cpuMerge == null)) {
      throw new IllegalArgumentException("a CPU merge is for final aggregations only, and they"
          + " need one");
    }
    this.input = input;
    this.opener = opener;
    this.program = program;
    this.tables = tables;
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
    if (partFrom >= 0) {
      return emit(partsAreLast); // the next part of groups that did not fit at once
    }
    if (cpuMerge != null && cpuMerge.hasMoreParts()) {
      return emitMerged(); // the next part of the CPU merge's groups
    }
    if (aggregation == null) {
      aggregation = opener.get();
      fresh = true;
    }
    while (retry != null || !halves.isEmpty() || input.hasNext()) {
      ColumnarBatch batch = retry != null ? retry : !halves.isEmpty() ? nextHalf() : input.next();
      retry = null;
      if (batch == null) {
        continue; // a half that did not fit was split again
      }
      try {
        add(batch);
      } catch (PoolExhaustedException e) {
        if (fresh && backend != null && batch.numRows() > 1) {
          splitInHalves(batch, e); // closes the batch
          continue;
        }
        if (fresh || (!partial && cpuMerge.whyNot().isPresent())) {
          batch.close();
          throw outOfMemory(e);
        }
        if (backend != null) {
          stash(batch); // off the device while the groups come out
        } else {
          retry = batch;
        }
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

  /**
   * A batch that does not fit even in an empty table (DESIGN.md §2): it goes to host staging
   * memory, its device copy is freed, and its halves come back one at a time (split again while
   * they do not fit, down to one row).
   */
  private void splitInHalves(ColumnarBatch batch, PoolExhaustedException e) {
    try (batch) {
      halfTypes = new DataType[batch.numCols()];
      for (int i = 0; i < halfTypes.length; i++) {
        halfTypes[i] = batch.column(i).dataType();
      }
      metrics.get(ExecMetrics.BATCH_SPLITS).add(1);
      MemoryPressure.warnOnce(LOG, warnedParts, "Tessera: a GPU hash aggregation ran out of"
          + " device memory for a batch of {} rows even in an empty table; it adds the batch in"
          + " smaller parts, which is slower (logged once per task; raise {} or lower {} to"
          + " avoid it): {}", batch.numRows(), TesseraConf.DEVICE_CAP_BYTES.key(),
          TesseraConf.BATCH_SIZE_BYTES.key(), e.getMessage());
      try (ColumnBatch<HostColumn> host = waiting(() -> ColumnTransfer.toHost(
          DeviceBatches.view(batch), backend.stagingAllocator(), stream()))) {
        pushHalves(host);
      }
    }
  }

  /** Moves a batch to redo (closing it) to host staging memory, first in line. */
  private void stash(ColumnarBatch batch) {
    try (batch) {
      halfTypes = new DataType[batch.numCols()];
      for (int i = 0; i < halfTypes.length; i++) {
        halfTypes[i] = batch.column(i).dataType();
      }
      halves.addFirst(waiting(() -> ColumnTransfer.toHost(DeviceBatches.view(batch),
          backend.stagingAllocator(), stream())));
    }
  }

  private void pushHalves(ColumnBatch<HostColumn> host) {
    int half = host.rowCount() / 2;
    ColumnBatch<HostColumn> first = waiting(() -> MemoryPressure.slice(host, 0, half,
        backend.stagingAllocator()));
    ColumnBatch<HostColumn> second;
    try {
      second = waiting(() -> MemoryPressure.slice(host, half, host.rowCount(),
          backend.stagingAllocator()));
    } catch (RuntimeException e) {
      first.close();
      throw e;
    }
    halves.addFirst(second);
    halves.addFirst(first);
  }

  /** The first waiting half on the device, or null when it did not fit and was split again. */
  private ColumnarBatch nextHalf() {
    ColumnBatch<HostColumn> host = halves.peekFirst();
    ColumnBatch<DeviceColumn> device;
    try {
      device = waiting(() -> {
        ColumnBatch<DeviceColumn> d = ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(),
            stream());
        try {
          stream().synchronize();
        } catch (RuntimeException e) {
          d.close();
          throw e;
        }
        return d;
      });
    } catch (PoolExhaustedException e) {
      if (host.rowCount() <= 1) {
        throw MemoryPressure.oneRowDoesNotFit("for a GPU hash aggregation's input", e);
      }
      halves.removeFirst();
      try (host) {
        pushHalves(host);
      }
      return null;
    }
    halves.removeFirst().close();
    ColumnVector[] vectors = new ColumnVector[device.columns().size()];
    for (int i = 0; i < vectors.length; i++) {
      vectors[i] = new DeviceColumnVector(halfTypes[i], device.column(i));
    }
    return new ColumnarBatch(vectors, device.rowCount());
  }

  private GpuStream stream() {
    if (stream == null) {
      stream = backend.newStream();
    }
    return stream;
  }

  private void add(ColumnarBatch batch) {
    ColumnBatch<DeviceColumn> view = DeviceBatches.view(batch);
    long started = System.nanoTime();
    try {
      aggregation.update(program.get(), tables.get(), view);
    } catch (RowErrorException e) {
      throw replay.apply(batch, e);
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
      metrics.get(ExecMetrics.CODEGEN_TIME).add(aggregation.lastCompileNanos());
    }
    fresh = false;
    rowsRead += view.rowCount();
    metrics.get(ExecMetrics.BYTES_READ).add(DeviceBatches.bytes(view));
  }

  private ColumnarBatch emit(boolean last) {
    partsAreLast = last;
    ColumnBatch<DeviceColumn> groups = groupsCheck.check(finishAggregation(), rowsRead);
    finished = last && partFrom < 0;
    return wrap(groups);
  }

  /**
   * The current aggregation's groups, or the next part of them when they do not fit in device
   * memory at once (DESIGN.md §2): the whole table is tried first (waiting for other tasks to
   * free memory), then parts of half the groups, halved again while a part does not fit, down
   * to one group. The aggregation is closed after its last part; {@link #partFrom} is -1 then.
   */
  private ColumnBatch<DeviceColumn> finishGroups() {
    if (partFrom < 0) {
      try {
        return waiting(aggregation::finish);
      } catch (PoolExhaustedException e) {
        long groups = aggregation.groupCount();
        if (!aggregation.canFinishInParts() || groups <= 1) {
          throw finishOutOfMemory(e);
        }
        partFrom = 0;
        partRows = (int) Math.min(Integer.MAX_VALUE, (groups + 1) / 2);
        emittedInParts(e);
      }
    }
    while (true) {
      long groups = aggregation.groupCount();
      int n = (int) Math.min(partRows, groups - partFrom);
      try {
        long from = partFrom;
        ColumnBatch<DeviceColumn> part = waiting(() -> aggregation.finish(from, n));
        partFrom += n;
        if (partFrom >= groups) {
          partFrom = -1;
        }
        return part;
      } catch (PoolExhaustedException e) {
        if (n <= 1) {
          partFrom = -1;
          throw MemoryPressure.oneRowDoesNotFit("for the output of a GPU hash aggregation", e);
        }
        partRows = Math.max(1, n / 2);
        metrics.get(ExecMetrics.BATCH_SPLITS).add(1);
      }
    }
  }

  private <T> T waiting(Supplier<T> attempt) {
    return backend == null ? attempt.get()
        : MemoryPressure.waitingForOthers(backend, metrics.get(ExecMetrics.MEMORY_WAITS), attempt);
  }

  private void emittedInParts(PoolExhaustedException e) {
    metrics.get(ExecMetrics.BATCH_SPLITS).add(1);
    MemoryPressure.warnOnce(LOG, warnedParts, "Tessera: the {} GPU hash aggregation's groups do"
        + " not fit in device memory at once; it emits them in parts, which is slower (logged"
        + " once per task; raise {} to avoid it): {}", partial ? "partial" : "final",
        TesseraConf.DEVICE_CAP_BYTES.key(), e.getMessage());
  }

  private PoolExhaustedException finishOutOfMemory(PoolExhaustedException e) {
    return new PoolExhaustedException("The GPU hash aggregation ran out of device memory while"
        + " emitting its groups, and this backend cannot emit them in parts. Raise "
        + TesseraConf.DEVICE_CAP_BYTES.key() + ", or run it on the CPU with "
        + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
  }

  /**
   * The current aggregation's groups (or the next part of them: see {@link #finishGroups}); the
   * aggregation is closed (its table freed) after its last part, or a failure.
   */
  private ColumnBatch<DeviceColumn> finishAggregation() {
    long started = System.nanoTime();
    boolean done = false;
    try {
      ColumnBatch<DeviceColumn> groups = finishGroups();
      done = partFrom < 0;
      return groups;
    } catch (RowErrorException e) {
      done = true;
      partFrom = -1;
      throw sparkError(e);
    } catch (RuntimeException | Error e) {
      done = true;
      partFrom = -1;
      throw e;
    } finally {
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
      if (done) {
        aggregation.close();
        aggregation = null;
      }
    }
  }

  /**
   * Moves the groups of a final aggregation off the device into the CPU merge; the aggregation is
   * closed after.
   */
  private void flushToCpu() {
    try {
      do {
        try (ColumnBatch<DeviceColumn> groups = finishAggregation()) {
          cpuMerge.add(groups);
        }
      } while (partFrom >= 0);
    } catch (PoolExhaustedException e) {
      // Emitting the groups needs device memory for them.
      throw new PoolExhaustedException("The final GPU hash aggregation ran out of memory while"
          + " moving its groups to the CPU merge (it does that when device memory runs out)."
          + " Raise " + TesseraConf.DEVICE_CAP_BYTES.key() + ", use smaller batches ("
          + TesseraConf.BATCH_SIZE_BYTES.key() + "), or run it on the CPU with "
          + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
    }
  }

  /** The CPU merge's groups, back on the device, as the task's one output batch. */
  private ColumnarBatch emitMerged() {
    if (!cpuMerge.hasMoreParts()) {
      metrics.get(ExecMetrics.CPU_MERGED_ROWS).add(cpuMerge.rowsAdded());
    }
    ColumnBatch<DeviceColumn> merged;
    int splitsBefore = cpuMerge.splits();
    try {
      // A later part may find the pool taken by another task after this one's first part went
      // out, when the Spark plan can no longer take over: wait for that task before failing.
      merged = waiting(cpuMerge::finish);
    } catch (RowErrorException e) {
      throw sparkError(e);
    }
    metrics.get(ExecMetrics.BATCH_SPLITS).add(cpuMerge.splits() - splitsBefore);
    finished = !cpuMerge.hasMoreParts();
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
    halves.forEach(ColumnBatch::close);
    halves.clear();
    if (stream != null) {
      stream.close();
      stream = null;
    }
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
