package dev.tessera.gpu.column;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * Appends values to a new {@link HostColumn}, growing its buffers as needed. Typed appends check
 * the column's type; a null is {@link #appendNull()}. {@link #build()} hands the buffers to the
 * column; closing an unbuilt builder releases them.
 */
public final class HostColumnBuilder implements AutoCloseable {
  private final ColumnType type;
  private final BufferAllocator allocator;
  private ArrowBuf data;
  private ArrowBuf validity;
  private ArrowBuf offsets;
  private int rows;
  private int nulls;
  private int rowCapacity;
  private long dataBytes;

  public HostColumnBuilder(ColumnType type, int initialRows, BufferAllocator allocator) {
    this(type, initialRows, 8L * Math.max(initialRows, 16), allocator);
  }

  /**
   * A builder with room for {@code initialRows} rows and, for strings, {@code initialTextBytes}
   * bytes of text, before its buffers grow.
   */
  public HostColumnBuilder(ColumnType type, int initialRows, long initialTextBytes,
      BufferAllocator allocator) {
    this.type = type;
    this.allocator = allocator;
    this.rowCapacity = Math.max(initialRows, 16);
    boolean ok = false;
    try {
      this.validity = zeroed(Validity.bytesFor(rowCapacity));
      if (type.isString()) {
        this.offsets = zeroed(4L * (rowCapacity + 1));
        this.data = allocator.buffer(Math.max(64, initialTextBytes));
      } else {
        this.data = allocator.buffer(type.fixedDataBytes(rowCapacity));
      }
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
  }

  public ColumnType type() {
    return type;
  }

  public int rowCount() {
    return rows;
  }

  public HostColumnBuilder appendNull() {
    int row = nextRow();
    nulls++;
    if (type.isString()) {
      offsets.setInt(4L * (row + 1), (int) dataBytes);
    } else {
      // Nulls hold zeros, so a kernel that reads them anyway reads a defined value.
      data.setZero(row * (long) type.id().width(), type.id().width());
      dataBytes += type.id().width();
    }
    return this;
  }

  public HostColumnBuilder appendBoolean(boolean value) {
    long offset = fixedRow(TypeId.BOOLEAN);
    data.setByte(offset, value ? 1 : 0);
    return this;
  }

  public HostColumnBuilder appendByte(byte value) {
    long offset = fixedRow(TypeId.BYTE);
    data.setByte(offset, value);
    return this;
  }

  public HostColumnBuilder appendShort(short value) {
    long offset = fixedRow(TypeId.SHORT) * 2L;
    data.setShort(offset, value);
    return this;
  }

  /** An INT, or a DATE as days since the epoch. */
  public HostColumnBuilder appendInt(int value) {
    long offset = fixedRow(TypeId.INT, TypeId.DATE) * 4L;
    data.setInt(offset, value);
    return this;
  }

  /** A LONG, a TIMESTAMP in microseconds, or a DECIMAL's unscaled value. */
  public HostColumnBuilder appendLong(long value) {
    long offset = fixedRow(TypeId.LONG, TypeId.TIMESTAMP, TypeId.DECIMAL) * 8L;
    data.setLong(offset, value);
    return this;
  }

  public HostColumnBuilder appendFloat(float value) {
    long offset = fixedRow(TypeId.FLOAT) * 4L;
    data.setFloat(offset, value);
    return this;
  }

  public HostColumnBuilder appendDouble(double value) {
    long offset = fixedRow(TypeId.DOUBLE) * 8L;
    data.setDouble(offset, value);
    return this;
  }

  /** A decimal, which must fit the column's precision at its scale without rounding. */
  public HostColumnBuilder appendDecimal(BigDecimal value) {
    if (type.id() != TypeId.DECIMAL) {
      throw new IllegalStateException("appendDecimal on a " + type + " column");
    }
    BigDecimal scaled;
    try {
      scaled = value.setScale(type.scale(), RoundingMode.UNNECESSARY);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(value + " does not fit " + type + " without rounding");
    }
    if (scaled.precision() > type.precision() && scaled.signum() != 0) {
      throw new IllegalArgumentException(value + " has more digits than " + type);
    }
    return appendLong(scaled.unscaledValue().longValueExact());
  }

  public HostColumnBuilder appendUtf8(byte[] utf8) {
    return appendUtf8(utf8, 0, utf8.length);
  }

  /** Appends {@code length} UTF-8 bytes of {@code bytes} from {@code offset}. */
  public HostColumnBuilder appendUtf8(byte[] bytes, int offset, int length) {
    long at = reserveText(length);
    data.setBytes(at, bytes, offset, length);
    return this;
  }

  /** Appends {@code length} UTF-8 bytes that sit in off-heap memory at {@code address}. */
  public HostColumnBuilder appendUtf8At(long address, int length) {
    long at = reserveText(length);
    MemoryUtil.copyMemory(address, data.memoryAddress() + at, length);
    return this;
  }

  /**
   * Appends one valid string of {@code length} bytes whose bytes the caller writes: returns the
   * address where they go (valid until the next append).
   */
  public long appendUtf8Row(int length) {
    long at = reserveText(length); // first: it may move the buffer
    return data.memoryAddress() + at;
  }

  /** Adds a valid string row of {@code length} bytes; returns where its bytes go in data. */
  private long reserveText(int length) {
    if (!type.isString()) {
      throw new IllegalStateException("cannot append text to a " + type + " column");
    }
    int row = nextRow();
    markValid(row);
    long start = dataBytes;
    long end = start + length;
    if (end > Integer.MAX_VALUE) {
      throw new IllegalStateException("a string column holds at most 2 GiB of text");
    }
    data = grown(data, dataBytes, end);
    dataBytes = end;
    offsets.setInt(4L * (row + 1), (int) end);
    return start;
  }

  /** Bytes of buffers this builder holds now (what a batch of it costs in staging memory). */
  public long bytesUsed() {
    return dataBytes + Validity.bytesFor(rows) + (offsets == null ? 0 : 4L * (rows + 1));
  }

  public HostColumnBuilder appendString(String value) {
    return appendUtf8(value.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Appends {@code count} fixed-width rows, all valid, whose values the caller writes: returns
   * the address of the first one's value, where {@code count} x the type's width bytes go, one
   * value after another (before anything else is appended). Make rows NULL with
   * {@link #setNulls}.
   */
  public long appendFixedRows(int count) {
    if (type.isString()) {
      throw new IllegalStateException("appendFixedRows on a " + type + " column");
    }
    int first = appendRows(count);
    long width = type.id().width();
    dataBytes += width * count;
    return data.memoryAddress() + width * first;
  }

  /**
   * Appends {@code count} strings of {@code lengths[0 .. count)} bytes ({@code -1}: NULL) whose
   * bytes the caller writes: returns the address where they go, one string after another
   * (before anything else is appended).
   */
  public long appendStrings(int[] lengths, int count) {
    if (!type.isString()) {
      throw new IllegalStateException("appendStrings on a " + type + " column");
    }
    long end = dataBytes;
    for (int i = 0; i < count; i++) {
      end += Math.max(0, lengths[i]);
    }
    if (end > Integer.MAX_VALUE) {
      throw new IllegalStateException("a string column holds at most 2 GiB of text");
    }
    int first = appendRows(count);
    long start = dataBytes;
    data = grown(data, dataBytes, end);
    long at = start;
    long offsetsAddress = offsets.memoryAddress() + 4L * (first + 1);
    for (int i = 0; i < count; i++) {
      if (lengths[i] < 0) {
        clearValid(first + i);
      } else {
        at += lengths[i];
      }
      MemoryUtil.putInt(offsetsAddress + 4L * i, (int) at);
    }
    dataBytes = end;
    return data.memoryAddress() + start;
  }

  /**
   * Makes fixed-width rows NULL (their values zeroed): row {@code first + i} for every bit i set
   * in {@code nullRows} (bit i % 64 of word i / 64), rows already appended and still valid.
   */
  public void setNulls(int first, long[] nullRows) {
    if (type.isString()) {
      throw new IllegalStateException("setNulls on a " + type + " column");
    }
    int width = type.id().width();
    long validityAddress = validity.memoryAddress();
    long dataAddress = data.memoryAddress();
    for (int w = 0; w < nullRows.length; w++) {
      for (long bits = nullRows[w]; bits != 0; bits &= bits - 1) {
        int row = first + (w << 6) + Long.numberOfTrailingZeros(bits);
        if (row < 0 || row >= rows) {
          throw new IllegalArgumentException("setNulls: row " + row + " of a " + type
              + " column of " + rows + " rows");
        }
        long at = validityAddress + (row >>> 3);
        byte mask = (byte) (1 << (row & 7));
        byte old = MemoryUtil.getByte(at);
        if ((old & mask) != 0) {
          MemoryUtil.putByte(at, (byte) (old & ~mask));
          zero(dataAddress + (long) width * row, width);
          nulls++;
        }
      }
    }
  }

  /** Hands the buffers to a new column; the builder is empty afterwards. */
  public HostColumn build() {
    ArrowBuf validityOut = validity;
    if (nulls == 0) {
      validity.close();
      validityOut = null;
    }
    HostColumn column = new HostColumn(type, rows, nulls, data, validityOut, offsets, dataBytes);
    data = null;
    validity = null;
    offsets = null;
    return column;
  }

  @Override
  public void close() {
    for (ArrowBuf buf : new ArrowBuf[] {data, validity, offsets}) {
      if (buf != null) {
        buf.close();
      }
    }
    data = null;
    validity = null;
    offsets = null;
  }

  /**
   * Claims the next row for a non-null fixed-width value of one of {@code accepted}. It may grow,
   * so replace, {@code data}: call it before reading the field.
   */
  private long fixedRow(TypeId... accepted) {
    boolean ok = false;
    for (TypeId id : accepted) {
      ok |= type.id() == id;
    }
    if (!ok) {
      throw new IllegalStateException("cannot append that value to a " + type + " column");
    }
    int row = nextRow();
    markValid(row);
    dataBytes += type.id().width();
    return row;
  }

  private void markValid(int row) {
    validity.setByte(row >>> 3, validity.getByte(row >>> 3) | (1 << (row & 7)));
  }

  /** Zeroes one value of {@code width} bytes (a plain store: setMemory is a call). */
  private static void zero(long address, int width) {
    switch (width) {
      case 1 -> MemoryUtil.putByte(address, (byte) 0);
      case 2 -> MemoryUtil.putShort(address, (short) 0);
      case 4 -> MemoryUtil.putInt(address, 0);
      case 8 -> MemoryUtil.putLong(address, 0L);
      default -> MemoryUtil.setMemory(address, width, (byte) 0);
    }
  }

  /** Clears a valid row's validity bit and counts it as NULL. */
  private void clearValid(int row) {
    validity.setByte(row >>> 3, validity.getByte(row >>> 3) & ~(1 << (row & 7)));
    nulls++;
  }

  /** Makes room for one more row and returns its index (not yet marked valid). */
  private int nextRow() {
    ensureRows(1);
    return rows++;
  }

  /** Appends {@code count} valid rows (their values still to be written); returns the first. */
  private int appendRows(int count) {
    if (count < 0) {
      throw new IllegalArgumentException("cannot append " + count + " rows");
    }
    ensureRows(count);
    int first = rows;
    // The bits of [first, first + count): single bits up to a byte boundary, then whole bytes.
    int row = first;
    int end = first + count;
    for (; row < end && (row & 7) != 0; row++) {
      markValid(row);
    }
    int wholeBytes = (end - row) >>> 3;
    validity.setOne(row >>> 3, wholeBytes);
    for (row += wholeBytes << 3; row < end; row++) {
      markValid(row);
    }
    rows = end;
    return first;
  }

  /** Room for {@code more} rows after the ones appended (capacity at least doubles). */
  private void ensureRows(int more) {
    if (data == null) {
      throw new IllegalStateException("builder already built or closed");
    }
    long needed = (long) rows + more;
    if (needed <= rowCapacity) {
      return;
    }
    if (needed > Integer.MAX_VALUE - 1L) {
      throw new IllegalStateException("a column holds at most " + (Integer.MAX_VALUE - 1)
          + " rows");
    }
    int newCapacity = (int) Math.min(Integer.MAX_VALUE - 1L, Math.max(needed, rowCapacity * 2L));
    validity = grownZeroed(validity, Validity.bytesFor(rowCapacity), Validity.bytesFor(newCapacity));
    if (type.isString()) {
      offsets = grownZeroed(offsets, 4L * (rowCapacity + 1), 4L * (newCapacity + 1));
    } else {
      data = grown(data, dataBytes, type.fixedDataBytes(newCapacity));
    }
    rowCapacity = newCapacity;
  }

  private ArrowBuf zeroed(long bytes) {
    ArrowBuf buf = allocator.buffer(bytes);
    buf.setZero(0, buf.capacity());
    return buf;
  }

  /** Returns {@code buf}, or a copy of its first {@code used} bytes with room for {@code needed}. */
  private ArrowBuf grown(ArrowBuf buf, long used, long needed) {
    if (needed <= buf.capacity()) {
      return buf;
    }
    ArrowBuf bigger = allocator.buffer(Math.max(needed, buf.capacity() * 2));
    bigger.setBytes(0, buf, 0, used);
    buf.close();
    return bigger;
  }

  private ArrowBuf grownZeroed(ArrowBuf buf, long used, long needed) {
    ArrowBuf bigger = allocator.buffer(Math.max(needed, buf.capacity() * 2));
    bigger.setZero(0, bigger.capacity());
    bigger.setBytes(0, buf, 0, used);
    buf.close();
    return bigger;
  }
}
