package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnType;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import org.apache.spark.sql.execution.datasources.parquet.ParquetDictionary;
import org.apache.spark.sql.execution.vectorized.Dictionary;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.Platform;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where Spark's writable vectors keep what their public API hands over only as copies, or not
 * at all: an on-heap vector's value array ({@code getInts(from, count)} answers with a fresh copy
 * of it) and its NULL flags, an off-heap vector's NULL flags ({@code isNullAt} one row at a
 * time; both keep one byte per row, 1 where the row is NULL), and a vector's dictionary with,
 * for Parquet's, the column chunk's dictionary behind it.
 *
 * <p>These are private fields of Spark's classes, read through {@link VarHandle}s. Where a Spark
 * version lacks one (or the JVM refuses the access), every method answers null or false and the
 * caller takes the public API's path, which gives the same values.
 */
final class VectorStorage {
  private static final Logger LOG = LoggerFactory.getLogger(VectorStorage.class);

  /** OnHeapColumnVector's arrays, by the field's name, or null where unreadable. */
  private static final VarHandle ON_HEAP_NULLS = field(OnHeapColumnVector.class, "nulls",
      byte[].class);
  private static final VarHandle BYTE_DATA = field(OnHeapColumnVector.class, "byteData",
      byte[].class);
  private static final VarHandle SHORT_DATA = field(OnHeapColumnVector.class, "shortData",
      short[].class);
  private static final VarHandle INT_DATA = field(OnHeapColumnVector.class, "intData",
      int[].class);
  private static final VarHandle LONG_DATA = field(OnHeapColumnVector.class, "longData",
      long[].class);
  private static final VarHandle FLOAT_DATA = field(OnHeapColumnVector.class, "floatData",
      float[].class);
  private static final VarHandle DOUBLE_DATA = field(OnHeapColumnVector.class, "doubleData",
      double[].class);
  /** OffHeapColumnVector's address of its NULL bytes. */
  private static final VarHandle OFF_HEAP_NULLS = field(OffHeapColumnVector.class, "nulls",
      long.class);
  /** A writable vector's dictionary (WritableColumnVector has no getter for it). */
  private static final VarHandle DICTIONARY = field(WritableColumnVector.class, "dictionary",
      Dictionary.class);
  /** The Parquet dictionary a ParquetDictionary wraps: one per column chunk. */
  private static final VarHandle PARQUET_DICTIONARY = field(ParquetDictionary.class,
      "dictionary", org.apache.parquet.column.Dictionary.class);

  /** Every byte's low bit set: one row's NULL flag per byte of a word read from the flags. */
  private static final long BYTE_LOW_BITS = 0x0101010101010101L;
  private static final long BYTE_LOW_7_BITS = 0x7F7F7F7F7F7F7F7FL;
  private static final long BYTE_HIGH_BITS = 0x8080808080808080L;
  /** Multiplying 8 bytes of 0 or 1 by this gathers byte i's bit at bit 56 + i. */
  private static final long GATHER_BYTES = 0x0102040810204080L;

  private static final boolean LITTLE_ENDIAN =
      ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  private VectorStorage() {}

  private static VarHandle field(Class<?> owner, String name, Class<?> type) {
    try {
      return MethodHandles.privateLookupIn(owner, MethodHandles.lookup())
          .findVarHandle(owner, name, type);
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.info("Tessera: {}.{} is not readable ({}); staging copies its values through Spark's"
          + " API instead", owner.getSimpleName(), name, e.toString());
      return null;
    }
  }

  /**
   * The array an on-heap vector without a dictionary keeps its values of {@code type} in, as
   * Spark's OnHeapColumnVector lays them out: booleans and bytes in bytes, shorts in shorts,
   * ints, dates and decimals of up to 9 digits in ints, longs, timestamps and decimals of up to
   * 18 digits in longs, floats in floats, doubles in doubles. Null for any other vector, or where
   * this Spark has no such field.
   */
  static Object values(Object vector, ColumnType type) {
    if (!(vector instanceof OnHeapColumnVector v) || v.hasDictionary()) {
      return null;
    }
    VarHandle handle = switch (type.id()) {
      case BOOLEAN, BYTE -> BYTE_DATA;
      case SHORT -> SHORT_DATA;
      case INT, DATE -> INT_DATA;
      case LONG, TIMESTAMP -> LONG_DATA;
      case FLOAT -> FLOAT_DATA;
      case DOUBLE -> DOUBLE_DATA;
      case DECIMAL -> type.precision() <= Decimal.MAX_INT_DIGITS() ? INT_DATA : LONG_DATA;
      case STRING -> null;
    };
    return handle == null ? null : handle.get(v);
  }

