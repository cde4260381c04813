package dev.tessera.ssb.compression;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The sizes of one column over all its cached batches, added up batch by batch, and the figures
 * the report gives of them, in bits per value (per row: nulls count as values). Encoded bits are
 * everything the device copy holds ({@link EncodedColumn#encodedBytes}); of those, the payload is
 * what holds the values themselves ({@link #payloadBits}), and the overhead all the rest: block
 * headers and starts, GPU-DFOR first values, dictionaries, offsets, validity.
 */
public final class ColumnCompression {
  private final String name;
  private final ColumnType type;
  private long rows;
  private long plainBytes;
  private long encodedBytes;
  private long payloadBits;
  private long dictionaryBytes;
  private long min = Long.MAX_VALUE;
  private long max = Long.MIN_VALUE;
  /** Batches per encoding label ({@link #label}), sorted by label. */
  private final Map<String, Integer> encodings = new TreeMap<>();

  ColumnCompression(String name, ColumnType type) {
    this.name = name;
    this.type = type;
  }

  /** Adds one batch of this column. */
  void add(EncodedColumn batch) {
    if (!batch.type().equals(type)) {
      throw new IllegalArgumentException("a " + batch.type() + " batch for " + type + " column "
          + name);
    }
    rows += batch.rowCount();
    plainBytes += batch.plainBytes();
    encodedBytes += batch.encodedBytes();
    payloadBits += payloadBits(batch);
    dictionaryBytes += dictionaryBytes(batch);
    encodings.merge(label(batch), 1, Integer::sum);
    if (hasNsfWidth(type) && batch.rowCount() > 0) {
      // The range NSF needs, read back from what the cache stores (one decoding pass a batch).
      long[] values = batch.decodeFixed();
      for (int r = 0; r < values.length; r++) {
        if (!batch.isNull(r)) {
          min = Math.min(min, values[r]);
          max = Math.max(max, values[r]);
        }
      }
    }
  }

  /**
   * The bits that hold a batch's values: the packed miniblocks (bit width x 32 each, padding
   * miniblocks of the last block included) of a GPU-FOR or GPU-DFOR column or of a dictionary's
   * codes; a PLAIN column's values, or a PLAIN string column's bytes.
   */
  static long payloadBits(EncodedColumn column) {
    if (column.encoding() == Encoding.PLAIN) {
      return 8L * (column.type().isString() ? column.bytes().length
          : column.plainValues().length);
    }
    int[] widths = column.bitWidths();
    long bits = 0;
    for (int width = 0; width < widths.length; width++) {
      bits += (long) widths[width] * width * 32;
    }
    return bits;
  }

  /** Bytes of a dictionary column's dictionary (its offsets and values); 0 for other columns. */
  static long dictionaryBytes(EncodedColumn column) {
    return column.isDictionary() ? 4L * column.offsets().length + column.bytes().length : 0;
  }

  /** PLAIN, FOR or DFOR; "dict FOR" or "dict DFOR" for a dictionary's codes. */
  static String label(EncodedColumn column) {
    return (column.isDictionary() ? "dict " : "") + column.encoding();
  }

  /**
   * Bytes per value of null suppression with fixed widths, the thesis's NSF: the fewest of 1, 2,
   * 4 or 8 bytes that hold every value in {@code [min, max]} (unsigned when none is negative).
   */
  static int nsfBytes(long min, long max) {
    for (int bytes : new int[] {1, 2, 4}) {
      long bits = 8L * bytes;
      boolean fits = min >= 0 ? max < 1L << bits
          : min >= -(1L << (bits - 1)) && max < 1L << (bits - 1);
      if (fits) {
        return bytes;
      }
    }
    return 8;
  }

  /** Bits per value of {@code bytes} over {@code rows} rows (NaN for no rows). */
  static double bitsPerValue(long bytes, long rows) {
    return rows == 0 ? Double.NaN : 8.0 * bytes / rows;
  }

  /** Whether NSF applies: integer-like values (not strings, floating point or booleans). */
  private static boolean hasNsfWidth(ColumnType type) {
    TypeId id = type.id();
    return !type.isString() && id != TypeId.FLOAT && id != TypeId.DOUBLE
        && id != TypeId.BOOLEAN;
  }

  public String name() {
    return name;
  }

  public ColumnType type() {
    return type;
  }

  public long rows() {
    return rows;
  }

  public long plainBytes() {
    return plainBytes;
  }

  public long encodedBytes() {
    return encodedBytes;
  }

  /** Batches per encoding label (PLAIN, FOR, DFOR, dict FOR, dict DFOR). */
  public Map<String, Integer> encodings() {
    return Map.copyOf(encodings);
  }

  /** The encodings, e.g. "DFOR", or "DFOR 3, FOR 55" when the batches chose differently. */
  public String encodingSummary() {
    if (encodings.size() == 1) {
      return encodings.keySet().iterator().next();
    }
    return encodings.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
        .collect(Collectors.joining(", "));
  }

  /** Bits per value of the plain layout (values, or offsets and bytes; validity). */
  public double plainBits() {
    return bitsPerValue(plainBytes, rows);
  }

  /** Bits per value of everything the encoded device copy holds. */
  public double encodedBits() {
    return bitsPerValue(encodedBytes, rows);
  }

  /** Bits per value of the payload ({@link #payloadBits}). */
  public double payloadBits() {
    return rows == 0 ? Double.NaN : (double) payloadBits / rows;
  }

  /** Encoded minus payload bits per value: headers, block starts, dictionary, validity. */
  public double overheadBits() {
    return rows == 0 ? Double.NaN : (8.0 * encodedBytes - payloadBits) / rows;
  }

  /** Bits per value of the dictionary (part of the overhead); 0 for other columns. */
  public double dictionaryBits() {
    return bitsPerValue(dictionaryBytes, rows);
  }

  /** Bytes NSF would take ({@link #nsfBytes}, over the whole column); -1 where it does not apply. */
  public long nsfBytes() {
    if (!hasNsfWidth(type)) {
      return -1;
    }
    return rows == 0 || min > max ? 0 : rows * nsfBytes(min, max);
  }

  /** Encoded bytes over plain bytes. */
  public double ratio() {
    return plainBytes == 0 ? Double.NaN : (double) encodedBytes / plainBytes;
  }
}
