package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.column.TypeId;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.execution.vectorized.Dictionary;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.Platform;

/**
 * Stages one column as dictionary ids and the entries they index, for the device to decode
 * ({@code DictionaryKernel}), where Spark's Parquet reader hands the column over
 * dictionary-encoded: Spark would decode it one value at a time as staging reads it
 * ({@code getInts} and the like call the dictionary for each row; a string's entry is gathered
 * for each row), while its ids are one array.
 *
 * <p>Per staged batch: the entries of each Parquet dictionary (one per column chunk) are staged
 * once, decoded by Spark's own dictionary (so each value is what Spark's getters return), and a
 * Spark batch's ids are its dictionary's ids plus where its entries start; a NULL row gets id -1.
 * A Spark batch without a dictionary (Parquet writes plain pages once a chunk's dictionary grows
 * too large) stages its values as entries of their own, row i's id the entry of row i. One per
 * staged column and task; not thread-safe.
 */
final class DictionaryIds implements AutoCloseable {
  private static final int FIRST_ENTRIES = 1024;

  private final ColumnType type;
  private final BufferAllocator allocator;
  private HostColumnBuilder ids;
  private HostColumnBuilder entries;
  /** The first entry of each dictionary staged in this batch, by its entries' source. */
  private final Map<Object, Integer> firstEntries = new IdentityHashMap<>();

  DictionaryIds(ColumnType type, BufferAllocator allocator) {
    if (!stageable(type)) {
      throw new IllegalArgumentException(type + " is not staged as dictionary ids");
    }
    this.type = type;
    this.allocator = allocator;
  }

  /**
   * Whether a column of {@code type} can be staged this way: any but a boolean (Parquet keeps no
   * dictionary for booleans) and a decimal of more than 18 digits (Spark decodes those from
   * binary, not lazily).
   */
  static boolean stageable(ColumnType type) {
    return type.id() != TypeId.BOOLEAN
        && (type.id() != TypeId.DECIMAL || type.precision() <= Decimal.MAX_LONG_DIGITS());
  }

  /**
   * Whether {@code vector} holds its values as ids of a Parquet column chunk's dictionary, the
   * form a staged batch that starts with it takes.
   */
  static boolean dictionaryEncoded(ColumnVector vector) {
    return parquetDictionary(vector) != null;
  }

  /**
   * {@code vector}'s dictionary where it holds its values as ids of a Parquet column chunk's
   * dictionary, else null.
   */
  private static Dictionary parquetDictionary(ColumnVector vector) {
    Dictionary dictionary = vector instanceof WritableColumnVector w
        ? VectorStorage.dictionary(w) : null;
    return dictionary != null && VectorStorage.entryCount(dictionary) >= 0 ? dictionary : null;
  }

  /** Starts a staged batch of about {@code rows} rows. */
  void start(int rows) {
    if (ids != null) {
      throw new IllegalStateException("Tessera bug: a staged batch's dictionary ids not finished");
    }
    ids = new HostColumnBuilder(ColumnType.INT, rows, allocator);
    entries = new HostColumnBuilder(type, FIRST_ENTRIES, allocator);
  }

  /** Whether a staged batch is under way. */
  boolean started() {
    return ids != null;
  }

  /** Appends rows [from, from + count) of {@code vector}. */
  void append(ColumnVector vector, int from, int count) {
    if (count <= 0) {
      return;
    }
    long at = ids.appendFixedRows(count);
    Dictionary dictionary = parquetDictionary(vector);
    if (dictionary != null) {
      WritableColumnVector w = (WritableColumnVector) vector;
      int base = firstEntries.computeIfAbsent(
          VectorStorage.entriesSource(dictionary), s -> stageEntries(dictionary));
      copyIds(w.getDictionaryIds(), from, count, base, at);
      if (w.hasNull()) {
        long[] nulls = SparkColumnReader.nullRows(w, from, count);
        for (int word = 0; word < nulls.length; word++) {
          for (long bits = nulls[word]; bits != 0; bits &= bits - 1) {
            Platform.putInt(null, at + 4L * (64 * word + Long.numberOfTrailingZeros(bits)), -1);
          }
        }
      }
    } else {
      int base = entries.rowCount();
      SparkColumnReader.append(vector, from, from + count, type, entries, null);
      for (int i = 0; i < count; i++) {
        Platform.putInt(null, at + 4L * i, base + i);
      }
    }
  }

