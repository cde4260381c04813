package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.GroupMerge;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.agg.MergeSpec;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Merging the outputs of aggregations over chunks of an input ({@link MergeSpec},
 * {@link GroupMerge}) gives what one aggregation of the whole input gives, on every backend.
 */
public abstract class GroupMergeContractTest extends BackendTestBase {
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType DOUBLE = ColumnType.DOUBLE;
  private static final ColumnType DEC_IN = ColumnType.decimal(4, 1);
  private static final ColumnType DEC_SUM = ColumnType.decimal(6, 1);

  /** Inputs: key, int value, long value, whole-number double, double, boolean, decimal. */
  private static final List<ColumnType> INPUTS =
      List.of(LONG, INT, LONG, DOUBLE, DOUBLE, ColumnType.BOOLEAN, DEC_IN);

  /** Every kind, and every zeroWhenEmpty choice a merge supports. */
  private static List<AggregateFunction> everyFunction() {
    return List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, LONG),
        new AggregateFunction(Kind.COUNT, 1, LONG),
        new AggregateFunction(Kind.SUM, 1, LONG),
        new AggregateFunction(Kind.SUM, 2, LONG, true),
        new AggregateFunction(Kind.SUM, 3, DOUBLE, true),
        new AggregateFunction(Kind.SUM, 1, DOUBLE, false),
        new AggregateFunction(Kind.MIN, 1, INT),
        new AggregateFunction(Kind.MAX, 2, LONG),
        new AggregateFunction(Kind.MIN, 4, DOUBLE),
        new AggregateFunction(Kind.MAX, 4, DOUBLE),
        new AggregateFunction(Kind.MIN, 5, ColumnType.BOOLEAN),
        new AggregateFunction(Kind.MAX, 5, ColumnType.BOOLEAN),
        new AggregateFunction(Kind.SUM_DECIMAL, 6, DEC_SUM, true),
        new AggregateFunction(Kind.COUNT, 6, LONG));
  }

  /**
   * Random rows: keys skewed so that some groups are large (their decimal sums overflow, as the
   * decimals are all positive: a chunk that overflows means the whole sum does too), LONG values
   * that wrap, NaN among the doubles, NULLs everywhere.
   */
  private static List<List<Object>> randomRows(int rows, long seed) {
    Random random = new Random(seed);
    List<List<Object>> columns = new ArrayList<>();
    for (int c = 0; c < INPUTS.size(); c++) {
      columns.add(new ArrayList<>());
    }
    for (int i = 0; i < rows; i++) {
      double u = random.nextDouble();
      columns.get(0).add(random.nextInt(50) == 0 ? null : (long) (u * u * u * 40));
      columns.get(1).add(nullOr(random, random.nextInt(2001) - 1000));
      columns.get(2).add(nullOr(random, random.nextInt(10) == 0
          ? (random.nextBoolean() ? Long.MAX_VALUE : Long.MIN_VALUE) : random.nextLong() >> 20));
      columns.get(3).add(nullOr(random, (double) (random.nextInt(1 << 30) - (1 << 29))));
      columns.get(4).add(nullOr(random, random.nextInt(40) == 0 ? Double.NaN
          : random.nextGaussian() * 1e6));
      columns.get(5).add(nullOr(random, random.nextInt(7) == 0));
      columns.get(6).add(nullOr(random, new BigDecimal(BigInteger.valueOf(random.nextInt(10000)),
          1)));
    }
    return columns;
  }

  private static Object nullOr(Random random, Object value) {
    return random.nextInt(8) == 0 ? null : value;
  }

  @Test
  void mergedChunksOfRandomInputsEqualOneAggregation() {
    AggregateSpec spec = new AggregateSpec(INPUTS, 1, everyFunction(), false);
    for (int trial = 0; trial < 20; trial++) {
      List<List<Object>> input = randomRows(trial == 0 ? 0 : 3000, trial);
      assertMergedEqualsOneGo(spec, input, new Random(1000 + trial), "trial " + trial);
    }
  }

  @Test
  void mergedChunksOfAGlobalAggregateAreOneRow() {
    AggregateSpec spec = new AggregateSpec(INPUTS, 0, everyFunction(), false);
    for (int trial = 0; trial < 10; trial++) {
      // Small inputs make empty chunks likely, and an empty input is the first trial.
      List<List<Object>> input = randomRows(trial * trial, 50 + trial);
      assertMergedEqualsOneGo(spec, input, new Random(2000 + trial), "trial " + trial);
    }
  }

  @Test
  void aDecimalSumThatOverflowsInOneChunkIsNullAfterTheMerge() {
    AggregateSpec spec = new AggregateSpec(List.of(INT, DEC_IN), 1, List.of(
        new AggregateFunction(Kind.SUM_DECIMAL, 1, ColumnType.decimal(4, 1), true)), false);
    BigDecimal big = new BigDecimal("900.0");
    // Group 1: 900.0 + 900.0 in the first chunk leaves decimal(4, 1); group 2 stays in range.
    List<List<Object>> first = List.of(List.of(1, 1, 2), List.of(big, big, new BigDecimal("1.5")));
    List<List<Object>> second = List.of(List.of(1, 2), List.of(new BigDecimal("0.1"),
        new BigDecimal("2.5")));
    List<List<Object>> want = List.of(Arrays.asList(1, null),
        Arrays.asList(2, new BigDecimal("4.0")));
    assertEquals(want, rowsOf(aggregate(spec, concat(first, second))));
    assertEquals(want, merged(spec, List.of(first, second)));
    // The overflow stays sticky when a later chunk would bring the total back into range (one
    // aggregation's exact sum would not be NULL then: see MergeSpec).
    List<List<Object>> back = List.of(List.of(1), List.of(new BigDecimal("-900.0")));
    assertEquals(want, merged(spec, List.of(first, second, back)));
  }

  @Test
  void aMergeWithoutKeysOfNoChunksIsTheEmptyGlobalRow() {
    AggregateSpec spec = new AggregateSpec(INPUTS, 0, everyFunction(), false);
    assertEquals(rowsOf(aggregate(spec, randomRows(0, 1))), merged(spec, List.of()));
  }

  @Test
  void anAmbiguousDecimalSumCannotBeMerged() {
    AggregateSpec spec = new AggregateSpec(List.of(INT, DEC_IN), 1, List.of(
        new AggregateFunction(Kind.SUM_DECIMAL, 1, DEC_SUM, false)), false);
    assertTrue(MergeSpec.whyNot(spec).orElseThrow().contains("NULL both for no input"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MergeSpec.of(spec));
    assertTrue(e.getMessage().contains("cannot be merged"), e.getMessage());
    AggregateSpec fine = new AggregateSpec(List.of(INT, DEC_IN), 1, List.of(
        new AggregateFunction(Kind.SUM_DECIMAL, 1, DEC_SUM, true)), false);
    assertTrue(MergeSpec.whyNot(fine).isEmpty());
  }

  /** Cuts {@code input} into 1 to 5 chunks (some possibly empty) and compares. */
  private void assertMergedEqualsOneGo(AggregateSpec spec, List<List<Object>> input,
      Random random, String what) {
    int rows = input.get(0).size();
    int chunks = 1 + random.nextInt(5);
    int[] cuts = new int[chunks + 1];
    for (int c = 1; c < chunks; c++) {
      cuts[c] = rows == 0 ? 0 : random.nextInt(rows + 1);
    }
    cuts[chunks] = rows;
    Arrays.sort(cuts);
    List<List<List<Object>>> parts = new ArrayList<>();
    for (int c = 0; c < chunks; c++) {
      int from = cuts[c];
      int to = cuts[c + 1];
      parts.add(slice(input, from, to));
    }
    assertEquals(rowsOf(aggregate(spec, input)), merged(spec, parts), what + ", cuts "
        + Arrays.toString(cuts));
  }

  /** Aggregates each chunk, merges the outputs, and returns the merged rows. */
  private List<List<Object>> merged(AggregateSpec spec, List<List<List<Object>>> chunks) {
    try (GroupMerge merge = new GroupMerge(MergeSpec.of(spec), backend.hashAggregateKernel(),
        backend.programKernel(), backend.deviceMemory(), stream)) {
      for (List<List<Object>> chunk : chunks) {
        try (ColumnBatch<DeviceColumn> groups = aggregate(spec, chunk)) {
          merge.add(groups);
        }
      }
      return rowsOf(merge.finish());
    }
  }

  /** One aggregation of {@code columns}; an empty chunk updates nothing (as a fresh table). */
  private ColumnBatch<DeviceColumn> aggregate(AggregateSpec spec, List<List<Object>> columns) {
    try (HashAggregateKernel.Aggregation aggregation =
        backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
      if (!columns.get(0).isEmpty()) {
        try (ColumnBatch<DeviceColumn> batch = upload(spec.inputTypes(), columns)) {
          aggregation.update(batch);
        }
      }
      return aggregation.finish();
    }
  }

  private ColumnBatch<DeviceColumn> upload(List<ColumnType> types, List<List<Object>> columns) {
    List<HostColumn> host = new ArrayList<>();
    for (int c = 0; c < columns.size(); c++) {
      host.add(TestColumns.build(types.get(c), columns.get(c), backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> h = new ColumnBatch<>(host, columns.get(0).size())) {
      ColumnBatch<DeviceColumn> d = ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(),
          stream);
      stream.synchronize();
      return d;
    }
  }

  /** The rows of {@code batch} (closing it), sorted by their text. */
  private List<List<Object>> rowsOf(ColumnBatch<DeviceColumn> batch) {
    try (batch; ColumnBatch<HostColumn> back =
        ColumnTransfer.toHost(batch, backend.stagingAllocator(), stream)) {
      List<List<Object>> columns = new ArrayList<>();
      for (HostColumn c : back.columns()) {
        columns.add(TestColumns.values(c.type(), c));
      }
      List<List<Object>> rows = new ArrayList<>();
      for (int r = 0; r < back.rowCount(); r++) {
        List<Object> row = new ArrayList<>();
        for (List<Object> column : columns) {
          row.add(column.get(r));
        }
        rows.add(row);
      }
      TestColumns.sortByText(rows);
      return rows;
    }
  }

  private static List<List<Object>> slice(List<List<Object>> columns, int from, int to) {
    return map(columns.size(), c -> new ArrayList<>(columns.get(c).subList(from, to)));
  }

  private static List<List<Object>> concat(List<List<Object>> a, List<List<Object>> b) {
    return map(a.size(), c -> {
      List<Object> all = new ArrayList<>(a.get(c));
      all.addAll(b.get(c));
      return all;
    });
  }

  private static List<List<Object>> map(int n, IntFunction<List<Object>> f) {
    List<List<Object>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(f.apply(i));
    }
    return out;
  }
}
