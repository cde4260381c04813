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
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
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
      new AggregateFunction(AggregateFunction.Kind.SUM_INT, 1, ColumnType.LONG)), false);
  private static final Program PROGRAM = ProgramBuilder.identity(TYPES, false);

  private Backend backend;
  private GpuStream stream;
  private final Map<String, SQLMetric> metrics = new TreeMap<>();
  private int updates;
  /** The runner's input; what a failed runner did not take is closed after the test. */
  private Iterator<ColumnarBatch> input;

  @BeforeEach
  void open() {
    backend = Backends.open(BackendKind.HOST_REFERENCE,
        RuntimeOptions.defaults().withDeviceMemoryCap(64L << 20));
    stream = backend.newStream();
    for (String name : List.of(ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME, ExecMetrics.BYTES_READ, ExecMetrics.TABLE_FLUSHES)) {
      metrics.put(name, new SQLMetric("sum", 0L));
    }
  }

  @AfterEach
  void close() {
    input.forEachRemaining(ColumnarBatch::close);
    stream.close();
    assertEquals(0, backend.deviceMemory().bytesInUse(), "device memory leaked");
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
    return () -> {
      HashAggregateKernel.Aggregation real =
          backend.hashAggregateKernel().open(SPEC, backend.deviceMemory(), stream);
      return new HashAggregateKernel.Aggregation() {
        @Override
        public void update(ColumnBatch<DeviceColumn> batch) {
          real.update(batch);
        }

        @Override
        public void update(Program program, ColumnBatch<DeviceColumn> input) {
          int call = ++updates;
          for (int f : failing) {
            if (f == call) {
              throw new PoolExhaustedException("injected: device memory is exhausted");
            }
          }
          real.update(program, input);
        }

        @Override
        public ColumnBatch<DeviceColumn> finish() {
          return real.finish();
        }

        @Override
        public void close() {
          real.close();
        }
      };
    };
  }

  private AggregationRunner runner(boolean partial, Supplier<HashAggregateKernel.Aggregation> a) {
    input = batches();
    return new AggregationRunner(input, a, PROGRAM, partial, output(), (b, e) -> e, metrics);
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
  void aFinalAggregationFailsNamingTheSettingToRaise() {
    try (AggregationRunner runner = runner(false, failingOn(2))) {
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class, runner::next);
      assertTrue(e.getMessage().contains(TesseraConf.DEVICE_CAP_BYTES.key()), e.getMessage());
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
}
