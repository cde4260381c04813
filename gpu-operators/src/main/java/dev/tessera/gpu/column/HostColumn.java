package dev.tessera.gpu.column;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.ArrowBuf;

/**
 * A host staging column: Arrow buffers (normally in pinned memory, see
 * {@code StagingAllocators}) in the device layout, ready to copy to the device or just copied back.
 * Owns its buffers; {@link #close()} releases them. Build one with {@link HostColumnBuilder}.
 */
public final class HostColumn implements AutoCloseable {
  private final ColumnType type;
  private final int rowCount;
  private final int nullCount;
  private final ArrowBuf data;
  private final ArrowBuf validity;
  private final ArrowBuf offsets;
  private final long dataBytes;
  private boolean closed;

  /**
   * Takes ownership of the buffers: do not use or close them after this call.
   *
   * @param validity the validity bitmap, or null when no row is null
   * @param offsets rowCount + 1 int32 offsets for strings, null otherwise
   * @param dataBytes the bytes of {@code data} in use (rows x width, or text bytes for strings)
   */
  public HostColumn(ColumnType type, int rowCount, int nullCount, ArrowBuf data, ArrowBuf validity,
      ArrowBuf offsets, long dataBytes) {
    if (type.isString() != (offsets != null)) {
      throw new IllegalArgumentException("strings, and only strings, have offsets");
    }
    if (nullCount != 0 && validity == null) {
      throw new IllegalArgumentException(nullCount + " nulls but no validity bitmap");
    }
    this.type = type;
    this.rowCount = rowCount;
    this.nullCount = nullCount;
    this.data = data;
    this.validity = validity;
    this.offsets = offsets;
    this.dataBytes = dataBytes;
  }

  public ColumnType type() {
    return type;
  }

  public int rowCount() {
    return rowCount;
  }

  /** The number of nulls, or {@link DeviceColumn#UNKNOWN_NULL_COUNT} if nobody counted. */
  public int nullCount() {
    return nullCount;
  }

  /** The data buffer; {@link #dataBytes()} of it are in use. */
  public ArrowBuf data() {
    return data;
  }

  /** The validity bitmap ({@link Validity}), or null when there are no nulls. */
  public ArrowBuf validity() {
    return validity;
  }

  /** The int32 offsets of a string column, or null. */
  public ArrowBuf offsets() {
    return offsets;
  }

  public long dataBytes() {
    return dataBytes;
  }

  public boolean isNull(int row) {
    checkRow(row);
    return validity != null && (validity.getByte(row >>> 3) & (1 << (row & 7))) == 0;
  }

  public boolean getBoolean(int row) {
    return fixed(row, TypeId.BOOLEAN).getByte(row) != 0;
  }

  public byte getByte(int row) {
    return fixed(row, TypeId.BYTE).getByte(row);
  }

  public short getShort(int row) {
    return fixed(row, TypeId.SHORT).getShort((long) row * 2);
  }

  /** An INT, or a DATE's days since the epoch. */
  public int getInt(int row) {
    return fixed(row, TypeId.INT, TypeId.DATE).getInt((long) row * 4);
  }

  /** A LONG, a TIMESTAMP's microseconds, or a DECIMAL's unscaled value. */
  public long getLong(int row) {
    return fixed(row, TypeId.LONG, TypeId.TIMESTAMP, TypeId.DECIMAL).getLong((long) row * 8);
  }

  public float getFloat(int row) {
    return fixed(row, TypeId.FLOAT).getFloat((long) row * 4);
  }

  public double getDouble(int row) {
    return fixed(row, TypeId.DOUBLE).getDouble((long) row * 8);
  }

  public BigDecimal getDecimal(int row) {
    return new BigDecimal(BigInteger.valueOf(fixed(row, TypeId.DECIMAL).getLong((long) row * 8)),
        type.scale());
  }

  public byte[] getUtf8(int row) {
    checkRow(row);
    requireType(TypeId.STRING);
    int start = offsets.getInt((long) row * 4);
    int end = offsets.getInt((long) row * 4 + 4);
    byte[] bytes = new byte[end - start];
    data.getBytes(start, bytes);
    return bytes;
  }

  public String getString(int row) {
    return new String(getUtf8(row), StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    data.close();
    if (validity != null) {
      validity.close();
    }
    if (offsets != null) {
      offsets.close();
    }
  }

  private ArrowBuf fixed(int row, TypeId... accepted) {
    checkRow(row);
    requireType(accepted);
    return data;
  }

  private void requireType(TypeId... accepted) {
    for (TypeId id : accepted) {
      if (type.id() == id) {
        return;
      }
    }
    throw new IllegalStateException("a " + type + " column has no such accessor");
  }

  private void checkRow(int row) {
    if (closed) {
      throw new IllegalStateException("column used after close");
    }
    if (row < 0 || row >= rowCount) {
      throw new IndexOutOfBoundsException("row " + row + " of " + rowCount);
    }
  }
}
