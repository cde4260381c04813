package dev.tessera.spark.exec;

import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A host staging column (just copied back from the device) seen through Spark's ColumnVector, so
 * Spark's row iterator and projections can read it. Strings point into the staging memory: a
 * reader that keeps them must copy (Spark's UnsafeProjection does).
 */
final class HostColumnVector extends ColumnVector {
  private final HostColumn column;
  private final boolean owned;
  private int nulls = -1;

  private HostColumnVector(DataType type, HostColumn column, boolean owned) {
    super(type);
    this.column = column;
    this.owned = owned;
  }

  /** A vector that owns {@code column}: closing it closes the column. */
  static HostColumnVector owning(DataType type, HostColumn column) {
    return new HostColumnVector(type, column, true);
  }

  /** A vector over {@code column}, which its owner closes. */
  static HostColumnVector view(DataType type, HostColumn column) {
    return new HostColumnVector(type, column, false);
  }

  @Override
  public void close() {
    if (owned) {
      column.close();
    }
  }

  @Override
  public boolean hasNull() {
    return column.validity() != null && numNulls() > 0;
  }

  @Override
  public int numNulls() {
    if (column.nullCount() != DeviceColumn.UNKNOWN_NULL_COUNT) {
      return column.nullCount();
    }
    if (nulls < 0) {
      int n = 0;
      for (int i = 0; i < column.rowCount(); i++) {
        n += column.isNull(i) ? 1 : 0;
      }
      nulls = n;
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return column.isNull(rowId);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return column.getBoolean(rowId);
  }

  @Override
  public byte getByte(int rowId) {
    return column.getByte(rowId);
  }

  @Override
  public short getShort(int rowId) {
    return column.getShort(rowId);
  }

  @Override
  public int getInt(int rowId) {
    return column.getInt(rowId);
  }

  @Override
  public long getLong(int rowId) {
    return column.getLong(rowId);
  }

  @Override
  public float getFloat(int rowId) {
    return column.getFloat(rowId);
  }

  @Override
  public double getDouble(int rowId) {
    return column.getDouble(rowId);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return column.isNull(rowId) ? null
        : Decimal.createUnsafe(column.getLong(rowId), precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (column.isNull(rowId)) {
      return null;
    }
    int start = column.offsets().getInt(4L * rowId);
    int end = column.offsets().getInt(4L * rowId + 4);
    return UTF8String.fromAddress(null, column.data().memoryAddress() + start, end - start);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw new UnsupportedOperationException("no arrays in device columns");
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    throw new UnsupportedOperationException("no maps in device columns");
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw new UnsupportedOperationException("no binary in device columns");
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw new UnsupportedOperationException("no structs in device columns");
  }
}
