package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The top-k's results, the same on every backend, against a stable sort of every row in plain
 * Java (its own comparison of Java values, not the backend's): every key type in both directions
 * and both NULL orders, several keys with heavy ties, NaN and -0.0, k of 1, 256, 257 and larger
 * than the input, empty batches and no batches. Ties keep the order rows arrived in, so the
 * expected rows are exact, payload included.
 */
public abstract class TopKContractTest extends BackendTestBase {
  private static final int BATCH_ROWS = 300;

  /** The top-k of {@code batches} (columns of Java values), as rows of Java values. */
  private List<List<Object>> topK(TopKSpec spec, List<List<List<Object>>> batches) {
    try (TopKKernel.Running running = backend.topKKernel().open(spec, backend.deviceMemory(),
        stream)) {
      for (int b = 0; b < batches.size(); b++) {
        try (ColumnBatch<DeviceColumn> batch = device(spec.columnTypes(), batches.get(b))) {
          running.add(batch);
        }
        assertEquals(Math.min(spec.limit(), rowsIn(batches, b)), running.rowCount(),
            "rows held");
      }
      try (ColumnBatch<DeviceColumn> result = running.finish()) {
        return rows(spec.columnTypes(), result);
      }
    }
  }

  private static int rowsIn(List<List<List<Object>>> batches, int through) {
    int rows = 0;
    for (int b = 0; b <= through; b++) {
      rows += batches.get(b).get(0).size();
    }
    return rows;
  }


  private List<List<Object>> rows(List<ColumnType> types, ColumnBatch<DeviceColumn> batch) {
    assertEquals(types.size(), batch.columns().size(), "columns");
    try (ColumnBatch<HostColumn> back =
        ColumnTransfer.toHost(batch, backend.stagingAllocator(), stream)) {
      List<List<Object>> rows = new ArrayList<>();
      for (int r = 0; r < back.rowCount(); r++) {
        rows.add(new ArrayList<>());
      }
      for (int c = 0; c < types.size(); c++) {
        assertEquals(types.get(c), back.column(c).type(), "column " + c + "'s type");
        List<Object> values = TestColumns.values(types.get(c), back.column(c));
        for (int r = 0; r < back.rowCount(); r++) {
          rows.get(r).add(values.get(r));
        }
      }
      return rows;
    }
  }

  /** The first {@code limit} rows of every batch's, by a stable sort in plain Java. */
  private static List<List<Object>> expected(TopKSpec spec, List<List<List<Object>>> batches) {
    List<List<Object>> all = new ArrayList<>();
    for (List<List<Object>> columns : batches) {
      for (int r = 0; r < columns.get(0).size(); r++) {
        List<Object> row = new ArrayList<>();
        for (List<Object> column : columns) {
          row.add(column.get(r));
        }
        all.add(row);
      }
    }
    Comparator<List<Object>> order = (a, b) -> 0;
    for (SortKey key : spec.keys()) {
      order = order.thenComparing((a, b) -> compareKey(key, a.get(key.column()),
          b.get(key.column())));
    }
    all.sort(order); // stable: ties stay in arrival order
    return all.subList(0, Math.min(spec.limit(), all.size()));
  }

  private static int compareKey(SortKey key, Object a, Object b) {
    if (a == null || b == null) {
      if (a == b) {
        return 0;
      }
      return (a == null) == key.nullsFirst() ? -1 : 1;
    }
    int c = compareValues(a, b);
    return key.descending() ? -c : c;
  }

  /** Spark's order of two non-NULL Java values of one type. */
  private static int compareValues(Object a, Object b) {
    if (a instanceof String x) {
      return Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8),
          ((String) b).getBytes(StandardCharsets.UTF_8));
    }
    if (a instanceof Float || a instanceof Double) {
      // Double.compare puts NaN last and equal to itself; Spark also has -0.0 = 0.0.
      double x = ((Number) a).doubleValue();
      double y = ((Number) b).doubleValue();
      return Double.compare(x == 0 ? 0.0 : x, y == 0 ? 0.0 : y);
    }
    if (a instanceof BigDecimal x) {
      return x.compareTo((BigDecimal) b);
    }
    if (a instanceof Boolean x) {
      return Boolean.compare(x, (Boolean) b);
    }
    return Long.compare(((Number) a).longValue(), ((Number) b).longValue());
  }

  /** Batches of random key columns and a LONG row number (the payload that tells rows apart). */
  private static List<List<List<Object>>> randomBatches(List<ColumnType> keyTypes, int batches,
      int rowsPerBatch, double nullFraction, long seed) {
    List<List<List<Object>>> all = new ArrayList<>();
    long row = 0;
    for (int b = 0; b < batches; b++) {
      List<List<Object>> columns = new ArrayList<>();
      for (int k = 0; k < keyTypes.size(); k++) {
        columns.add(TestColumns.random(keyTypes.get(k), rowsPerBatch, nullFraction,
            seed + 31L * b + k));
      }
      List<Object> rowNumbers = new ArrayList<>();
      for (int r = 0; r < rowsPerBatch; r++) {
        rowNumbers.add(row++);
      }
      columns.add(rowNumbers);
      all.add(columns);
    }
    return all;
  }

  private static List<ColumnType> withRowNumber(List<ColumnType> keyTypes) {
    List<ColumnType> types = new ArrayList<>(keyTypes);
    types.add(ColumnType.LONG);
    return types;
  }

  static Stream<Arguments> everyTypeAndOrder() {
    List<Arguments> cases = new ArrayList<>();
    for (ColumnType type : TestColumns.ALL_TYPES) {
      for (boolean descending : new boolean[] {false, true}) {
        for (boolean nullsFirst : new boolean[] {false, true}) {
          cases.add(Arguments.of(type, descending, nullsFirst));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} descending={1} nullsFirst={2}")
  @MethodSource("everyTypeAndOrder")
  void oneKeyOfEveryTypeInEitherDirectionAndNullOrder(ColumnType type, boolean descending,
      boolean nullsFirst) {
    TopKSpec spec = new TopKSpec(withRowNumber(List.of(type)),
        List.of(new SortKey(0, descending, nullsFirst)), 40);
    List<List<List<Object>>> batches = randomBatches(List.of(type), 3, BATCH_ROWS, 0.1,
        type.hashCode());
    assertEquals(expected(spec, batches), topK(spec, batches));
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 256, 257, 899, 900, 5000})
  void anyLimitKeepsTheFirstRows(int limit) {
    // 900 rows in three batches: limits below, at and above the input's size.
    List<ColumnType> keys = List.of(ColumnType.INT, ColumnType.STRING);
    TopKSpec spec = new TopKSpec(withRowNumber(keys),
        List.of(SortKey.descending(0), SortKey.ascending(1)), limit);
    List<List<List<Object>>> batches = randomBatches(keys, 3, BATCH_ROWS, 0.05, limit);
    assertEquals(expected(spec, batches), topK(spec, batches));
  }

  @Test
  void heavyTiesAcrossSeveralKeysOfMixedDirections() {
    // Few distinct values per key: most rows tie on the first key, many on the first two.
    List<ColumnType> types = List.of(ColumnType.BOOLEAN, ColumnType.BYTE, ColumnType.STRING,
        ColumnType.LONG);
    List<List<List<Object>>> batches = new ArrayList<>();
    long row = 0;
    for (int b = 0; b < 4; b++) {
      List<List<Object>> columns = List.of(new ArrayList<>(), new ArrayList<>(),
          new ArrayList<>(), new ArrayList<>());
      for (int r = 0; r < 250; r++, row++) {
        columns.get(0).add(row % 7 == 0 ? null : row % 3 == 0);
        columns.get(1).add(row % 11 == 0 ? null : (byte) (row % 4 - 2));
        columns.get(2).add(new String[] {"", "b", "a", "ab", "é", null}[(int) (row % 6)]);
        columns.get(3).add(row);
      }
      batches.add(columns);
    }
    TopKSpec spec = new TopKSpec(types, List.of(new SortKey(0, true, true),
        new SortKey(1, false, false), new SortKey(2, true, true)), 123);
    assertEquals(expected(spec, batches), topK(spec, batches));
  }

  @Test
  void nanAndSignedZerosInSparksOrder() {
    List<Object> doubles = Arrays.asList(Double.NaN, -0.0, 0.0, Double.NEGATIVE_INFINITY,
        Double.POSITIVE_INFINITY, 1.5, null, -1.5, Double.NaN, 0.0, -0.0);
    List<Object> floats = Arrays.asList(-0.0f, Float.NaN, 0.0f, null, Float.MAX_VALUE,
        Float.NEGATIVE_INFINITY, -0.0f, 2.5f, Float.NaN, 0.0f, -3f);
    List<Object> ids = new ArrayList<>();
    for (long i = 0; i < doubles.size(); i++) {
      ids.add(i);
    }
    List<ColumnType> types = List.of(ColumnType.DOUBLE, ColumnType.FLOAT, ColumnType.LONG);
    for (SortKey first : List.of(SortKey.ascending(0), SortKey.descending(0),
        SortKey.ascending(1), SortKey.descending(1))) {
      TopKSpec spec = new TopKSpec(types, List.of(first), 6);
      List<List<List<Object>>> batches = List.of(List.of(doubles, floats, ids));
      List<List<Object>> result = topK(spec, batches);
      assertEquals(expected(spec, batches), result, "by " + first);
    }
  }

  @Test
  void allNullKeysKeepTheirArrivalOrder() {
    List<Object> keys = Arrays.asList(null, null, null, null, null);
    List<Object> ids = List.of(0L, 1L, 2L, 3L, 4L);
    TopKSpec spec = new TopKSpec(List.of(ColumnType.INT, ColumnType.LONG),
        List.of(SortKey.descending(0)), 3);
    List<List<List<Object>>> batches = List.of(List.of(keys, ids), List.of(keys, ids));
    assertEquals(List.of(List.of(0L), List.of(1L), List.of(2L)),
        topK(spec, batches).stream().map(r -> r.subList(1, 2)).toList());
  }

  @Test
  void emptyBatchesAndNoBatchesGiveTheRightColumns() {
    List<ColumnType> types = List.of(ColumnType.STRING, ColumnType.decimal(12, 2),
        ColumnType.DATE);
    TopKSpec spec = new TopKSpec(types, List.of(SortKey.ascending(1)), 10);
    assertEquals(List.of(), topK(spec, List.of()));
    List<List<Object>> empty = List.of(List.of(), List.of(), List.of());
    List<List<Object>> some = List.of(Arrays.asList("x", null, "y"),
        Arrays.asList(new BigDecimal("1.50"), new BigDecimal("-2.00"), null),
        Arrays.asList(1, 2, 3));
    List<List<List<Object>>> batches = List.of(empty, some, empty);
    assertEquals(expected(spec, batches), topK(spec, batches));
  }

  @Test
  void aFinishedTopKTakesNoMoreBatches() {
    TopKSpec spec = new TopKSpec(List.of(ColumnType.INT), List.of(SortKey.ascending(0)), 2);
    try (TopKKernel.Running running = backend.topKKernel().open(spec, backend.deviceMemory(),
        stream)) {
      running.finish().close();
      try (ColumnBatch<DeviceColumn> batch = device(spec.columnTypes(),
          List.of(List.of(1, 2)))) {
        assertThrows(IllegalStateException.class, () -> running.add(batch));
      }
      assertThrows(IllegalStateException.class, running::finish);
    }
  }
}
