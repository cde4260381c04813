package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The hash aggregation's results, the same on every backend, checked against plain Java. */
public abstract class HashAggregateContractTest extends BackendTestBase {
  /** Whether the backend groups by strings (CUDA does not yet, and must say so). */
  protected boolean groupsByStrings() {
    return true;
  }

  private static final ColumnType LONG = ColumnType.LONG;

  /** Aggregates the batches (each a list of columns of Java values) and returns rows as lists. */
  private List<List<Object>> aggregate(AggregateSpec spec, List<List<List<Object>>> batches) {
    return aggregate(spec, null, spec.inputTypes(), batches);
  }

  /**
   * The same through {@code update(program, batch)} when {@code program} is not null: the
   * batches' columns then have {@code batchTypes}, the program's input types.
   */
  private List<List<Object>> aggregate(AggregateSpec spec, Program program,
      List<ColumnType> batchTypes, List<List<List<Object>>> batches) {
    HashAggregateKernel kernel = backend.hashAggregateKernel();
    try (HashAggregateKernel.Aggregation aggregation =
        kernel.open(spec, backend.deviceMemory(), stream)) {
      for (List<List<Object>> columns : batches) {
        update(aggregation, program, batchTypes, columns);
      }
      try (ColumnBatch<DeviceColumn> out = aggregation.finish();
          ColumnBatch<HostColumn> back =
              ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
        List<List<Object>> rows = new ArrayList<>();
        List<List<Object>> columns = new ArrayList<>();
        for (int c = 0; c < back.columns().size(); c++) {
          columns.add(TestColumns.values(back.column(c).type(), back.column(c)));
        }
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
  }

  /** Uploads {@code columns} of {@code batchTypes} and adds them to {@code aggregation}. */
  private void update(HashAggregateKernel.Aggregation aggregation, Program program,
      List<ColumnType> batchTypes, List<List<Object>> columns) {
    List<HostColumn> host = new ArrayList<>();
    for (int c = 0; c < columns.size(); c++) {
      host.add(TestColumns.build(batchTypes.get(c), columns.get(c), backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> h = new ColumnBatch<>(host, columns.get(0).size());
        ColumnBatch<DeviceColumn> d =
            ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream)) {
      stream.synchronize();
      if (program == null) {
        aggregation.update(d);
      } else {
        aggregation.update(program, d);
      }
    }
  }

  @Test
  void groupsByALongKeyOverManyBatchesWithNulls() {
    AggregateSpec spec = countSumMinMax(LONG);
    Map<Long, long[]> expected = new HashMap<>(); // newGroup()'s; the NULL key's under null
    List<List<List<Object>>> batches = new ArrayList<>();
    int n = 0;
    for (int b = 0; b < 5; b++) {
      List<Object> keys = new ArrayList<>();
      List<Object> values = new ArrayList<>();
      for (int i = 0; i < 3001 + b * 1000; i++, n++) {
        Long key = n % 97 == 0 ? null : (long) (n % 37);
        Integer v = n % 5 == 0 ? null : (n * 7919) % 10007 - 5000;
        keys.add(key);
        values.add(v);
        addRow(expected.computeIfAbsent(key, x -> newGroup()), v);
      }
      batches.add(List.of(keys, values));
    }
    assertEquals(expectedRows(expected), aggregate(spec, batches));
  }

  @Test
  void aGlobalAggregateOfNothingIsOneRow() {
    AggregateSpec spec = new AggregateSpec(List.of(LONG), 0, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, LONG),
        new AggregateFunction(Kind.SUM, 0, LONG),
        new AggregateFunction(Kind.MAX, 0, LONG)), false);
    assertEquals(List.of(Arrays.asList(0L, null, null)),
        aggregate(spec, List.of(List.of(List.of()))));
  }

  @Test
  void stringAndMultiColumnKeys() {
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.STRING, ColumnType.INT, LONG), 2,
        List.of(new AggregateFunction(Kind.SUM, 2, LONG)), false);
    List<Object> s = Arrays.asList("a", "grüße", "a", null, "", "a", null, "");
    List<Object> i = Arrays.asList(1, 1, 1, 1, 2, 2, 1, 2);
    List<Object> v = Arrays.asList(1L, 2L, 3L, 4L, 5L, 6L, 7L, null);
    if (!groupsByStrings()) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> aggregate(spec, List.of(List.of(s, i, v))));
      assertTrue(e.getMessage().contains("string keys are not supported"), e.getMessage());
      return;
    }
    assertEquals(List.of(Arrays.asList("", 2, 5L), Arrays.asList("a", 1, 4L),
        Arrays.asList("a", 2, 6L), Arrays.asList("grüße", 1, 2L), Arrays.asList(null, 1, 11L)),
        aggregate(spec, List.of(List.of(s, i, v))));
  }

  @Test
  void doubleMinAndMaxFollowSparkOrder() {
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.INT, ColumnType.DOUBLE), 1, List.of(
        new AggregateFunction(Kind.MIN, 1, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MAX, 1, ColumnType.DOUBLE)), false);
    List<Object> k = Arrays.asList(1, 1, 1, 2, 2);
    List<Object> d = Arrays.asList(Double.NaN, 1.5, Double.NEGATIVE_INFINITY, 3.0, null);
    assertEquals(List.of(Arrays.asList(1, Double.NEGATIVE_INFINITY, Double.NaN),
        Arrays.asList(2, 3.0, 3.0)), aggregate(spec, List.of(List.of(k, d))));
  }

  @Test
  void integerSumsWrapOrRaiseUnderAnsi() {
    List<Object> k = Arrays.asList(1, 1);
    List<Object> v = Arrays.asList(Long.MAX_VALUE, 1L);
    List<AggregateFunction> sum = List.of(new AggregateFunction(Kind.SUM, 1, LONG));
    assertEquals(List.of(Arrays.asList(1, Long.MIN_VALUE)), aggregate(
        new AggregateSpec(List.of(ColumnType.INT, LONG), 1, sum, false),
        List.of(List.of(k, v))));
    RowErrorException e = assertThrows(RowErrorException.class, () -> aggregate(
        new AggregateSpec(List.of(ColumnType.INT, LONG), 1, sum, true), List.of(List.of(k, v))));
    assertEquals(RowError.ARITHMETIC_OVERFLOW, e.error());
  }

  @Test
  void decimalSumsAreNullWhenTheyLeaveTheirPrecision() {
    ColumnType in = ColumnType.decimal(3, 1);
    ColumnType out = ColumnType.decimal(4, 1);
    List<Object> k = Arrays.asList(1, 1, 2, 2);
    List<Object> v = Arrays.asList(new BigDecimal("99.9"), new BigDecimal("99.9"),
        new BigDecimal("99.9"), new BigDecimal("-0.9"));
    assertEquals(List.of(Arrays.asList(1, new BigDecimal("199.8")),
        Arrays.asList(2, new BigDecimal("99.0"))), aggregate(new AggregateSpec(
            List.of(ColumnType.INT, in), 1,
            List.of(new AggregateFunction(Kind.SUM_DECIMAL, 1, out)), false),
        List.of(List.of(k, v))));
    ColumnType tight = ColumnType.decimal(3, 1);
    assertEquals(List.of(Arrays.asList(1, null), Arrays.asList(2, new BigDecimal("99.0"))),
        aggregate(new AggregateSpec(List.of(ColumnType.INT, in), 1,
            List.of(new AggregateFunction(Kind.SUM_DECIMAL, 1, tight)), false),
            List.of(List.of(k, v))));
  }

  @Test
  void decimalSumsAreNullOnOverflowEvenUnderAnsi() {
    ColumnType in = ColumnType.decimal(3, 1);
    List<Object> k = Arrays.asList(1, 1, 2);
    List<Object> v = Arrays.asList(new BigDecimal("99.9"), new BigDecimal("99.9"),
        new BigDecimal("-0.9"));
    assertEquals(List.of(Arrays.asList(1, null), Arrays.asList(2, new BigDecimal("-0.9"))),
        aggregate(new AggregateSpec(List.of(ColumnType.INT, in), 1,
            List.of(new AggregateFunction(Kind.SUM_DECIMAL, 1, ColumnType.decimal(3, 1))), true),
            List.of(List.of(k, v))));
  }

  @Test
  void emptyGroupsOfSumsGiveZeroWhenAsked() {
    ColumnType dec = ColumnType.decimal(5, 2);
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.INT, LONG, dec), 1, List.of(
        new AggregateFunction(Kind.SUM, 1, LONG, true),
        new AggregateFunction(Kind.SUM, 1, LONG, false),
        new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE, true),
        new AggregateFunction(Kind.SUM_DECIMAL, 2, ColumnType.decimal(15, 2), true),
        new AggregateFunction(Kind.SUM_DECIMAL, 2, ColumnType.decimal(15, 2), false)), false);
    List<Object> k = Arrays.asList(1, 2, 2);
    List<Object> v = Arrays.asList(null, 3L, 4L);
    List<Object> d = Arrays.asList(null, new BigDecimal("1.25"), null);
    assertEquals(List.of(Arrays.asList(1, 0L, null, 0.0, new BigDecimal("0.00"), null),
        Arrays.asList(2, 7L, 7L, 7.0, new BigDecimal("1.25"), new BigDecimal("1.25"))),
        aggregate(spec, List.of(List.of(k, v, d))));
    AggregateSpec global = new AggregateSpec(List.of(LONG), 0, List.of(
        new AggregateFunction(Kind.SUM, 0, LONG, true),
        new AggregateFunction(Kind.SUM, 0, ColumnType.DOUBLE, true)), false);
    assertEquals(List.of(Arrays.asList(0L, 0.0)), aggregate(global, List.of(List.of(List.of()))));
  }

  @Test
  void integerSumsToDoubleAreExactThenRoundedOnce() {
    // 2^53 + 1 + 1: a running double sum would lose both ones; the exact sum is 2^53 + 2.
    double big = 9007199254740992.0;
    AggregateSpec fromDoubles = new AggregateSpec(List.of(ColumnType.INT, ColumnType.DOUBLE), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE, true)), false);
    assertEquals(List.of(Arrays.asList(1, big + 2), Arrays.asList(2, -3.0)),
        aggregate(fromDoubles, List.of(List.of(Arrays.asList(1, 1, 1, 2, 2, 2),
            Arrays.asList(big, 1.0, 1.0, -1.0, -2.0, null)))));
    AggregateSpec fromLongs = new AggregateSpec(List.of(ColumnType.INT, LONG), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE, true)), true);
    // Past the int64 range: no wrap and no error for a DOUBLE result, even under ANSI.
    assertEquals(List.of(Arrays.asList(1, 2.0 * Long.MAX_VALUE)),
        aggregate(fromLongs, List.of(List.of(Arrays.asList(1, 1),
            Arrays.asList(Long.MAX_VALUE, Long.MAX_VALUE)))));
  }

  @Test
  void booleanMinAndMaxOrderFalseBeforeTrue() {
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.INT, ColumnType.BOOLEAN), 1,
        List.of(new AggregateFunction(Kind.MIN, 1, ColumnType.BOOLEAN),
            new AggregateFunction(Kind.MAX, 1, ColumnType.BOOLEAN)), false);
    List<Object> k = Arrays.asList(1, 1, 2, 2, 3, 3);
    List<Object> b = Arrays.asList(true, false, true, null, null, null);
    assertEquals(List.of(Arrays.asList(1, false, true), Arrays.asList(2, true, true),
        Arrays.asList(3, null, null)), aggregate(spec, List.of(List.of(k, b))));
  }

  /**
   * SELECT k + 1, sum(x * 2), count(*) WHERE x <> 5 GROUP BY k + 1, over (k LONG, x LONG): a
   * filter, a computed key and a computed input.
   */
  private static Program filteredProgram(boolean ansi) {
    ProgramBuilder b = new ProgramBuilder(List.of(LONG, LONG), ansi);
    int k = b.loadColumn(0);
    int x = b.loadColumn(1);
    int key = b.emitNew(Opcode.ADD_INT, k, b.loadConstant(1), 64);
    int doubled = b.emitNew(Opcode.MUL_INT, x, b.loadConstant(2), 64);
    int five = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(5), Comparison.EQ.code());
    int keep = b.emitNew(Opcode.NOT, five, 0, 0);
    return b.build(keep, List.of(new Program.Output(key, LONG), new Program.Output(doubled, LONG)));
  }

  /**
   * Rows that a warp's lanes take in turns, then together: each 32 consecutive rows are one
   * warp's item in a kernel of blocks of any multiple of 32 threads, and each such group of rows
   * keeps the first half of its lanes (key 7), the second half (key -3), or all of them (each
   * half its key), at random; a row in 64 has a key of its own. Where a kernel keeps a lane's rows
   * of one group in registers (a run: CUDA's generated kernels, one fixed-width key and integral
   * functions), a warp whose lanes hold runs of two groups adds its rows to them without a lookup;
   * the odd keys end runs. Over 2,200,017 rows, enough for several items per warp.
   */
  @Test
  void lanesKeepRowsOfTheirOwnGroupWhileTheirWarpHasSeveral() {
    ColumnType intType = ColumnType.INT;
    AggregateSpec spec = countSumMinMax(intType);
    ProgramBuilder b = new ProgramBuilder(List.of(intType, intType, intType), false);
    int key = b.loadColumn(0);
    int v = b.loadColumn(1);
    int keep = b.emitNew(Opcode.CMP_INT, b.loadColumn(2), b.loadConstant(1),
        Comparison.EQ.code());
    Program program = b.build(keep,
        List.of(new Program.Output(key, intType), new Program.Output(v, intType)));

    int rows = 2_200_017;
    List<Object> keys = new ArrayList<>(rows);
    List<Object> values = new ArrayList<>(rows);
    List<Object> kept = new ArrayList<>(rows);
    Map<Integer, long[]> expected = new TreeMap<>(); // newGroup()'s
    Random random = new Random(42);
    int phase = 0;
    for (int r = 0; r < rows; r++) {
      int lane = r % 32;
      if (lane == 0) {
        phase = random.nextInt(3); // 0: lanes 0-15 kept, 1: lanes 16-31, 2: every lane
      }
      boolean keeps = phase == 2 || (phase == 0) == (lane < 16);
      int k = random.nextInt(64) == 0 ? 100 + r % 5 : lane < 16 ? 7 : -3;
      Integer value = r % 11 == 0 ? null : (int) ((r * 7919L) % 201) - 100;
      keys.add(k);
      values.add(value);
      kept.add(keeps ? 1 : 0);
      if (keeps) {
        addRow(expected.computeIfAbsent(k, x -> newGroup()), value);
      }
    }
    assertEquals(expectedRows(expected), aggregate(spec, program,
        List.of(intType, intType, intType), List.of(List.of(keys, values, kept))));
  }

  /**
   * Rows for {@link #warpsLeaveAndRetakeTheShortcutsForRepeatedKeysAsTheirKeysChange}: enough
   * that a warp of a kernel filling every multiprocessor has more than a hundred items.
   */
  protected int rowsForShortcutModes() {
    return 600_000;
  }

  /**
   * One batch whose first half has keys in random order (10 keys, and one row in 100 of 5,000
   * rare keys that the per-block tables do not all hold) and whose second half has one key a
   * region of 4,096 rows. Where a kernel stops trying the shortcuts for repeated keys after items
   * that find none (CUDA's generated kernels of one fixed-width key: ShortcutMode), its warps
   * look every row up in the first half and take the shortcuts again in the second.
   */
  @Test
  void warpsLeaveAndRetakeTheShortcutsForRepeatedKeysAsTheirKeysChange() {
    AggregateSpec spec = countSumMinMax(LONG);
    int rows = rowsForShortcutModes();
    List<Object> keys = new ArrayList<>(rows);
    List<Object> values = new ArrayList<>(rows);
    Map<Long, long[]> expected = new TreeMap<>();
    Random random = new Random(7);
    for (int r = 0; r < rows; r++) {
      long k;
      if (r >= rows / 2) {
        k = (r / 4096) % 7;
      } else {
        k = random.nextInt(100) == 0 ? 1_000 + random.nextInt(5_000) : random.nextInt(10);
      }
      Integer value = r % 13 == 0 ? null : random.nextInt(2_001) - 1_000;
      keys.add(k);
      values.add(value);
      addRow(expected.computeIfAbsent(k, x -> newGroup()), value);
    }
    assertEquals(expectedRows(expected), aggregate(spec, List.of(List.of(keys, values))));
  }

  /**
   * Keys a kernel's tables store in a way of their own are groups like any other: NULL and 0
   * (both stored as the value 0, told apart by a null flag that CUDA's generated kernels read
   * only where the values are 0) and Long.MIN_VALUE (the value their per-block entries hold
   * until a key is stored there), with their neighbours, among 6,000 ordinary keys: more than a
   * block's per-block table holds, so rows of every key also take the global table. Two batches
   * of 300,000 rows.
   */
  @Test
  void keysTheTablesStoreAsMarkersAreGroupsLikeAnyOther() {
    AggregateSpec spec = countSumMinMax(LONG);
    Long[] markers = {null, 0L, Long.MIN_VALUE, Long.MIN_VALUE + 1, -1L, 1L, Long.MAX_VALUE};
    Map<Long, long[]> expected = new HashMap<>(); // newGroup()'s; the NULL key's under null
    Random random = new Random(7);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 2; batch++) {
      List<Object> keys = new ArrayList<>();
      List<Object> values = new ArrayList<>();
      for (int r = 0; r < 300_000; r++) {
        Long key = random.nextBoolean() ? markers[random.nextInt(markers.length)]
            : Long.valueOf(1_000_003L * (1 + random.nextInt(6_000)));
        Integer value = random.nextInt(13) == 0 ? null : random.nextInt(2_001) - 1_000;
        keys.add(key);
        values.add(value);
        addRow(expected.computeIfAbsent(key, x -> newGroup()), value);
      }
      batches.add(List.of(keys, values));
    }
    assertEquals(expectedRows(expected), aggregate(spec, batches));
  }

  /**
   * GROUP BY one key of {@code keyType}, column 0: COUNT(*), then COUNT, SUM, MIN and MAX of the
   * INT value in column 1 (the functions of {@link #newGroup} and {@link #groupRow}).
   */
  private static AggregateSpec countSumMinMax(ColumnType keyType) {
    ColumnType intType = ColumnType.INT;
    return new AggregateSpec(List.of(keyType, intType), 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, LONG),
        new AggregateFunction(Kind.COUNT, 1, LONG),
        new AggregateFunction(Kind.SUM, 1, LONG),
        new AggregateFunction(Kind.MIN, 1, intType),
        new AggregateFunction(Kind.MAX, 1, intType)), false);
  }

  /** The result rows of {@code groups} (each key's {@link #newGroup}), sorted as aggregate's. */
  private static List<List<Object>> expectedRows(Map<?, long[]> groups) {
    List<List<Object>> rows = new ArrayList<>();
    for (Map.Entry<?, long[]> e : groups.entrySet()) {
      rows.add(groupRow(e.getKey(), e.getValue()));
    }
    TestColumns.sortByText(rows);
    return rows;
  }

  /** A group's expected rows, count, sum, minimum and maximum of an INT value, before any row. */
  private static long[] newGroup() {
    return new long[] {0, 0, 0, Long.MAX_VALUE, Long.MIN_VALUE};
  }

  /** A row of the group, its value {@code v} or NULL. */
  private static void addRow(long[] group, Integer v) {
    group[0]++;
    if (v != null) {
      group[1]++;
      group[2] += v;
      group[3] = Math.min(group[3], v);
      group[4] = Math.max(group[4], v);
    }
  }

  /**
   * The result row of {@code key}'s group: COUNT(*), COUNT(v), then SUM, MIN and MAX of v (NULL
   * where no row had a value).
   */
  private static List<Object> groupRow(Object key, long[] group) {
    boolean any = group[1] > 0;
    return Arrays.asList(key, group[0], group[1], any ? group[2] : null,
        any ? (int) group[3] : null, any ? (int) group[4] : null);
  }

  private static AggregateSpec filteredSpec(boolean ansi) {
    return new AggregateSpec(List.of(LONG, LONG), 1, List.of(
        new AggregateFunction(Kind.SUM, 1, LONG),
        new AggregateFunction(Kind.COUNT_ROWS, -1, LONG)), ansi);
  }

  @Test
  void theProgramFiltersAndComputesKeysAndInputs() {
    List<Object> k = Arrays.asList(1L, 1L, 2L, 2L, null, 3L);
    List<Object> x = Arrays.asList(5L, 10L, 5L, 5L, 7L, null);
    // Two batches: the aggregation keeps its groups across update(program, batch) calls.
    // x <> 5 drops the rows where x is 5 or NULL (so the group of k = 3 never starts).
    assertEquals(List.of(Arrays.asList(2L, 40L, 2L), Arrays.asList(null, 28L, 2L)),
        aggregate(filteredSpec(false), filteredProgram(false), List.of(LONG, LONG),
            List.of(List.of(k, x), List.of(k, x))));
  }

  @Test
  void anAnsiErrorInAKeptRowNamesTheRowAndOneInADroppedRowIsNoError() {
    long huge = Long.MAX_VALUE / 2 + 1; // huge * 2 overflows
    List<Object> k = Arrays.asList(1L, 1L, 1L, 1L);
    List<Object> dropped = Arrays.asList(1L, 5L, 2L, 5L);
    assertEquals(List.of(Arrays.asList(2L, 6L, 2L)),
        aggregate(filteredSpec(true), filteredProgram(true), List.of(LONG, LONG),
            List.of(List.of(k, dropped))));
    List<Object> kept = Arrays.asList(1L, 5L, huge, huge);
    RowErrorException e = assertThrows(RowErrorException.class, () -> aggregate(
        filteredSpec(true), filteredProgram(true), List.of(LONG, LONG),
        List.of(List.of(k, kept))));
    assertEquals(RowError.ARITHMETIC_OVERFLOW, e.error());
    assertEquals(2, e.row());
    // Without ANSI the same row wraps.
    assertEquals(List.of(Arrays.asList(2L, 2L + 2 * 2 * huge, 3L)),
        aggregate(filteredSpec(false), filteredProgram(false), List.of(LONG, LONG),
            List.of(List.of(k, kept))));
  }

  @Test
  void anUpdateAfterOneThatRaisedReportsNoErrorOfItsOwn() {
    long huge = Long.MAX_VALUE / 2 + 1; // huge * 2 overflows
    List<Object> k = Arrays.asList(1L, 1L, 1L, 1L);
    List<Object> kept = Arrays.asList(1L, 5L, huge, huge);
    List<Object> dropped = Arrays.asList(1L, 5L, 2L, 5L);
    HashAggregateKernel kernel = backend.hashAggregateKernel();
    try (HashAggregateKernel.Aggregation aggregation =
        kernel.open(filteredSpec(true), backend.deviceMemory(), stream)) {
      assertThrows(RowErrorException.class, () -> update(aggregation, filteredProgram(true),
          List.of(LONG, LONG), List.of(k, kept)));
      // What the failed batch left in its group is not defined; the next batch raises nothing.
      update(aggregation, filteredProgram(true), List.of(LONG, LONG), List.of(k, dropped));
      aggregation.finish().close();
    }
  }
}
