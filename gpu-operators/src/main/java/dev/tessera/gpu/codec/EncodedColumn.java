package dev.tessera.gpu.codec;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * One column of a cached batch, encoded once on the host and kept in Spark's block manager
 * (hence serializable and immutable): integer-like values GPU-FOR, GPU-DFOR or plain, whichever
 * is smallest; strings plain or as a dictionary with GPU-FOR / GPU-DFOR codes; floating point and
 * booleans plain ({@link GpuForLayout}). It is uploaded as is, and decoded by the kernels as they
 * load it, so that a cached table takes less device memory and less PCIe time.
 *
 * <p>Fixed-width values are longs in one convention: integers sign-extended, FLOAT as its int
 * bits, DOUBLE as its long bits, BOOLEAN 0 or 1, DECIMAL as its unscaled long. A null row's slot
 * holds the value of the row before it (see {@link GpuForLayout}); read {@link #isNull} first.
 *
 * <p>The arrays the accessors return are this column's own, not copies (the column can be
 * hundreds of megabytes): do not modify them.
 */
public final class EncodedColumn implements Serializable {
  private static final long serialVersionUID = 1L;

  private final ColumnType type;
  private final int rowCount;
  private final int nullCount;
  private final Encoding encoding;
  /** Arrow bitmap, 1 = valid; null when no row is null. */
  private final byte[] validity;
  /** GPU-FOR / GPU-DFOR values or dictionary codes; null when PLAIN. */
  private final int[] words;
  private final int[] blockStarts;
  /** PLAIN fixed-width values in the device layout; null otherwise. */
  private final byte[] plainValues;
  /** Strings: a PLAIN column's offsets and bytes, or a dictionary column's dictionary. */
  private final int[] offsets;
  private final byte[] bytes;
  /** Strings: bytes of the rows' values, as a plain column holds them. */
  private final long stringBytes;

  private EncodedColumn(ColumnType type, int rowCount, int nullCount, Encoding encoding,
      byte[] validity, GpuForCodec.Packed packed, byte[] plainValues, int[] offsets, byte[] bytes,
      long stringBytes) {
    this.type = type;
    this.rowCount = rowCount;
    this.nullCount = nullCount;
    this.encoding = encoding;
    this.validity = validity;
    this.words = packed == null ? null : packed.words();
    this.blockStarts = packed == null ? null : packed.blockStarts();
    this.plainValues = plainValues;
    this.offsets = offsets;
    this.bytes = bytes;
    this.stringBytes = stringBytes;
  }

  /**
   * Encodes {@code values[0, rows)} of a fixed-width {@code type}, in the long convention;
   * {@code valid} (null: no nulls) says which rows are not null. The arrays are not kept.
   */
  public static EncodedColumn encodeFixed(ColumnType type, long[] values, boolean[] valid,
      int rows) {
    return fixed(type, values, valid, rows, null);
  }

  /**
   * {@link #encodeFixed(ColumnType, long[], boolean[], int)} in {@code encoding} rather than the
   * smallest, for benchmarks and tests of one decoder. FOR and DFOR take integer-like types only
   * (not BOOLEAN, FLOAT or DOUBLE, which are always PLAIN).
   */
  public static EncodedColumn encodeFixed(ColumnType type, long[] values, boolean[] valid,
      int rows, Encoding encoding) {
    return fixed(type, values, valid, rows, Objects.requireNonNull(encoding, "encoding"));
  }

  /** The encodeFixed overloads: {@code encoding} null is the smallest. */
  private static EncodedColumn fixed(ColumnType type, long[] values, boolean[] valid, int rows,
      Encoding encoding) {
    if (type.isString()) {
      throw new IllegalArgumentException("strings are encoded by encodeStrings");
    }
    checkRows(rows, values.length, valid == null ? rows : valid.length);
    TypeId id = type.id();
    boolean packable = packable(type);
    if (!packable && encoding != null && encoding != Encoding.PLAIN) {
      throw new IllegalArgumentException(type + " columns are always PLAIN, not " + encoding);
    }
    int nulls = Validity.nulls(valid, rows);
    byte[] validity = nulls == 0 ? null : Validity.bitmap(valid, rows);
    long[] slots = fillNullSlots(values, nulls == 0 ? null : valid, rows, id);
    int lanes = GpuForLayout.lanes(id.width());
    if (packable && encoding == null) {
      encoding = smallest(type, slots, rows, lanes);
    }
    if (!packable || encoding == Encoding.PLAIN) {
      return plain(type, rows, nulls, validity, slots);
    }
    return new EncodedColumn(type, rows, nulls, encoding, validity,
        GpuForCodec.encode(encoding, slots, rows, lanes), null, null, null, 0);
  }

