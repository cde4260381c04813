package dev.tessera.gpu.column;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.memory.DeviceBuffer;

/**
 * A column in device memory, in the layout of {@link HostColumn}: a data buffer, a validity
 * bitmap ({@link Validity}; null when no row is null) and, for strings, rowCount + 1 int32
 * offsets. Owns its buffers, or borrows them (see {@link #borrowed}).
 *
 * <p>A column of a cached table may be {@linkplain #encoding() encoded} (GPU-FOR or GPU-DFOR,
 * {@code codec.GpuForLayout}): its values are then {@link #words()} and {@link #blockStarts()},
 * decoded by the kernels as they load them; a fixed-width encoded column's {@code data} is its
 * words, and a dictionary-encoded string column's {@code data} and {@code offsets} are its
 * dictionary's (the words hold the codes). Only kernels that run programs read encoded columns.
 */
public final class DeviceColumn implements AutoCloseable {
  private final ColumnType type;
  private final int rowCount;
  private final int nullCount;
  private final DeviceBuffer data;
  private final DeviceBuffer validity;
  private final DeviceBuffer offsets;
  private final long dataBytes;
  private final Encoding encoding;
  private final DeviceBuffer words;
  private final DeviceBuffer blockStarts;
  private final AutoCloseable release;
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
    this(type, rowCount, nullCount, data, validity, offsets, dataBytes, Encoding.PLAIN, null,
        null, null);
  }

  private DeviceColumn(ColumnType type, int rowCount, int nullCount, DeviceBuffer data,
      DeviceBuffer validity, DeviceBuffer offsets, long dataBytes, Encoding encoding,
      DeviceBuffer words, DeviceBuffer blockStarts, AutoCloseable release) {
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
    this.encoding = encoding;
    this.words = words;
    this.blockStarts = blockStarts;
    this.release = release;
    if ((encoding != Encoding.PLAIN) != (blockStarts != null && words != null)) {
      throw new IllegalArgumentException("encoded columns, and only they, have words and block"
          + " starts");
    }
    if (dataBytes > data.size()) {
      throw new IllegalArgumentException(dataBytes + " data bytes in a buffer of " + data.size());
    }
  }

  /**
   * An encoded column (GPU-FOR or GPU-DFOR) whose buffers someone else owns (the executor's device
   * store): closing the column runs {@code release} instead of closing them.
   *
   * @param words the encoded values (a string column's codes)
   * @param dictionaryBytes a dictionary-encoded string column's dictionary bytes; null otherwise
   * @param dictionaryOffsets that dictionary's int32 offsets (entries + 1); null otherwise
   */
  public static DeviceColumn borrowedEncoded(ColumnType type, int rowCount, int nullCount,
      Encoding encoding, DeviceBuffer words, DeviceBuffer blockStarts, DeviceBuffer validity,
      DeviceBuffer dictionaryBytes, DeviceBuffer dictionaryOffsets, AutoCloseable release) {
    if (encoding == Encoding.PLAIN) {
      throw new IllegalArgumentException("use borrowed for a plain column");
    }
    DeviceBuffer data = type.isString() ? dictionaryBytes : words;
    return new DeviceColumn(type, rowCount, nullCount, data, validity, dictionaryOffsets,
        data.size(), encoding, words, blockStarts, release);
  }

  /** A plain column whose buffers someone else owns; closing it runs {@code release}. */
  public static DeviceColumn borrowed(ColumnType type, int rowCount, int nullCount,
      DeviceBuffer data, DeviceBuffer validity, DeviceBuffer offsets, long dataBytes,
      AutoCloseable release) {
    return new DeviceColumn(type, rowCount, nullCount, data, validity, offsets, dataBytes,
        Encoding.PLAIN, null, null, release);
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

  /** How the values are stored; anything but PLAIN only in columns of cached tables. */
  public Encoding encoding() {
    return encoding;
  }

  public boolean isEncoded() {
    return encoding != Encoding.PLAIN;
  }

  /** An encoded column's words (its values, or a string column's codes); null when plain. */
  public DeviceBuffer words() {
    return words;
  }

  /** An encoded column's int32 block starts; null when plain. */
  public DeviceBuffer blockStarts() {
    return blockStarts;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (release != null) {
      try {
        release.close();
      } catch (Exception e) {
        throw new IllegalStateException("releasing a borrowed column failed", e);
      }
      return;
    }
    data.close();
    if (validity != null) {
      validity.close();
    }
    if (offsets != null) {
      offsets.close();
    }
  }
}
