package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.column.TypeId;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.Dictionary;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Copies the values of one of Spark's column vectors into a host staging column builder, in bulk
 * wherever the vector allows:
 *
 * <ul>
 *   <li>fixed-width values as one memory copy from an off-heap vector's or an Arrow vector's
 *       buffer or an on-heap vector's array ({@link VectorStorage}), else as one array Spark
 *       fills ({@code getInts(from, count)} and the like: a dictionary decoded, a constant
 *       repeated); decimals of up to 18 digits as the ints or longs Spark's writable vectors
 *       keep;
 *   <li>strings of a writable vector as one copy of their bytes when they lie one after another
 *       (as Parquet and Spark's row-to-column conversion write them), else one copy per string;
 *       strings of a Parquet dictionary decoded once per entry and column chunk ({@link
 *       DictionaryStrings}), then copied in one piece;
 *   <li>NULLs, only where the vector has any: eight rows at a time from a writable vector's
 *       NULL bytes, else once per row.
 * </ul>
 *
 * {@link #appendValues} reads value by value, for what has no bulk form (Arrow booleans and
 * decimals, whose getters throw at NULL rows; decimals of other vectors than Spark's writable
 * ones; strings of constant and Arrow vectors); the bulk paths are tested against it.
 */
final class SparkColumnReader {
  private SparkColumnReader() {}

  /** Appends rows [0, rows) of {@code vector}, which holds values of {@code type}. */
  static void append(ColumnVector vector, int rows, ColumnType type, HostColumnBuilder out) {
    append(vector, 0, rows, type, out, null);
  }

  /**
   * Appends rows [from, to) of {@code vector}, which holds values of {@code type}. The strings of
   * a vector with a dictionary are decoded into {@code strings} (the column's, kept across its
   * batches) where it is given, else afresh for each call.
   */
  static void append(ColumnVector vector, int from, int to, ColumnType type,
      HostColumnBuilder out, DictionaryStrings strings) {
    int count = to - from;
    if (count <= 0) {
      return;
    }
    if (vector instanceof WritableColumnVector w && type.isString()) {
      if (w.hasDictionary()) {
        appendDictionaryStrings(w, from, count, out, strings);
      } else {
        appendStrings(w, from, count, out);
      }
    } else if (!type.isString() && hasBulkValues(vector, type)) {
      appendFixed(vector, from, count, type, out);
    } else {
      appendValues(vector, from, to, type, out);
    }
  }

  /** Appends rows [from, to) value by value: what every vector offers. */
  static void appendValues(ColumnVector vector, int from, int to, ColumnType type,
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

  /** Fixed-width rows: the values in bulk, then the NULLs. */
  private static void appendFixed(ColumnVector vector, int from, int count, ColumnType type,
      HostColumnBuilder out) {
    int first = out.rowCount();
    long to = out.appendFixedRows(count);
    copyValues(vector, from, count, type, to);
    if (vector.hasNull()) {
      out.setNulls(first, nullRows(vector, from, count));
    }
  }

  /**
   * Rows [from, from + count) of the vector's values, written at {@code to} as the device column
   * holds them: copied from where the vector keeps them (its buffer, or an on-heap vector's
   * array), else from the array Spark fills for us.
   */
  private static void copyValues(ColumnVector vector, int from, int count, ColumnType type,
      long to) {
    if (isIntDecimal(type)) {
      // Spark's writable vectors keep a decimal of up to 9 digits as an int
      // (WritableColumnVector.getDecimal); the device column holds longs.
      Object ints = VectorStorage.values(vector, type);
      if (vector instanceof OffHeapColumnVector o && !o.hasDictionary()) {
        widenInts(null, o.valuesNativeAddress() + 4L * from, count, to);
      } else if (ints != null) {
        widenInts(ints, Platform.INT_ARRAY_OFFSET + 4L * from, count, to);
      } else {
        widenInts(vector.getInts(from, count), Platform.INT_ARRAY_OFFSET, count, to);
      }
      return;
    }
    int width = type.id().width();
    long bytes = (long) width * count;
    long source = directAddress(vector, type);
    if (source != 0) {
      Platform.copyMemory(null, source + (long) width * from, null, to, bytes);
      return;
    }
    Object array = VectorStorage.values(vector, type);
    if (array != null) {
      Platform.copyMemory(array, VectorStorage.baseOffset(array) + (long) width * from, null, to,
          bytes);
      return;
    }
    switch (type.id()) {
      case BOOLEAN -> Platform.copyMemory(vector.getBooleans(from, count),
          Platform.BOOLEAN_ARRAY_OFFSET, null, to, bytes);
      case BYTE -> Platform.copyMemory(vector.getBytes(from, count), Platform.BYTE_ARRAY_OFFSET,
          null, to, bytes);
      case SHORT -> Platform.copyMemory(vector.getShorts(from, count),
          Platform.SHORT_ARRAY_OFFSET, null, to, bytes);
      case INT, DATE -> Platform.copyMemory(vector.getInts(from, count),
          Platform.INT_ARRAY_OFFSET, null, to, bytes);
      case LONG, TIMESTAMP, DECIMAL -> Platform.copyMemory(vector.getLongs(from, count),
          Platform.LONG_ARRAY_OFFSET, null, to, bytes);
      case FLOAT -> Platform.copyMemory(vector.getFloats(from, count),
          Platform.FLOAT_ARRAY_OFFSET, null, to, bytes);
      case DOUBLE -> Platform.copyMemory(vector.getDoubles(from, count),
          Platform.DOUBLE_ARRAY_OFFSET, null, to, bytes);
      case STRING -> throw new IllegalStateException("Tessera bug: strings are not fixed-width");
    }
  }

  /**
   * The NULL rows among [from, from + count), bit i of the words for row from + i: from a
   * writable vector's NULL bytes eight rows at a time, else row by row.
   */
  static long[] nullRows(ColumnVector vector, int from, int count) {
    long[] nullRows = new long[(count + 63) >>> 6];
    if (!VectorStorage.nullBits(vector, from, count, nullRows)) {
      for (int i = 0; i < count; i++) {
        // Without a branch: NULLs scattered at random would mispredict one.
        nullRows[i >>> 6] |= (vector.isNullAt(from + i) ? 1L : 0L) << i;
      }
    }
    return nullRows;
  }

  /** A decimal of up to 9 digits: Spark's writable vectors hold an int, the device a long. */
  private static boolean isIntDecimal(ColumnType type) {
    return type.id() == TypeId.DECIMAL && type.precision() <= Decimal.MAX_INT_DIGITS();
  }

  /** {@code count} ints at {@code base + offset}, each written as a long at {@code to}. */
  private static void widenInts(Object base, long offset, int count, long to) {
    for (int i = 0; i < count; i++) {
      Platform.putLong(null, to + 8L * i, Platform.getInt(base, offset + 4L * i));
    }
  }

  /**
   * Whether {@link #appendFixed} can read the vector's values in bulk: from its buffer, or
   * through {@code getInts(from, count)} and the like, which Spark's writable and constant
   * vectors answer for NULL rows too (an Arrow vector's getters throw there), holding decimals as
   * ints or longs.
   */
  private static boolean hasBulkValues(ColumnVector vector, ColumnType type) {
    return vector instanceof WritableColumnVector || directAddress(vector, type) != 0
        || vector instanceof ConstantColumnVector && type.id() != TypeId.DECIMAL;
  }

  /**
   * The address of row 0's value where the vector keeps its values as the device column does
   * (an off-heap vector without a dictionary, an Arrow fixed-width vector of the same width);
   * 0 otherwise.
   */
  private static long directAddress(ColumnVector vector, ColumnType type) {
    int width = type.id().width();
    if (vector instanceof OffHeapColumnVector o && !o.hasDictionary()) {
      return isIntDecimal(type) ? 0 : o.valuesNativeAddress();
    }
    if (vector instanceof ArrowColumnVector a) {
      ValueVector values = a.getValueVector();
      if (values instanceof BaseFixedWidthVector f && !(values instanceof BitVector)
          && !(values instanceof DecimalVector) && f.getTypeWidth() == width) {
        return f.getDataBuffer().memoryAddress();
      }
    }
    return 0;
  }

  /** Strings of a writable vector without a dictionary: lengths, then the bytes. */
  private static void appendStrings(WritableColumnVector vector, int from, int count,
      HostColumnBuilder out) {
    int[] lengths = new int[count];
    boolean mayHaveNulls = vector.hasNull();
    int firstValid = -1;
    int end = 0;
    boolean consecutive = true;
    for (int i = 0; i < count; i++) {
      int row = from + i;
      if (mayHaveNulls && vector.isNullAt(row)) {
        lengths[i] = -1;
        continue;
      }
      int offset = vector.getArrayOffset(row);
      lengths[i] = vector.getArrayLength(row);
      if (firstValid < 0) {
        firstValid = row;
      } else if (offset != end) {
        consecutive = false;
      }
      end = offset + lengths[i];
    }
    long to = out.appendStrings(lengths, count);
    if (firstValid < 0) {
      return;
    }
    if (consecutive) {
      // The first string's base is the vector's byte storage; the others follow it there.
      UTF8String s = vector.getUTF8String(firstValid);
      Platform.copyMemory(s.getBaseObject(), s.getBaseOffset(), null, to,
          end - vector.getArrayOffset(firstValid));
      return;
    }
    for (int i = 0; i < count; i++) {
      if (lengths[i] > 0) {
        UTF8String s = vector.getUTF8String(from + i);
        Platform.copyMemory(s.getBaseObject(), s.getBaseOffset(), null, to, lengths[i]);
        to += lengths[i];
      }
    }
  }

  /**
   * Strings of a dictionary-encoded vector (Parquet): each entry decoded once per column chunk
   * ({@code decoded}, when given and the vector's dictionary is readable), else once per call.
   */
  private static void appendDictionaryStrings(WritableColumnVector vector, int from, int count,
      HostColumnBuilder out, DictionaryStrings decoded) {
    WritableColumnVector ids = vector.getDictionaryIds();
    Dictionary dictionary = decoded == null ? null : VectorStorage.dictionary(vector);
    if (dictionary == null) {
      decoded = new DictionaryStrings(); // this call's entries only
    } else {
      decoded.use(dictionary);
    }
    byte[][] strings = new byte[count][];
    int[] lengths = new int[count];
    boolean mayHaveNulls = vector.hasNull();
    for (int i = 0; i < count; i++) {
      int row = from + i;
      if (mayHaveNulls && vector.isNullAt(row)) {
        lengths[i] = -1;
        continue;
      }
      int id = ids.getDictId(row);
      byte[] entry = decoded.get(id);
      if (entry == null) {
        entry = vector.getUTF8String(row).getBytes();
        decoded.put(id, entry);
      }
      strings[i] = entry;
      lengths[i] = strings[i].length;
    }
    long to = out.appendStrings(lengths, count);
    // Gathered on the heap, then one copy: a copy per short string to the staging buffer costs
    // more than the bytes.
    int total = 0;
    for (int i = 0; i < count; i++) {
      total += Math.max(lengths[i], 0);
    }
    byte[] bytes = new byte[total];
    int at = 0;
    for (int i = 0; i < count; i++) {
      if (lengths[i] > 0) {
        System.arraycopy(strings[i], 0, bytes, at, lengths[i]);
        at += lengths[i];
      }
    }
    Platform.copyMemory(bytes, Platform.BYTE_ARRAY_OFFSET, null, to, total);
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