  /**
   * Whether {@code type}'s values may be stored GPU-FOR or GPU-DFOR: integer-like fixed-width
   * types (not BOOLEAN, FLOAT or DOUBLE, always PLAIN), and strings, as dictionary codes.
   */
  public static boolean packable(ColumnType type) {
    TypeId id = type.id();
    return id != TypeId.BOOLEAN && id != TypeId.FLOAT && id != TypeId.DOUBLE;
  }

  /** PLAIN, FOR or DFOR, whichever stores {@code slots[0, rows)} in the fewest bytes. */
  private static Encoding smallest(ColumnType type, long[] slots, int rows, int lanes) {
    long plainBytes = type.fixedDataBytes(rows);
    long forBytes = GpuForCodec.packedBytes(GpuForCodec.forWords(slots, rows, lanes), rows);
    long dforBytes = GpuForCodec.packedBytes(GpuForCodec.dforWords(slots, rows, lanes), rows);
    if (plainBytes <= forBytes && plainBytes <= dforBytes) {
      return Encoding.PLAIN;
    }
    return forBytes <= dforBytes ? Encoding.FOR : Encoding.DFOR;
  }

  /**
   * Encodes {@code values[0, rows)}, UTF-8 strings, a null element being a null row: as a
   * dictionary when that takes fewer bytes than the plain offsets and bytes. The arrays are not
   * kept.
   */
  public static EncodedColumn encodeStrings(byte[][] values, int rows) {
    checkRows(rows, values.length, rows);
    int nulls = 0;
    long stringBytes = 0;
    for (int r = 0; r < rows; r++) {
      if (values[r] == null) {
        nulls++;
      } else {
        stringBytes += values[r].length;
      }
    }
    byte[] validity = nulls == 0 ? null : Validity.bitmapOfNonNull(values, rows);
    if (nulls < rows) {
      StringDictionary dictionary = StringDictionary.build(values, rows);
      long[] codes = dictionary.codes();
      long forBytes = GpuForCodec.packedBytes(GpuForCodec.forWords(codes, rows, 32), rows);
      long dforBytes = GpuForCodec.packedBytes(GpuForCodec.dforWords(codes, rows, 32), rows);
      long dictionaryBytes = dictionary.bytes() + Math.min(forBytes, dforBytes);
      if (dictionaryBytes < 4L * (rows + 1) + stringBytes) {
        Encoding encoding = forBytes <= dforBytes ? Encoding.FOR : Encoding.DFOR;
        return new EncodedColumn(ColumnType.STRING, rows, nulls, encoding, validity,
            GpuForCodec.encode(encoding, codes, rows, 32), null, dictionary.offsets(),
            dictionary.data(), stringBytes);
      }
    }
    if (stringBytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a string column of " + stringBytes + " bytes");
    }
    int[] offsets = new int[rows + 1];
    byte[] data = new byte[(int) stringBytes];
    for (int r = 0; r < rows; r++) {
      int length = values[r] == null ? 0 : values[r].length;
      if (length > 0) {
        System.arraycopy(values[r], 0, data, offsets[r], length);
      }
      offsets[r + 1] = offsets[r] + length;
    }
    return new EncodedColumn(ColumnType.STRING, rows, nulls, Encoding.PLAIN, validity, null,
        null, offsets, data, stringBytes);
  }

  public ColumnType type() {
    return type;
  }

  public int rowCount() {
    return rowCount;
  }

  public int nullCount() {
    return nullCount;
  }

  /** PLAIN, or the encoding of the values (of the codes, for a dictionary column). */
  public Encoding encoding() {
    return encoding;
  }

  /** The Arrow validity bitmap (bit r % 8 of byte r / 8; 1 = valid), or null when no nulls. */
  public byte[] validity() {
    return validity;
  }

  /** Whether this is a string column stored as a dictionary and codes. */
  public boolean isDictionary() {
    return type.isString() && encoding != Encoding.PLAIN;
  }

  /** The bit width of the encoded values: 64 for 8-byte types, else 32 (codes too). */
  public int lanes() {
    return type.isString() ? 32 : GpuForLayout.lanes(type.id().width());
  }

