package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.column.ColumnType;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The values of one column of a cached batch as they arrive from its rows (or, for the
 * compression report, from the SSB generator's), then encoded ({@link EncodedColumn}), with the
 * statistics Spark's batch pruning reads.
 * Values are held as the codec takes them: integers sign-extended, FLOAT and DOUBLE as their raw
 * bits, decimals as unscaled longs, strings as UTF-8 bytes.
 */
public final class ColumnAccumulator {
  /** Heap bytes of a row's slot: its 8-byte value or string reference and its validity flag. */
  private static final int SLOT_BYTES = Long.BYTES + 1;
  /** Heap bytes of a string's byte array besides its bytes (its object header and length). */
  private static final int ARRAY_HEADER_BYTES = 16;

  private final ColumnType type;
  private long[] values;
  private byte[][] strings;
  private boolean[] valid;
  private int size;
  private int nulls;
  private long heapBytes;
  // The statistics, in Spark's order of values (NaN greatest, -0.0 equal to 0.0).
  private long lowerBits;
  private long upperBits;
  private byte[] lowerString;
  private byte[] upperString;
  private boolean anyValue;

  public ColumnAccumulator(ColumnType type, int capacity) {
    this.type = type;
    if (type.isString()) {
      strings = new byte[capacity][];
    } else {
      values = new long[capacity];
    }
    valid = new boolean[capacity];
  }

  public int size() {
    return size;
  }

  /**
   * About how much heap the values added so far take (the slots filled, and each string's byte
   * array rounded up to the JVM's 8-byte alignment), to bound a batch by memory as well as rows.
   */
  public long heapBytes() {
    return heapBytes;
  }

  /** Adds {@code row}'s value at {@code ordinal}. */
  public void add(InternalRow row, int ordinal) {
    if (row.isNullAt(ordinal)) {
      addNull();
      return;
    }
    switch (type.id()) {
      case BOOLEAN -> addFixed(row.getBoolean(ordinal) ? 1 : 0);
      case BYTE -> addFixed(row.getByte(ordinal));
      case SHORT -> addFixed(row.getShort(ordinal));
      case INT, DATE -> addFixed(row.getInt(ordinal));
      case LONG, TIMESTAMP -> addFixed(row.getLong(ordinal));
      case FLOAT -> addFixed(Float.floatToRawIntBits(row.getFloat(ordinal)));
      case DOUBLE -> addFixed(Double.doubleToRawLongBits(row.getDouble(ordinal)));
      case DECIMAL -> addFixed(
          row.getDecimal(ordinal, type.precision(), type.scale()).toUnscaledLong());
      case STRING -> addString(row.getUTF8String(ordinal).getBytes());
    }
  }

  private void addNull() {
    grow();
    heapBytes += SLOT_BYTES;
    valid[size++] = false;
    nulls++;
  }

  private void addFixed(long value) {
    grow();
    heapBytes += SLOT_BYTES;
    values[size] = value;
    valid[size++] = true;
    if (!anyValue || compare(value, lowerBits) < 0) {
      lowerBits = value;
    }
    if (!anyValue || compare(value, upperBits) > 0) {
      upperBits = value;
    }
    anyValue = true;
  }

  private void addString(byte[] utf8) {
    grow();
    heapBytes += SLOT_BYTES + ARRAY_HEADER_BYTES + ((utf8.length + 7L) & ~7L);
    strings[size] = utf8;
    valid[size++] = true;
    if (!anyValue || Arrays.compareUnsigned(utf8, lowerString) < 0) {
      lowerString = utf8;
    }
    if (!anyValue || Arrays.compareUnsigned(utf8, upperString) > 0) {
      upperString = utf8;
    }
    anyValue = true;
  }

  private void grow() {
    if (size < valid.length) {
      return;
    }
    int capacity = Math.max(16, valid.length * 2);
    valid = Arrays.copyOf(valid, capacity);
    if (strings != null) {
      strings = Arrays.copyOf(strings, capacity);
    } else {
      values = Arrays.copyOf(values, capacity);
    }
  }

  /** Spark's order of two values of this column (SQLOrderingUtil for floating point). */
  private int compare(long a, long b) {
    return switch (type.id()) {
      case FLOAT -> compareFloating(Float.intBitsToFloat((int) a), Float.intBitsToFloat((int) b));
      case DOUBLE -> compareFloating(Double.longBitsToDouble(a), Double.longBitsToDouble(b));
      default -> Long.compare(a, b);
    };
  }

  private static int compareFloating(double x, double y) {
    return x == y ? 0 : Double.compare(x, y); // -0.0 == 0.0; NaN above everything
  }

  /** The column encoded. */
  public EncodedColumn encode() {
    return type.isString()
        ? EncodedColumn.encodeStrings(strings, size)
        : EncodedColumn.encodeFixed(type, values, nulls == 0 ? null : valid, size);
  }

  /**
   * The statistics as Spark's ColumnStatisticsSchema lays them out: lower bound, upper bound
   * (null when every value is null: no comparison can then hold, as for Spark's strings), null
   * count, count (rows, nulls included), size in bytes (the plain size, as Spark's serializer
   * reports it, so that plans over the cache are sized as without Tessera).
   */
  Object[] statistics(long plainBytes) {
    return new Object[] {statistic(true), statistic(false), nulls, size, plainBytes};
  }

  private Object statistic(boolean lower) {
    if (!anyValue) {
      return null;
    }
    long bits = lower ? lowerBits : upperBits;
    return switch (type.id()) {
      case BOOLEAN -> bits != 0;
      case BYTE -> (byte) bits;
      case SHORT -> (short) bits;
      case INT, DATE -> (int) bits;
      case LONG, TIMESTAMP -> bits;
      case FLOAT -> Float.intBitsToFloat((int) bits);
      case DOUBLE -> Double.longBitsToDouble(bits);
      case DECIMAL -> Decimal.createUnsafe(bits, type.precision(), type.scale());
      case STRING -> UTF8String.fromBytes(lower ? lowerString : upperString);
    };
  }
}
