package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumnBuilder;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/** Copies the values of one of Spark's column vectors into a host staging column builder. */
final class SparkColumnReader {
  private SparkColumnReader() {}

  /** Appends rows [0, rows) of {@code vector}, which holds values of {@code type}. */
  static void append(ColumnVector vector, int rows, ColumnType type, HostColumnBuilder out) {
    append(vector, 0, rows, type, out);
  }

  /** Appends rows [from, to) of {@code vector}, which holds values of {@code type}. */
  static void append(ColumnVector vector, int from, int to, ColumnType type,
      HostColumnBuilder out) {
    boolean mayHaveNulls = vector.hasNull();
    for (int row = from; row < to; row++) {
      if (mayHaveNulls && vector.isNullAt(row)) {
        out.appendNull();
        continue;
      }
      switch (type.id()) {
        case BOOLEAN -> out.appendBoolean(vector.getBoolean(row));
        case BYTE -> out.appendByte(vector.getByte(row));
        case SHORT -> out.appendShort(vector.getShort(row));
        case INT, DATE -> out.appendInt(vector.getInt(row));
        case LONG, TIMESTAMP -> out.appendLong(vector.getLong(row));
        case FLOAT -> out.appendFloat(vector.getFloat(row));
        case DOUBLE -> out.appendDouble(vector.getDouble(row));
        case DECIMAL -> out.appendLong(
            vector.getDecimal(row, type.precision(), type.scale()).toUnscaledLong());
        case STRING -> appendString(vector.getUTF8String(row), out);
      }
    }
  }

  /** Copies the string's bytes straight from where Spark keeps them, on or off the heap. */
  private static void appendString(UTF8String s, HostColumnBuilder out) {
    Object base = s.getBaseObject();
    if (base == null) {
      out.appendUtf8At(s.getBaseOffset(), s.numBytes());
    } else if (base instanceof byte[] bytes) {
      out.appendUtf8(bytes, (int) (s.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET), s.numBytes());
    } else {
      out.appendUtf8(s.getBytes());
    }
  }
}