  /** The GPU-FOR / GPU-DFOR words (FOR and DFOR only). */
  public int[] words() {
    requireEncoded();
    return words;
  }

  /** The block starts of {@link #words} (FOR and DFOR only). */
  public int[] blockStarts() {
    requireEncoded();
    return blockStarts;
  }

  /** The values in the device layout (PLAIN fixed-width columns only). */
  public byte[] plainValues() {
    if (plainValues == null) {
      throw new IllegalStateException("a " + encoding + " " + type + " column has no plain"
          + " values");
    }
    return plainValues;
  }

  /** A PLAIN string column's offsets (rows + 1), or a dictionary column's (entries + 1). */
  public int[] offsets() {
    requireString();
    return offsets;
  }

  /** A PLAIN string column's bytes, or a dictionary column's dictionary bytes. */
  public byte[] bytes() {
    requireString();
    return bytes;
  }

  /** Entries of the dictionary; 0 when this is not a dictionary column. */
  public int dictionarySize() {
    return isDictionary() ? offsets.length - 1 : 0;
  }

  /** Bytes stored: the payload (words and block starts, values, offsets, bytes) and validity. */
  public long encodedBytes() {
    long payload = plainValues != null ? plainValues.length : 0;
    if (words != null) {
      payload += 4L * (words.length + blockStarts.length);
    }
    if (offsets != null) {
      payload += 4L * offsets.length + bytes.length;
    }
    return payload + (validity == null ? 0 : validity.length);
  }

  /** Bytes of the plain device layout: values (or offsets and string bytes), and validity. */
  public long plainBytes() {
    long payload = type.isString() ? 4L * (rowCount + 1) + stringBytes
        : type.fixedDataBytes(rowCount);
    return payload + (validity == null ? 0 : validity.length);
  }

  /** How many miniblocks have each bit width (0 to 64); all zeros for PLAIN. For metrics. */
  public int[] bitWidths() {
    return encoding == Encoding.PLAIN ? new int[65]
        : GpuForCodec.bitWidthHistogram(packed(), rowCount, lanes());
  }

  public boolean isNull(int row) {
    checkRow(row);
    return validity != null && (validity[row >>> 3] & (1 << (row & 7))) == 0;
  }

  /** Value {@code row} (fixed-width columns), in the long convention; random access. */
  public long fixedValue(int row) {
    requireFixed();
    checkRow(row);
    return plainValues != null ? PlainValues.read(plainValues, row, type.id())
        : GpuForCodec.value(encoding, packed(), row, lanes());
  }

  /** All values (fixed-width columns), in the long convention. */
  public long[] decodeFixed() {
    return decodeFixed(0, rowCount);
  }

  /**
   * Values {@code [from, from + count)} (fixed-width columns), in the long convention: a slice
   * decoded alone. {@code from} is a multiple of {@link GpuForLayout#SET_VALUES}.
   */
  public long[] decodeFixed(int from, int count) {
    requireFixed();
    checkSlice(from, count);
    if (plainValues == null) {
      return GpuForCodec.decode(encoding, packed(), from, count, lanes());
    }
    long[] values = new long[count];
    for (int r = 0; r < count; r++) {
      values[r] = PlainValues.read(plainValues, from + r, type.id());
    }
    return values;
  }

  /**
   * Value {@code row} of a string column, a new array; null for a null row. Random access (for
   * a GPU-DFOR dictionary it sums up to 512 deltas: prefer {@link #decodeStrings} for many rows).
   */
  public byte[] stringValue(int row) {
    requireString();
    if (isNull(row)) {
      return null;
    }
    int entry = isDictionary() ? code(row) : row;
    return Arrays.copyOfRange(bytes, offsets[entry], offsets[entry + 1]);
  }

  /** All values of a string column, null for a null row (a dictionary's entries shared). */
  public byte[][] decodeStrings() {
    return decodeStrings(0, rowCount);
  }

