package dev.tessera.spark.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** A cached batch read back for Spark's CPU operators, one slice of rows at a time. */
class CachedBatchReaderTest {
  @Test
  void aBatchIsReadAsSlicesHoldingItsRowsInOrder() {
    int rows = 2 * CachedBatchReader.SLICE_ROWS + 700;
    List<ColumnType> types = List.of(ColumnType.LONG, ColumnType.STRING, ColumnType.INT);
    Iterator<InternalRow> input = IntStream.range(0, rows).<InternalRow>mapToObj(i ->
        new GenericInternalRow(new Object[] {
            i % 7 == 3 ? null : (long) i * 1_000_003L, // sorted apart from the NULLs: GPU-DFOR
            i % 5 == 1 ? null : UTF8String.fromString(i % 3 == 0 ? "" : "nation-" + i % 25),
            i % 11 - 5})) // GPU-FOR
        .iterator();
    TesseraCachedBatch batch = (TesseraCachedBatch)
        new CachedBatchBuilder(types, 1 << 22, Long.MAX_VALUE).fromRows(input).next();
    assertEquals(rows, batch.numRows());

    // The string and the long column, selected in that order.
    Iterator<ColumnarBatch> slices = CachedBatchReader.read(batch, new int[] {1, 0},
        new DataType[] {DataTypes.StringType, DataTypes.LongType});
    List<Integer> sizes = new ArrayList<>();
    int row = 0;
    while (slices.hasNext()) {
      ColumnarBatch slice = slices.next();
      sizes.add(slice.numRows());
      for (int r = 0; r < slice.numRows(); r++, row++) {
        assertEquals(row % 5 == 1, slice.column(0).isNullAt(r), "string NULL at " + row);
        if (row % 5 != 1) {
          assertEquals(row % 3 == 0 ? "" : "nation-" + row % 25,
              slice.column(0).getUTF8String(r).toString(), "string at " + row);
        }
        assertEquals(row % 7 == 3, slice.column(1).isNullAt(r), "long NULL at " + row);
        if (row % 7 != 3) {
          assertEquals((long) row * 1_000_003L, slice.column(1).getLong(r), "long at " + row);
        }
      }
    }
    assertEquals(List.of(CachedBatchReader.SLICE_ROWS, CachedBatchReader.SLICE_ROWS, 700),
        sizes);
    assertEquals(rows, row);
  }

  @Test
  void aBatchOfOneSliceIsOneColumnarBatch() {
    Iterator<InternalRow> input = IntStream.range(0, 3)
        .<InternalRow>mapToObj(i -> new GenericInternalRow(new Object[] {i}))
        .iterator();
    TesseraCachedBatch batch = (TesseraCachedBatch) new CachedBatchBuilder(
        List.of(ColumnType.INT), 1 << 22, Long.MAX_VALUE).fromRows(input).next();
    Iterator<ColumnarBatch> slices =
        CachedBatchReader.read(batch, new int[] {0}, new DataType[] {DataTypes.IntegerType});
    assertTrue(slices.hasNext());
    ColumnarBatch slice = slices.next();
    assertEquals(3, slice.numRows());
    assertEquals(2, slice.column(0).getInt(2));
    assertFalse(slices.hasNext());
  }
}
