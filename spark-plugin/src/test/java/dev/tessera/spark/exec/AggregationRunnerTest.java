package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The table flush of a partial aggregation when device memory runs out. The host reference keeps
 * its groups in Java memory, so the exhaustion is injected: an aggregation whose update throws
 * PoolExhaustedException (leaving its groups untouched, as the contract says) on chosen calls.
 */
class AggregationRunnerTest {
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.LONG);
  /** count(*) and sum(value) grouped by key. */
  private static final AggregateSpec SPEC = new AggregateSpec(TYPES, 1, List.of(
      new AggregateFunction(AggregateFunction.Kind.COUNT_ROWS, -1, ColumnType.LONG),
      new AggregateFunction(AggregateFunction.Kind.SUM, 1, ColumnType.LONG)), false);
  private static final Program PROGRAM = ProgramBuilder.identity(TYPES, false);

  private Backend backend;
  private GpuStream stream;
  private final Map<String, SQLMetric> metrics = new TreeMap<>();
  private int updates;
  /** Device buffers a test took to fill the pool; closed after it. */
  private final List<DeviceBuffer> hog = new ArrayList<>();
  /** The runner's input; what a failed runner did not take is closed after the test. */
  private Iterator<ColumnarBatch> input;

  @BeforeEach
  void open() {
    backend = Backends.open(BackendKind.HOST_REFERENCE,
        RuntimeOptions.defaults().withDeviceMemoryCap(64L << 20));
    stream = backend.newStream();
    for (String name : List.of(ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME, ExecMetrics.CODEGEN_TIME, ExecMetrics.BYTES_READ,
        ExecMetrics.TABLE_FLUSHES, ExecMetrics.CPU_MERGED_ROWS, ExecMetrics.BATCH_SPLITS,
        ExecMetrics.MEMORY_WAITS)) {
      metrics.put(name, new SQLMetric("sum", 0L));
    }
  }

  @AfterEach
  void close() {
    input.forEachRemaining(ColumnarBatch::close);
    hog.forEach(DeviceBuffer::close);
    stream.close();
    assertEquals(0, backend.deviceMemory().bytesInUse(), "device memory leaked");
    assertEquals(0, backend.stagingAllocator().getAllocatedMemory(), "staging memory leaked");
    backend.close();
  }

  /** Batches of rows (i % 10, i) for i from 0 to 4 * 1000. */
  private Iterator<ColumnarBatch> batches() {
    List<ColumnarBatch> out = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      try (HostColumnBuilder keys = new HostColumnBuilder(ColumnType.LONG, 1000,
              backend.stagingAllocator());
          HostColumnBuilder values = new HostColumnBuilder(ColumnType.LONG, 1000,
              backend.stagingAllocator())) {
        for (int i = b * 1000; i < (b + 1) * 1000; i++) {
          keys.appendLong(i % 10);
          values.appendLong(i);
        }
        try (ColumnBatch<HostColumn> host =
            new ColumnBatch<>(List.of(keys.build(), values.build()), 1000)) {
          out.add(DeviceBatches.wrap(ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(),
              stream), output()));
        }
      }
    }
    return out.iterator();
  }

  private static List<Attribute> output() {
    List<Attribute> out = new ArrayList<>();
    for (String name : List.of("key", "count", "sum")) {
      out.add(new AttributeReference(name, LongType$.MODULE$, true, Metadata.empty(),
          NamedExpression$.MODULE$.newExprId(), scala.collection.immutable.List$.MODULE$.empty()));
    }
    return out;
  }

  /** Aggregations of the host backend whose update calls number {@code failing} run out. */
  private Supplier<HashAggregateKernel.Aggregation> failingOn(int... failing) {
    return failingOn(SPEC, failing);
  }

  private Supplier<HashAggregateKernel.Aggregation> failingOn(AggregateSpec spec,
      int... failing) {
    return () -> new Delegating(backend.hashAggregateKernel().open(spec, backend.deviceMemory(),
        stream)) {
      @Override
      public void update(Program program, java.util.List<JoinTable> tables,
          ColumnBatch<DeviceColumn> input) {
        int call = ++updates;
        for (int f : failing) {
          if (f == call) {
            throw new PoolExhaustedException("injected: device memory is exhausted");
          }
        }
        super.update(program, tables, input);
      }
    };
  }

  /** An aggregation that does what {@code real} does; tests override what they inject. */
  private static class Delegating implements HashAggregateKernel.Aggregation {
    final HashAggregateKernel.Aggregation real;

    Delegating(HashAggregateKernel.Aggregation real) {
      this.real = real;
    }

    @Override
    public void update(ColumnBatch<DeviceColumn> batch) {
      real.update(batch);
    }

    @Override
    public void update(Program program, java.util.List<JoinTable> tables,
        ColumnBatch<DeviceColumn> input) {
      real.update(program, tables, input);
    }

    @Override
    public ColumnBatch<DeviceColumn> finish() {
      return real.finish();
    }

    @Override
    public boolean canFinishInParts() {
      return real.canFinishInParts();
    }

    @Override
    public long groupCount() {
      return real.groupCount();
    }

    @Override
    public ColumnBatch<DeviceColumn> finish(long from, int count) {
      return real.finish(from, count);
    }

    @Override
    public void close() {
      real.close();
    }
  }

  private AggregationRunner runner(boolean partial, Supplier<HashAggregateKernel.Aggregation> a) {
    input = batches();
    return new AggregationRunner(input, a, () -> PROGRAM, List::of, partial, output(), (b, e) -> e, metrics,
        partial ? null : new CpuGroupMerge(SPEC, backend, stream), null,
        AggregationRunner.GroupsCheck.NONE);
  }

  /** Every emitted group row, merged by key as the final aggregation would: key -> count, sum. */
  private Map<Long, long[]> drain(AggregationRunner runner, List<Integer> batchRows) {
    Map<Long, long[]> merged = new TreeMap<>();
    while (runner.hasNext()) {
      try (ColumnarBatch batch = runner.next();
          ColumnBatch<HostColumn> host = ColumnTransfer.toHost(DeviceBatches.view(batch),
              backend.stagingAllocator(), stream)) {
        batchRows.add(host.rowCount());
        for (int r = 0; r < host.rowCount(); r++) {
          long key = HostColumnVector.view(LongType$.MODULE$, host.column(0)).getLong(r);
          long[] m = merged.computeIfAbsent(key, k -> new long[2]);
          m[0] += HostColumnVector.view(LongType$.MODULE$, host.column(1)).getLong(r);
          m[1] += HostColumnVector.view(LongType$.MODULE$, host.column(2)).getLong(r);
        }
      }
    }
    return merged;
  }

  private static Map<Long, long[]> expected() {
    Map<Long, long[]> want = new TreeMap<>();
    for (long i = 0; i < 4000; i++) {
      long[] m = want.computeIfAbsent(i % 10, k -> new long[2]);
      m[0]++;
      m[1] += i;
    }
    return want;
  }

  private static void assertSameGroups(Map<Long, long[]> want, Map<Long, long[]> got) {
    assertEquals(want.keySet(), got.keySet());
    want.forEach((k, v) -> assertEquals(List.of(v[0], v[1]), List.of(got.get(k)[0],
        got.get(k)[1]), "key " + k));
  }

  @Test
  void aPartialAggregationFlushesItsGroupsAndRedoesTheBatch() {
    List<Integer> rows = new ArrayList<>();
    try (AggregationRunner runner = runner(true, failingOn(3))) {
      assertSameGroups(expected(), drain(runner, rows));
    }
    // The groups of batches 1-2, then of batches 3-4 (batch 3 redone): each key twice.
    assertEquals(List.of(10, 10), rows);
    assertEquals(1, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
    assertEquals(20, metrics.get(ExecMetrics.OUTPUT_ROWS).value());
  }

  @Test
  void withoutMemoryTrouble_theGroupsComeOutOnce() {
    List<Integer> rows = new ArrayList<>();
    try (AggregationRunner runner = runner(true, failingOn())) {
      assertSameGroups(expected(), drain(runner, rows));
    }
    assertEquals(List.of(10), rows);
    assertEquals(0, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
  }

  @Test
  void aFinalAggregationWhoseFirstBatchDoesNotFitFailsNamingTheSettingToRaise() {
    try (AggregationRunner runner = runner(false, failingOn(1))) {
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, runner::next);
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
      assertTrue(e.getMessage().contains("even for one batch"), e.getMessage());
    }
  }

  @Test
  void aBatchThatDoesNotFitAFreshAggregationFailsInsteadOfLooping() {
    // Batch 2 fails, the flush emits batch 1's groups; batch 2 fails again in the fresh table.
    try (AggregationRunner runner = runner(true, failingOn(2, 3))) {
      runner.next().close();
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, runner::next);
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
    }
  }

  // ---- final aggregations that run out of device memory merge their groups on the CPU ---------

  private static final ColumnType DEC_IN = ColumnType.decimal(4, 1);

  /** Every kind over (key, long value, decimal value), the decimal sum able to overflow. */
  private static AggregateSpec finalSpec(int keyCount) {
    List<ColumnType> types = keyCount == 0 ? List.of(ColumnType.LONG, DEC_IN)
        : List.of(ColumnType.LONG, ColumnType.LONG, DEC_IN);
    int v = keyCount;
    return new AggregateSpec(types, keyCount, List.of(
        new AggregateFunction(AggregateFunction.Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(AggregateFunction.Kind.COUNT, v, ColumnType.LONG),
        new AggregateFunction(AggregateFunction.Kind.SUM, v, ColumnType.LONG),
        new AggregateFunction(AggregateFunction.Kind.MIN, v, ColumnType.LONG),
        new AggregateFunction(AggregateFunction.Kind.MAX, v, ColumnType.LONG),
        new AggregateFunction(AggregateFunction.Kind.SUM_DECIMAL, v + 1,
            ColumnType.decimal(5, 1), true)), false);
  }

  /**
   * 4 batches of 1000 rows: key i % 10 (NULL for every 97th row), a long value (NULL for every
   * 5th) and a decimal. Key 0's decimals in batch 1 sum past decimal(5, 1) on their own, so a
   * flush after batch 1 sees the overflow in one chunk only; the other sums stay in range.
   */
  private Iterator<ColumnarBatch> finalBatches(AggregateSpec spec) {
    List<ColumnarBatch> out = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      List<HostColumnBuilder> builders = new ArrayList<>();
      try {
        for (ColumnType t : spec.inputTypes()) {
          builders.add(new HostColumnBuilder(t, 1000, backend.stagingAllocator()));
        }
        for (int i = b * 1000; i < (b + 1) * 1000; i++) {
          int c = 0;
          if (spec.keyCount() == 1) {
            if (i % 97 == 0) {
              builders.get(c++).appendNull();
            } else {
              builders.get(c++).appendLong(i % 10);
            }
          }
          if (i % 5 == 0) {
            builders.get(c++).appendNull();
          } else {
            builders.get(c++).appendLong(i * 7919L % 10007 - 5000);
          }
          builders.get(c).appendDecimal(b == 0 && i % 10 == 0 ? new BigDecimal("999.9")
              : BigDecimal.valueOf(i % 7, 1));
        }
        List<HostColumn> columns = new ArrayList<>();
        builders.forEach(x -> columns.add(x.build()));
        try (ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, 1000)) {
          out.add(DeviceBatches.wrap(ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(),
              stream), attributes(columns.size())));
        }
      } finally {
        builders.forEach(HostColumnBuilder::close);
      }
    }
    return out.iterator();
  }

  /** Attributes for {@code n} columns; only their count matters here (batches are read raw). */
  private static List<Attribute> attributes(int n) {
    List<Attribute> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new AttributeReference("c" + i, LongType$.MODULE$, true, Metadata.empty(),
          NamedExpression$.MODULE$.newExprId(), scala.collection.immutable.List$.MODULE$.empty()));
    }
    return out;
  }

  /** Runs a final aggregation whose updates number {@code failing} run out; its sorted rows. */
  private List<List<Object>> runFinal(AggregateSpec spec, int... failing) {
    input = finalBatches(spec);
    List<List<Object>> rows = new ArrayList<>();
    int outputs = spec.keyCount() + spec.functions().size();
    try (AggregationRunner runner = new AggregationRunner(input, failingOn(spec, failing),
        () -> ProgramBuilder.identity(spec.inputTypes(), false), List::of, false, attributes(outputs),
        (b, e) -> e, metrics, new CpuGroupMerge(spec, backend, stream), null,
        AggregationRunner.GroupsCheck.NONE)) {
      while (runner.hasNext()) {
        try (ColumnarBatch batch = runner.next();
            ColumnBatch<HostColumn> host = ColumnTransfer.toHost(DeviceBatches.view(batch),
                backend.stagingAllocator(), stream)) {
          for (int r = 0; r < host.rowCount(); r++) {
            List<Object> row = new ArrayList<>();
            for (HostColumn c : host.columns()) {
              row.add(c.isNull(r) ? null
                  : c.type().id() == TypeId.DECIMAL ? c.getDecimal(r) : (Object) c.getLong(r));
            }
            rows.add(row);
          }
        }
      }
    }
    rows.sort((a, b) -> String.valueOf(a).compareTo(String.valueOf(b)));
    return rows;
  }

  private void resetMetrics() {
    metrics.values().forEach(SQLMetric::reset);
    updates = 0;
  }

  @Test
  void aFinalAggregationMergesItsFlushedGroupsOnTheCpuExactly() {
    AggregateSpec spec = finalSpec(1);
    List<List<Object>> want = runFinal(spec);
    assertEquals(11, want.size());
    assertTrue(want.stream().anyMatch(row -> Long.valueOf(0).equals(row.get(0))
        && row.get(6) == null), "key 0's decimal sum overflows: " + want);
    assertEquals(0, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
    input.forEachRemaining(ColumnarBatch::close);
    resetMetrics();
    // Batch 2 runs out (flush of batch 1, the chunk where key 0 overflows), is redone; batch 3
    // runs out (flush of batch 2), is redone; batch 4 runs out (flush of batch 3), is redone.
    assertEquals(want, runFinal(spec, 2, 4, 6));
    assertEquals(3, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
    assertEquals(44, metrics.get(ExecMetrics.CPU_MERGED_ROWS).value(), "4 tables of 11 groups");
    assertEquals(1, metrics.get(ExecMetrics.OUTPUT_BATCHES).value());
    assertEquals(11, metrics.get(ExecMetrics.OUTPUT_ROWS).value());
  }

  @Test
  void aFinalGlobalAggregateMergesToOneRow() {
    AggregateSpec spec = finalSpec(0);
    List<List<Object>> want = runFinal(spec);
    assertEquals(1, want.size());
    input.forEachRemaining(ColumnarBatch::close);
    resetMetrics();
    assertEquals(want, runFinal(spec, 3));
    assertEquals(1, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
    assertEquals(2, metrics.get(ExecMetrics.CPU_MERGED_ROWS).value());
  }

  @Test
  void aFinalBatchThatDoesNotFitAFreshTableAfterAFlushFails() {
    try (AggregationRunner runner = runner(false, failingOn(2, 3))) {
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, runner::next);
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
    }
    assertEquals(1, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
  }

  @Test
  void aFinalAggregationWhoseSumsCannotBeMergedFailsSayingWhy() {
    AggregateSpec ambiguous = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG, DEC_IN),
        1, List.of(new AggregateFunction(AggregateFunction.Kind.SUM_DECIMAL, 2,
            ColumnType.decimal(5, 1), false)), false);
    PoolExhaustedException e = assertThrows(PoolExhaustedException.class,
        () -> runFinal(ambiguous, 2));
    assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
    assertTrue(e.getMessage().contains("cannot be merged"), e.getMessage());
    assertEquals(0, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
  }

  @Test
  void mergedGroupsThatDoNotFitOnTheDeviceFailNamingTheSettings() {
    AggregateSpec spec = finalSpec(1);
    input = finalBatches(spec);
    try (CpuGroupMerge merge = new CpuGroupMerge(spec, backend, stream);
        HashAggregateKernel.Aggregation table =
            backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
      try (ColumnarBatch batch = input.next()) {
        table.update(DeviceBatches.view(batch));
      }
      try (ColumnBatch<DeviceColumn> groups = table.finish()) {
        merge.add(groups);
      }
      for (long size : new long[] {1 << 20, ArenaPool.ALIGNMENT}) {
        try {
          while (true) {
            hog.add(DeviceBuffer.allocate(backend.deviceMemory(), size));
          }
        } catch (PoolExhaustedException full) {
          // no block of this size is left
        }
      }
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, merge::finish);
      assertTrue(e.getMessage().contains("merged groups do not fit"), e.getMessage());
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
      assertTrue(e.getMessage().contains(TesseraConf.execEnabledKey("HashAggregateExec")),
          e.getMessage());
    }
  }

  // ---- out of memory when the groups come out (finish) ----------------------------------------

  /**
   * Aggregations of the host backend whose output does not fit in device memory at once: finish()
   * runs out, and so does a part of more than {@code maxPart} groups.
   */
  private Supplier<HashAggregateKernel.Aggregation> finishFitsOnly(int maxPart) {
    return () -> new Delegating(backend.hashAggregateKernel().open(SPEC, backend.deviceMemory(),
        stream)) {
      @Override
      public ColumnBatch<DeviceColumn> finish() {
        throw new PoolExhaustedException("injected: the groups do not fit");
      }

      @Override
      public boolean canFinishInParts() {
        return true;
      }

      @Override
      public ColumnBatch<DeviceColumn> finish(long from, int count) {
        if (count > maxPart) {
          throw new PoolExhaustedException("injected: " + count + " groups do not fit");
        }
        return super.finish(from, count);
      }
    };
  }

  @Test
  void groupsThatDoNotFitAtOnceComeOutInParts_partial() {
    input = batches();
    List<Integer> rows = new ArrayList<>();
    try (AggregationRunner runner = new AggregationRunner(input, finishFitsOnly(3), () -> PROGRAM,
        List::of, true, output(), (b, e) -> e, metrics, null, backend,
        AggregationRunner.GroupsCheck.NONE)) {
      assertSameGroups(expected(), drain(runner, rows));
    }
    // 10 groups: halves of 5 do not fit, parts of 2 do.
    assertEquals(List.of(2, 2, 2, 2, 2), rows);
    assertTrue(metrics.get(ExecMetrics.BATCH_SPLITS).value() >= 2);
    assertEquals(0, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
  }

  @Test
  void groupsThatDoNotFitAtOnceComeOutInParts_final() {
    input = batches();
    List<Integer> rows = new ArrayList<>();
    try (AggregationRunner runner = new AggregationRunner(input, finishFitsOnly(4), () -> PROGRAM,
        List::of, false, output(), (b, e) -> e, metrics,
        new CpuGroupMerge(SPEC, backend, stream), backend,
        AggregationRunner.GroupsCheck.NONE)) {
      assertSameGroups(expected(), drain(runner, rows));
    }
    // A final aggregation's groups are results: each key once, in parts of what fits.
    assertEquals(10, rows.stream().mapToInt(Integer::intValue).sum());
    assertTrue(rows.stream().allMatch(r -> r <= 4), rows.toString());
  }

  @Test
  void aFinalAggregationThatFlushedToTheCpuMovesItsGroupsInPartsToo() {
    input = batches();
    List<Integer> rows = new ArrayList<>();
    // Batch 3's update runs out: the groups of batches 1-2 go to the CPU merge in parts.
    Supplier<HashAggregateKernel.Aggregation> parts = finishFitsOnly(3);
    Supplier<HashAggregateKernel.Aggregation> failing = failingOn(3);
    int[] opened = {0};
    Supplier<HashAggregateKernel.Aggregation> both = () -> {
      HashAggregateKernel.Aggregation inner = parts.get();
      HashAggregateKernel.Aggregation fails = failing.get();
      fails.close();
      return new HashAggregateKernel.Aggregation() {
        @Override
        public void update(ColumnBatch<DeviceColumn> batch) {
          inner.update(batch);
        }

        @Override
        public void update(Program program, java.util.List<JoinTable> tables,
            ColumnBatch<DeviceColumn> in) {
          if (++updates == 3) {
            throw new PoolExhaustedException("injected: device memory is exhausted");
          }
          inner.update(program, tables, in);
        }

        @Override
        public ColumnBatch<DeviceColumn> finish() {
          return inner.finish();
        }

        @Override
        public boolean canFinishInParts() {
          return true;
        }

        @Override
        public long groupCount() {
          return inner.groupCount();
        }

        @Override
        public ColumnBatch<DeviceColumn> finish(long from, int count) {
          return inner.finish(from, count);
        }

        @Override
        public void close() {
          opened[0]++;
          inner.close();
        }
      };
    };
    try (AggregationRunner runner = new AggregationRunner(input, both, () -> PROGRAM, List::of, false,
        output(), (b, e) -> e, metrics, new CpuGroupMerge(SPEC, backend, stream), backend,
        AggregationRunner.GroupsCheck.NONE)) {
      assertSameGroups(expected(), drain(runner, rows));
    }
    assertEquals(1, metrics.get(ExecMetrics.TABLE_FLUSHES).value());
    assertEquals(20, metrics.get(ExecMetrics.CPU_MERGED_ROWS).value());
    assertEquals(List.of(10), rows);
  }

  @Test
  void oneGroupThatDoesNotFitFailsNamingTheSetting() {
    input = batches();
    try (AggregationRunner runner = new AggregationRunner(input, finishFitsOnly(0), () -> PROGRAM,
        List::of, true, output(), (b, e) -> e, metrics, null, backend,
        AggregationRunner.GroupsCheck.NONE)) {
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, runner::next);
      assertTrue(e.getMessage().contains("a single row"), e.getMessage());
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
    }
  }
}