  /**
   * Values {@code [from, from + count)} of a string column, null for a null row (a dictionary's
   * entries shared within the slice). {@code from} is a multiple of {@link
   * GpuForLayout#SET_VALUES}.
   */
  public byte[][] decodeStrings(int from, int count) {
    requireString();
    checkSlice(from, count);
    byte[][] values = new byte[count][];
    int[] codes = isDictionary() ? decodeCodes(from, count) : null;
    byte[][] entries = new byte[isDictionary() ? dictionarySize() : 0][];
    for (int i = 0; i < count; i++) {
      int r = from + i;
      if (isNull(r)) {
        continue;
      }
      if (codes == null) {
        values[i] = Arrays.copyOfRange(bytes, offsets[r], offsets[r + 1]);
      } else {
        int code = codes[i];
        if (entries[code] == null) {
          entries[code] = Arrays.copyOfRange(bytes, offsets[code], offsets[code + 1]);
        }
        values[i] = entries[code];
      }
    }
    return values;
  }

  /** Row {@code row}'s dictionary code (dictionary columns; a null row has its slot's code). */
  public int code(int row) {
    requireDictionary();
    checkRow(row);
    return (int) GpuForCodec.value(encoding, packed(), row, 32);
  }

  /** All rows' dictionary codes (dictionary columns). */
  public int[] decodeCodes() {
    return decodeCodes(0, rowCount);
  }

  /**
   * Rows {@code [from, from + count)}'s dictionary codes (dictionary columns); {@code from} is a
   * multiple of {@link GpuForLayout#SET_VALUES}.
   */
  public int[] decodeCodes(int from, int count) {
    requireDictionary();
    checkSlice(from, count);
    long[] codes = GpuForCodec.decode(encoding, packed(), from, count, 32);
    int[] result = new int[count];
    for (int r = 0; r < count; r++) {
      result[r] = (int) codes[r];
    }
    return result;
  }

  @Override
  public String toString() {
    return "EncodedColumn[" + type + ", " + rowCount + " rows, " + nullCount + " nulls, "
        + (isDictionary() ? "dictionary of " + dictionarySize() + ", codes " : "") + encoding
        + ", " + encodedBytes() + " of " + plainBytes() + " bytes]";
  }

  private static EncodedColumn plain(ColumnType type, int rows, int nulls, byte[] validity,
      long[] slots) {
    return new EncodedColumn(type, rows, nulls, Encoding.PLAIN, validity, null,
        PlainValues.toBytes(slots, rows, type.id()), null, null, 0);
  }

  /**
   * {@code values[0, rows)} canonical for {@code type}, each null row's slot holding the row
   * before it (the first non-null value for leading nulls; 0 when all are null).
   */
  private static long[] fillNullSlots(long[] values, boolean[] valid, int rows, TypeId type) {
    long[] slots = PlainValues.canonical(values, rows, type);
    if (valid == null) {
      return slots;
    }
    int first = 0;
    while (first < rows && !valid[first]) {
      first++;
    }
    long previous = first < rows ? slots[first] : 0;
    for (int r = 0; r < rows; r++) {
      if (valid[r]) {
        previous = slots[r];
      } else {
        slots[r] = previous;
      }
    }
    return slots;
  }

  private GpuForCodec.Packed packed() {
    return new GpuForCodec.Packed(words, blockStarts);
  }

  private static void checkRows(int rows, int values, int valid) {
    if (rows < 0 || rows > values || rows > valid) {
      throw new IllegalArgumentException(rows + " rows asked of " + values + " values and "
          + valid + " validity flags");
    }
  }

  /** A slice of the rows: from a GPU-DFOR set's start, within the column. */
  private void checkSlice(int from, int count) {
    if (from < 0 || count < 0 || from > rowCount - count
        || from % GpuForLayout.SET_VALUES != 0) {
      throw new IllegalArgumentException("a slice of a column of " + rowCount + " rows starts at"
          + " a multiple of " + GpuForLayout.SET_VALUES + " and lies in it, not " + count
          + " rows from " + from);
    }
  }

  private void checkRow(int row) {
    if (row < 0 || row >= rowCount) {
      throw new IndexOutOfBoundsException("row " + row + " of " + rowCount);
    }
  }

  private void requireEncoded() {
    if (words == null) {
      throw new IllegalStateException("a PLAIN " + type + " column has no GPU-FOR words");
    }
  }

  private void requireFixed() {
    if (type.isString()) {
      throw new IllegalStateException("a string column has no fixed-width values");
    }
  }

  private void requireString() {
    if (!type.isString()) {
      throw new IllegalStateException("a " + type + " column has no strings");
    }
  }

  private void requireDictionary() {
    if (!isDictionary()) {
      throw new IllegalStateException("not a dictionary column: " + this);
    }
  }
}
