package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The dictionary decode, the same on every backend: every column type (the entries with NULLs,
 * NaN, -0.0, boundaries, empty and long strings), ids repeating, -1 ids giving NULL, several
 * columns at once, no rows (and, in HostDictionaryTest, ids outside the entries refused). The
 * expected rows are the entries looked up in plain Java.
 */
public abstract class DictionaryContractTest extends BackendTestBase {
  @Test
  void everyTypeDecodesToItsEntries() {
    for (ColumnType type : TestColumns.ALL_TYPES) {
      List<Object> entries = TestColumns.random(type, 37, 0.1, type.hashCode());
      List<Object> ids = randomIds(entries.size(), 1000, 0.2, 7);
      assertEquals(expected(entries, ids), decode(List.of(type), List.of(entries),
          List.of(ids)).get(0), type.toString());
    }
  }

  @Test
  void severalColumnsAtOnce() {
    List<ColumnType> types = List.of(ColumnType.LONG, ColumnType.STRING, ColumnType.DOUBLE);
    List<List<Object>> entries = new ArrayList<>();
    List<List<Object>> ids = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      entries.add(TestColumns.random(types.get(c), 5 + 100 * c, 0, c));
      ids.add(randomIds(entries.get(c).size(), 777, c == 1 ? 0 : 0.3, c));
    }
    List<List<Object>> decoded = decode(types, entries, ids);
    for (int c = 0; c < types.size(); c++) {
      assertEquals(expected(entries.get(c), ids.get(c)), decoded.get(c), "column " + c);
    }
  }

  @Test
  void noRows() {
    List<Object> entries = TestColumns.random(ColumnType.INT, 3, 0, 1);
    assertEquals(List.of(), decode(List.of(ColumnType.INT), List.of(entries),
        List.of(List.of())).get(0));
  }

  @Test
  void idsMustBeAnIntColumnPerDictionary() {
    List<Object> entries = TestColumns.random(ColumnType.INT, 3, 0, 1);
    try (ColumnBatch<DeviceColumn> dictionary = device(List.of(ColumnType.INT),
            List.of(entries));
        ColumnBatch<DeviceColumn> longIds = device(List.of(ColumnType.LONG),
            List.of(List.of(0L, 1L)))) {
      assertThrows(IllegalArgumentException.class, () -> backend.dictionaryKernel().decode(
          longIds.columns(), dictionary.columns(), 2, backend.deviceMemory(), stream));
      assertThrows(IllegalArgumentException.class, () -> backend.dictionaryKernel().decode(
          List.of(), dictionary.columns(), 2, backend.deviceMemory(), stream));
    }
  }

  /** Ids in [0, entries) with {@code nullFraction} of them -1, repeating. */
  private static List<Object> randomIds(int entries, int rows, double nullFraction, long seed) {
    Random random = new Random(seed);
    List<Object> ids = new ArrayList<>(rows);
    for (int r = 0; r < rows; r++) {
      ids.add(random.nextDouble() < nullFraction ? -1 : random.nextInt(entries));
    }
    return ids;
  }

  private static List<Object> expected(List<Object> entries, List<Object> ids) {
    List<Object> values = new ArrayList<>(ids.size());
    for (Object id : ids) {
      values.add((Integer) id < 0 ? null : entries.get((Integer) id));
    }
    return values;
  }

  private List<List<Object>> decode(List<ColumnType> types, List<List<Object>> entries,
      List<List<Object>> ids) {
    int rows = ids.get(0).size();
    List<ColumnType> idTypes = types.stream().map(t -> ColumnType.INT).toList();
    try (ColumnBatch<DeviceColumn> dictionary = device(types, entries);
        ColumnBatch<DeviceColumn> idColumns = device(idTypes, ids);
        ColumnBatch<DeviceColumn> decoded = backend.dictionaryKernel().decode(
            idColumns.columns(), dictionary.columns(), rows, backend.deviceMemory(), stream);
        ColumnBatch<HostColumn> back =
            ColumnTransfer.toHost(decoded, backend.stagingAllocator(), stream)) {
      assertEquals(rows, back.rowCount(), "rows");
      List<List<Object>> values = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        assertEquals(types.get(c), back.column(c).type(), "column " + c + "'s type");
        values.add(TestColumns.values(types.get(c), back.column(c)));
      }
      return values;
    }
  }

}
