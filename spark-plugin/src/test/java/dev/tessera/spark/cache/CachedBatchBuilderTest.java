package dev.tessera.spark.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** How a partition's rows are cut into cached batches: by rows, and by the heap they take. */
class CachedBatchBuilderTest {
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.STRING);
  private static final int TILE = GpuForLayout.SET_VALUES;

  /** Row i: (i, "value-i"), every seventh value NULL, every eleventh string empty. */
  private static Iterator<InternalRow> rows(int count) {
    return IntStream.range(0, count).<InternalRow>mapToObj(i -> new GenericInternalRow(
        new Object[] {
            i % 7 == 3 ? null : (long) i,
            i % 7 == 5 ? null : UTF8String.fromString(i % 11 == 0 ? "" : "value-" + i)}))
        .iterator();
  }

  private static List<TesseraCachedBatch> batches(int rows, int batchRows, long heapBytes) {
    List<TesseraCachedBatch> batches = new ArrayList<>();
    Iterator<CachedBatch> it =
        new CachedBatchBuilder(TYPES, batchRows, heapBytes).fromRows(rows(rows));
    it.forEachRemaining(b -> batches.add((TesseraCachedBatch) b));
    return batches;
  }

  /** Every row of {@code batches}, in order, as the rows they were built from. */
  private static void assertHoldsTheRows(int rows, List<TesseraCachedBatch> batches) {
    int row = 0;
    for (TesseraCachedBatch batch : batches) {
      long[] longs = batch.column(0).decodeFixed();
      byte[][] strings = batch.column(1).decodeStrings();
      for (int r = 0; r < batch.numRows(); r++, row++) {
        assertEquals(row % 7 == 3, batch.column(0).isNull(r), "NULL long at row " + row);
        if (row % 7 != 3) {
          assertEquals(row, longs[r], "long at row " + row);
        }
        assertEquals(row % 7 == 5, batch.column(1).isNull(r), "NULL string at row " + row);
        if (row % 7 != 5) {
          String expected = row % 11 == 0 ? "" : "value-" + row;
          assertArrayEquals(expected.getBytes(StandardCharsets.UTF_8), strings[r],
              "string at row " + row);
        }
      }
    }
    assertEquals(rows, row);
  }

  @Test
  void batchesHoldBatchRowsRowsWhileTheHeapAllows() {
    int rows = 5 * TILE + 37;
    List<TesseraCachedBatch> batches = batches(rows, 2 * TILE, Long.MAX_VALUE);
    assertEquals(List.of(2 * TILE, 2 * TILE, TILE + 37),
        batches.stream().map(TesseraCachedBatch::numRows).toList());
    assertHoldsTheRows(rows, batches);
  }

  @Test
  void aBatchClosesAtTheFirstWholeTileOverTheHeapBound() {
    // Each row takes 9 bytes for the long and 9 + 16 + 8 or 16 for a string that is not NULL.
    ColumnAccumulator probe = new ColumnAccumulator(ColumnType.STRING, 16);
    rows(TILE).forEachRemaining(r -> probe.add(r, 1));
    long tileOfStrings = probe.heapBytes();
    assertTrue(tileOfStrings > TILE * 9L, "strings count their arrays: " + tileOfStrings);

    int rows = 10 * TILE + 100;
    // Bound at about two and a half tiles of both columns: batches close after three tiles.
    long bound = (long) (2.5 * (tileOfStrings + TILE * 9L));
    List<TesseraCachedBatch> batches = batches(rows, 1 << 22, bound);
    assertEquals(List.of(3 * TILE, 3 * TILE, 3 * TILE, TILE + 100),
        batches.stream().map(TesseraCachedBatch::numRows).toList());
    assertHoldsTheRows(rows, batches);
  }

  @Test
  void aBoundBelowOneTileStillFillsWholeTiles() {
    int rows = 3 * TILE + 1;
    List<TesseraCachedBatch> batches = batches(rows, 1 << 22, 1);
    assertEquals(List.of(TILE, TILE, TILE, 1),
        batches.stream().map(TesseraCachedBatch::numRows).toList());
    assertHoldsTheRows(rows, batches);
  }

  @Test
  void theAutomaticBoundIsAShareOfThisHeap() {
    long share = CachedBatchBuilder.executorShare();
    assertTrue(share > 0 && share <= Runtime.getRuntime().maxMemory() / 2, "share " + share);
    assertHoldsTheRows(TILE + 1, batches(TILE + 1, 1 << 22, 0));
    assertThrows(IllegalArgumentException.class,
        () -> new CachedBatchBuilder(TYPES, TILE, -1));
  }

  @Test
  void nullsAndFixedValuesCountTheirSlots() {
    ColumnAccumulator longs = new ColumnAccumulator(ColumnType.LONG, 4);
    longs.add(new GenericInternalRow(new Object[] {5L}), 0);
    longs.add(new GenericInternalRow(new Object[] {null}), 0);
    assertEquals(18, longs.heapBytes());
    ColumnAccumulator strings = new ColumnAccumulator(ColumnType.STRING, 4);
    strings.add(new GenericInternalRow(new Object[] {UTF8String.fromString("")}), 0);
    strings.add(new GenericInternalRow(new Object[] {UTF8String.fromString("123456789")}), 0);
    strings.add(new GenericInternalRow(new Object[] {null}), 0);
    assertEquals((9 + 16) + (9 + 16 + 16) + 9, strings.heapBytes());
  }
}
