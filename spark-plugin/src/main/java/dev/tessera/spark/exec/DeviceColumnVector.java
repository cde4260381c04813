package dev.tessera.spark.exec;

import dev.tessera.gpu.column.DeviceColumn;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A device column passed between Tessera's GPU nodes inside a Spark {@code ColumnarBatch}. Its
 * values are on the device: only GPU nodes read it (through {@link #column()}); any other reader
 * is a planning bug and fails loudly. Closing the batch closes the device column.
 */
public final class DeviceColumnVector extends ColumnVector {
  private final DeviceColumn column;

  /** Takes ownership of {@code column}. */
  public DeviceColumnVector(DataType type, DeviceColumn column) {
    super(type);
    this.column = column;
  }

  public DeviceColumn column() {
    return column;
  }

  @Override
  public void close() {
    column.close();
  }

  @Override
  public boolean hasNull() {
    return column.nullCount() != 0;
  }

  @Override
  public int numNulls() {
    return column.nullCount();
  }

  private UnsupportedOperationException onDevice() {
    return new UnsupportedOperationException("Tessera bug: a CPU operator read a column that is"
        + " still in GPU memory; a device-to-host transition is missing in the plan");
  }

  @Override
  public boolean isNullAt(int rowId) {
    throw onDevice();
  }

  @Override
  public boolean getBoolean(int rowId) {
    throw onDevice();
  }

  @Override
  public byte getByte(int rowId) {
    throw onDevice();
  }

  @Override
  public short getShort(int rowId) {
    throw onDevice();
  }

  @Override
  public int getInt(int rowId) {
    throw onDevice();
  }

  @Override
  public long getLong(int rowId) {
    throw onDevice();
  }

  @Override
  public float getFloat(int rowId) {
    throw onDevice();
  }

  @Override
  public double getDouble(int rowId) {
    throw onDevice();
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw onDevice();
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    throw onDevice();
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw onDevice();
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw onDevice();
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw onDevice();
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw onDevice();
  }
}
