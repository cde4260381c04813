package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A cached batch decoded on the host, for Spark's CPU operators: the selected columns as Spark's
 * on-heap column vectors, decoded with the reference codec.
 */
final class CachedBatchReader {
  private CachedBatchReader() {}

  /** Columns {@code ordinals} of {@code batch}, of Spark types {@code types}. */
  static ColumnarBatch read(TesseraCachedBatch batch, int[] ordinals, DataType[] types) {
    int rows = batch.numRows();
    ColumnVector[] vectors = new ColumnVector[ordinals.length];
    for (int i = 0; i < ordinals.length; i++) {
      OnHeapColumnVector vector = new OnHeapColumnVector(rows, types[i]);
      fill(batch.column(ordinals[i]), vector);
      vectors[i] = vector;
    }
    return new ColumnarBatch(vectors, rows);
  }

  private static void fill(EncodedColumn column, WritableColumnVector out) {
    int rows = column.rowCount();
    long[] values = column.type().isString() ? null : column.decodeFixed();
    byte[][] strings = column.type().isString() ? column.decodeStrings() : null;
    for (int r = 0; r < rows; r++) {
      if (column.isNull(r)) {
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
        case STRING -> {
          byte[] utf8 = strings[r];
          out.putByteArray(r, utf8, 0, utf8.length);
        }
      }
    }
  }
}
