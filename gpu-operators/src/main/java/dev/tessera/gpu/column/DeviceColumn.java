package dev.tessera.gpu.column;

import dev.tessera.gpu.memory.DeviceBuffer;

/**
 * A column in device memory, in the layout of {@link HostColumn}: a data buffer, a validity
 * bitmap ({@link Validity}; null when no row is null) and, for strings, rowCount + 1 int32
 * offsets. Owns its buffers.
 */
public final class DeviceColumn implements AutoCloseable {
  private final ColumnType type;
  private final int rowCount;
  private final int nullCount;
  private final DeviceBuffer data;
  private final DeviceBuffer validity;
  private final DeviceBuffer offsets;
  private final long dataBytes;
  private boolean closed;

  /**
   * Takes ownership of the buffers: do not use or close them after this call.
   *
   * @param nullCount the number of nulls, or {@link #UNKNOWN_NULL_COUNT} when a kernel produced
   *     the column and nobody counted
   * @param dataBytes the bytes of {@code data} in use (the buffer may be larger, as a kernel's
   *     output sized for the worst case is)
   */
  public DeviceColumn(ColumnType type, int rowCount, int nullCount, DeviceBuffer data,
      DeviceBuffer validity, DeviceBuffer offsets, long dataBytes) {
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
    if (dataBytes > data.size()) {
      throw new IllegalArgumentException(dataBytes + " data bytes in a buffer of " + data.size());
    }
  }

  /** A null count nobody computed. */
  public static final int UNKNOWN_NULL_COUNT = -1;

  public ColumnType type() {
    return type;
  }

  public int rowCount() {
    return rowCount;
  }

  public int nullCount() {
    return nullCount;
  }

  /** The data buffer; {@link #dataBytes()} of it are in use. */
  public DeviceBuffer data() {
    return data;
  }

  public long dataBytes() {
    return dataBytes;
  }

  /** The validity bitmap, or null when no row is null. */
  public DeviceBuffer validity() {
    return validity;
  }

  /** The string offsets, or null. */
  public DeviceBuffer offsets() {
    return offsets;
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
}