  /** The dictionary of a writable vector that has one, else null (or where unreadable). */
  static Dictionary dictionary(WritableColumnVector vector) {
    return DICTIONARY == null || !vector.hasDictionary() ? null
        : (Dictionary) DICTIONARY.get(vector);
  }

  /**
   * What {@code dictionary}'s entries come from: for a Parquet dictionary, the column chunk's
   * dictionary it wraps (Spark's Parquet reader wraps the same one anew for every batch it
   * reads), else the dictionary itself.
   */
  static Object entriesSource(Dictionary dictionary) {
    if (dictionary instanceof ParquetDictionary && PARQUET_DICTIONARY != null) {
      Object wrapped = PARQUET_DICTIONARY.get(dictionary);
      return wrapped != null ? wrapped : dictionary;
    }
    return dictionary;
  }

  /**
   * The entries of the Parquet column chunk's dictionary behind {@code dictionary} ({@link
   * #entriesSource}), or -1 where it is not one (its size is then unknown here).
   */
  static int entryCount(Dictionary dictionary) {
    return entriesSource(dictionary) instanceof org.apache.parquet.column.Dictionary parquet
        ? parquet.getMaxId() + 1 : -1;
  }

  /** The offset of element 0 in {@code array} (one of {@link #values}' arrays), for Platform. */
  static long baseOffset(Object array) {
    if (array instanceof byte[]) {
      return Platform.BYTE_ARRAY_OFFSET;
    } else if (array instanceof short[]) {
      return Platform.SHORT_ARRAY_OFFSET;
    } else if (array instanceof int[]) {
      return Platform.INT_ARRAY_OFFSET;
    } else if (array instanceof long[]) {
      return Platform.LONG_ARRAY_OFFSET;
    } else if (array instanceof float[]) {
      return Platform.FLOAT_ARRAY_OFFSET;
    } else if (array instanceof double[]) {
      return Platform.DOUBLE_ARRAY_OFFSET;
    }
    throw new IllegalArgumentException("not a value array: " + array.getClass());
  }

  /**
   * Sets bit {@code i} of {@code into} (little-endian words, as HostColumnBuilder.setNulls takes
   * them) for each NULL row {@code from + i} of {@code count}, read from the vector's NULL bytes
   * eight at a time. False, with {@code into} untouched, where the vector's bytes are not
   * readable here (the caller asks {@code isNullAt} row by row).
   */
  static boolean nullBits(Object vector, int from, int count, long[] into) {
    Object base;
    long address;
    if (vector instanceof OnHeapColumnVector && ON_HEAP_NULLS != null) {
      base = ON_HEAP_NULLS.get(vector);
      address = Platform.BYTE_ARRAY_OFFSET + (long) from;
      if (base == null || ((byte[]) base).length < (long) from + count) {
        return false;
      }
    } else if (vector instanceof OffHeapColumnVector && OFF_HEAP_NULLS != null) {
      base = null;
      address = (long) OFF_HEAP_NULLS.get(vector);
      if (address == 0) {
        return false;
      }
      address += from;
    } else {
      return false;
    }
    int i = 0;
    for (; i + 8 <= count; i += 8) {
      long flags = Platform.getLong(base, address + i);
      into[i >>> 6] |= gather(flags) << (i & 63);
    }
    for (; i < count; i++) {
      into[i >>> 6] |= (Platform.getByte(base, address + i) != 0 ? 1L : 0L) << i;
    }
    return true;
  }

  /**
   * Bit i of the result: whether byte i of {@code flags} (in memory order) is 1, Spark's NULL
   * flag (isNullAt tests for 1, so any other byte is not NULL here either).
   */
  static long gather(long flags) {
    long differs = flags ^ BYTE_LOW_BITS; // 0 where the flag is 1
    // The high bit of each byte that is not 0, without carries between bytes.
    long nonZero = (((differs & BYTE_LOW_7_BITS) + BYTE_LOW_7_BITS) | differs) & BYTE_HIGH_BITS;
    long ones = (~nonZero & BYTE_HIGH_BITS) >>> 7; // 1 in each byte that held 1
    long inOrder = LITTLE_ENDIAN ? ones : Long.reverseBytes(ones);
    return (inOrder * GATHER_BYTES) >>> 56;
  }
}