  /** The staging bytes of the batch so far. */
  long bytesUsed() {
    return ids == null ? 0 : ids.bytesUsed() + entries.bytesUsed();
  }

  /**
   * The staged batch's ids (INT, -1 where NULL) and entries; the caller owns both. The next
   * batch starts afresh (its dictionaries are staged again).
   */
  HostColumn[] finish() {
    HostColumn builtIds = null;
    try {
      builtIds = ids.build();
      HostColumn builtEntries = entries.build();
      return new HostColumn[] {builtIds, builtEntries};
    } catch (RuntimeException e) {
      if (builtIds != null) {
        builtIds.close();
      }
      throw e;
    } finally {
      close();
    }
  }

  @Override
  public void close() {
    firstEntries.clear();
    try {
      if (ids != null) {
        ids.close();
      }
    } finally {
      ids = null;
      if (entries != null) {
        entries.close();
      }
      entries = null;
    }
  }

  /**
   * Stages every entry of {@code dictionary}; returns where the first one went. A column chunk's
   * dictionary holds up to a 1 MiB page of entries (262,144 INTs), staged again for each staged
   * batch that uses it: fixed-width entries are written straight into the staging buffer, one
   * loop per type.
   */
  private int stageEntries(Dictionary dictionary) {
    int first = entries.rowCount();
    int count = VectorStorage.entryCount(dictionary);
    if (type.isString()) {
      for (int id = 0; id < count; id++) {
        entries.appendUtf8(dictionary.decodeToBinary(id));
      }
      return first;
    }
    long at = entries.appendFixedRows(count);
    // As Spark's getters decode a dictionary id of each type (OnHeapColumnVector.getByte etc.).
    switch (type.id()) {
      case BYTE -> {
        for (int id = 0; id < count; id++) {
          Platform.putByte(null, at + id, (byte) dictionary.decodeToInt(id));
        }
      }
      case SHORT -> {
        for (int id = 0; id < count; id++) {
          Platform.putShort(null, at + 2L * id, (short) dictionary.decodeToInt(id));
        }
      }
      case INT, DATE -> {
        for (int id = 0; id < count; id++) {
          Platform.putInt(null, at + 4L * id, dictionary.decodeToInt(id));
        }
      }
      case LONG, TIMESTAMP -> {
        for (int id = 0; id < count; id++) {
          Platform.putLong(null, at + 8L * id, dictionary.decodeToLong(id));
        }
      }
      case FLOAT -> {
        for (int id = 0; id < count; id++) {
          Platform.putFloat(null, at + 4L * id, dictionary.decodeToFloat(id));
        }
      }
      case DOUBLE -> {
        for (int id = 0; id < count; id++) {
          Platform.putDouble(null, at + 8L * id, dictionary.decodeToDouble(id));
        }
      }
      case DECIMAL -> {
        boolean ints = type.precision() <= Decimal.MAX_INT_DIGITS();
        for (int id = 0; id < count; id++) {
          Platform.putLong(null, at + 8L * id,
              ints ? dictionary.decodeToInt(id) : dictionary.decodeToLong(id));
        }
      }
      case BOOLEAN, STRING -> throw new IllegalStateException("not stageable: " + type);
    }
    return first;
  }

  /** Writes {@code count} ids from row {@code from} of {@code idVector}, each plus {@code base}. */
  private static void copyIds(WritableColumnVector idVector, int from, int count, int base,
      long at) {
    Object array = VectorStorage.values(idVector, ColumnType.INT);
    Object source;
    long offset;
    if (array != null) {
      source = array;
      offset = Platform.INT_ARRAY_OFFSET + 4L * from;
    } else if (idVector instanceof OffHeapColumnVector o) {
      source = null;
      offset = o.valuesNativeAddress() + 4L * from;
    } else {
      source = idVector.getInts(from, count);
      offset = Platform.INT_ARRAY_OFFSET;
    }
    if (base == 0) {
      Platform.copyMemory(source, offset, null, at, 4L * count);
      return;
    }
    for (int i = 0; i < count; i++) {
      Platform.putInt(null, at + 4L * i, base + Platform.getInt(source, offset + 4L * i));
    }
  }
}
