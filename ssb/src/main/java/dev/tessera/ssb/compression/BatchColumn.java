package dev.tessera.ssb.compression;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.column.ColumnType;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * One column's values of a batch being cut, turned into the encoder's input exactly as the cache
 * does it (spark-plugin's {@code ColumnAccumulator.add(InternalRow, int)}, which is package-private
 * there): integers sign-extended, dates as int days, timestamps as long microseconds, FLOAT and
 * DOUBLE as their raw bits, decimals as unscaled longs, strings as UTF-8 bytes. Kept in step with
 * it by hand, so that the report measures what the cache stores.
 */
final class BatchColumn {
  private final ColumnType type;
  private long[] values;
  private byte[][] strings;
  private boolean[] valid;
  private int size;
  private int nulls;

  BatchColumn(ColumnType type, int capacity) {
    this.type = type;
    this.values = type.isString() ? null : new long[capacity];
    this.strings = type.isString() ? new byte[capacity][] : null;
    this.valid = new boolean[capacity];
  }

  int size() {
    return size;
  }

  /** Adds {@code row}'s value at {@code ordinal}. */
  void add(InternalRow row, int ordinal) {
    grow();
    if (row.isNullAt(ordinal)) {
      valid[size++] = false;
      nulls++;
      return;
    }
    if (type.isString()) {
      strings[size] = row.getUTF8String(ordinal).getBytes();
    } else {
      values[size] = switch (type.id()) {
        case BOOLEAN -> row.getBoolean(ordinal) ? 1 : 0;
        case BYTE -> row.getByte(ordinal);
        case SHORT -> row.getShort(ordinal);
        case INT, DATE -> row.getInt(ordinal);
        case LONG, TIMESTAMP -> row.getLong(ordinal);
        case FLOAT -> Float.floatToRawIntBits(row.getFloat(ordinal));
        case DOUBLE -> Double.doubleToRawLongBits(row.getDouble(ordinal));
        case DECIMAL -> row.getDecimal(ordinal, type.precision(), type.scale()).toUnscaledLong();
        case STRING -> throw new AssertionError("strings are handled above");
      };
    }
    valid[size++] = true;
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

  /** The batch's values encoded, through the cache's entry points. */
  EncodedColumn encode() {
    return type.isString()
        ? EncodedColumn.encodeStrings(strings, size)
        : EncodedColumn.encodeFixed(type, values, nulls == 0 ? null : valid, size);
  }
}
