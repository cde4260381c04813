package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.GpuForLayout;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A cached batch decoded on the host, for Spark's CPU operators: the selected columns as Spark's
 * on-heap column vectors, decoded with the reference codec, a slice of {@link #SLICE_ROWS} rows
 * at a time, so that a CPU plan reading a batch of millions of rows holds one slice's values at
 * once, not the batch's.
 */
final class CachedBatchReader {
  /** Rows of one slice: whole GPU-DFOR sets (GpuForLayout.SET_VALUES), where a decode can start. */
  static final int SLICE_ROWS = 128 * GpuForLayout.SET_VALUES;

  private CachedBatchReader() {}

  /** Columns {@code ordinals} of {@code batch}, of Spark types {@code types}, slice by slice. */
  static Iterator<ColumnarBatch> read(TesseraCachedBatch batch, int[] ordinals,
      DataType[] types) {
    int rows = batch.numRows();
    return new Iterator<>() {
      private int from = 0;

      @Override
      public boolean hasNext() {
        return from < rows;
      }

      @Override
      public ColumnarBatch next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        int count = Math.min(SLICE_ROWS, rows - from);
        ColumnarBatch slice = slice(batch, ordinals, types, from, count);
        from += count;
        return slice;
      }
    };
  }

  private static ColumnarBatch slice(TesseraCachedBatch batch, int[] ordinals, DataType[] types,
      int from, int count) {
    ColumnVector[] vectors = new ColumnVector[ordinals.length];
    for (int i = 0; i < ordinals.length; i++) {
      OnHeapColumnVector vector = new OnHeapColumnVector(count, types[i]);
      fill(batch.column(ordinals[i]), from, count, vector);
      vectors[i] = vector;
    }
    return new ColumnarBatch(vectors, count);
  }

  /** Rows {@code [from, from + count)} of {@code column} into {@code out} from its row 0. */
  private static void fill(EncodedColumn column, int from, int count, WritableColumnVector out) {
    if (column.type().isString()) {
      fillStrings(column, from, count, out);
      return;
    }
    long[] values = column.decodeFixed(from, count);
    for (int r = 0; r < count; r++) {
      if (column.isNull(from + r)) {
        out.putNull(r);
        continue;
      }
      switch (column.type().id()) {
        case BOOLEAN -> out.putBoolean(r, values[r] != 0);
        case BYTE -> out.putByte(r, (byte) values[r]);
        case SHORT -> out.putShort(r, (short) values[r]);
        case INT, DATE -> out.putInt(r, (int) values[r]);
        case LONG, TIMESTAMP -> out.putLong(r, values[r]);
        case FLOAT -> out.putFloat(r, Float.intBitsToFloat((int) values[r]));
        case DOUBLE -> out.putDouble(r, Double.longBitsToDouble(values[r]));
        case DECIMAL -> out.putDecimal(r,
            Decimal.createUnsafe(values[r], column.type().precision(), column.type().scale()),
            column.type().precision());
        default -> throw new IllegalStateException(column.type() + " is not fixed-width");
      }
    }
  }

  /**
   * A string column's rows, copied into {@code out} straight from the column's bytes: a
   * dictionary's by each row's code, so a slice allocates nothing per row or per entry.
   */
  private static void fillStrings(EncodedColumn column, int from, int count,
      WritableColumnVector out) {
    byte[] bytes = column.bytes();
    int[] offsets = column.offsets();
    int[] codes = column.isDictionary() ? column.decodeCodes(from, count) : null;
    for (int r = 0; r < count; r++) {
      if (column.isNull(from + r)) {
        out.putNull(r);
        continue;
      }
      int entry = codes == null ? from + r : codes[r];
      out.putByteArray(r, bytes, offsets[entry], offsets[entry + 1] - offsets[entry]);
    }
  }
}
