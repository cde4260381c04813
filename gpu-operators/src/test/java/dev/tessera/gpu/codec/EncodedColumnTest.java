package dev.tessera.gpu.codec;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Arrays;
import java.util.Random;
import java.util.function.IntToLongFunction;
import org.junit.jupiter.api.Test;

/**
 * Cached columns: the choice of encoding, null slots, strings plain or as a dictionary, the
 * sizes reported, host decoding (bulk and random access) and Java serialization.
 */
class EncodedColumnTest {
  private static final ColumnType[] INTEGER_TYPES = {ColumnType.BYTE, ColumnType.SHORT,
      ColumnType.INT, ColumnType.DATE, ColumnType.LONG, ColumnType.TIMESTAMP,
      ColumnType.decimal(18, 2)};
  private static final int[] COUNTS = {0, 1, 127, 128, 129, 511, 512, 513, 1000};

  // ---- the choice ----

  @Test
  void sortedKeysAreDfor() {
    long[] values = sequence(10_000, i -> 6_000_000_000L + i);
    EncodedColumn column = assertFixedRoundTrip(ColumnType.LONG, values, null);
    assertEquals(Encoding.DFOR, column.encoding());
    assertEquals(Encoding.DFOR, assertFixedRoundTrip(ColumnType.INT,
        sequence(10_000, i -> 1_000_000 + 3 * i), null).encoding());
  }

  @Test
  void uniformSmallRangesAreFor() {
    Random random = new Random(1);
    long[] values = sequence(10_000, i -> random.nextInt(1000));
    EncodedColumn column = assertFixedRoundTrip(ColumnType.INT, values, null);
    assertEquals(Encoding.FOR, column.encoding());
    assertTrue(column.encodedBytes() < column.plainBytes() / 2, column.toString());
    assertEquals(4L * 10_000, column.plainBytes());
    assertEquals(4L * (column.words().length + column.blockStarts().length),
        column.encodedBytes());
    int[] widths = column.bitWidths();
    assertEquals(65, widths.length);
    assertEquals(4 * GpuForLayout.blocks(10_000), Arrays.stream(widths).sum());
    assertEquals(widths[10], Arrays.stream(widths).max().getAsInt()); // mostly 10 bits
  }

  @Test
  void fullRangeLongsArePlain() {
    Random random = new Random(2);
    long[] values = sequence(1000, i -> random.nextLong());
    EncodedColumn column = assertFixedRoundTrip(ColumnType.LONG, values, null);
    assertEquals(Encoding.PLAIN, column.encoding());
    assertEquals(8000, column.plainValues().length);
    assertEquals(8000, column.encodedBytes());
    assertArrayEquals(new int[65], column.bitWidths());
    assertThrows(IllegalStateException.class, column::words);
  }

  @Test
  void floatingPointAndBooleansArePlain() {
    long[] floats = sequence(1000, i -> Float.floatToIntBits(0.5f));
    long[] doubles = sequence(1000, i -> Double.doubleToLongBits(-i * 0.25));
    long[] booleans = sequence(1000, i -> i % 3 == 0 ? 1 : 0);
    assertEquals(Encoding.PLAIN, assertFixedRoundTrip(ColumnType.FLOAT, floats, null).encoding());
    assertEquals(Encoding.PLAIN,
        assertFixedRoundTrip(ColumnType.DOUBLE, doubles, null).encoding());
    EncodedColumn bools = assertFixedRoundTrip(ColumnType.BOOLEAN, booleans, null);
    assertEquals(Encoding.PLAIN, bools.encoding());
    assertEquals(1000, bools.plainValues().length);
    assertEquals(1, bools.plainValues()[0]);
  }

  @Test
  void plainValuesAreLittleEndianDeviceLayout() {
    EncodedColumn column = EncodedColumn.encodeFixed(ColumnType.SHORT,
        new long[] {0x1234, -2}, null, 2);
    assertEquals(Encoding.PLAIN, column.encoding());
    assertArrayEquals(new byte[] {0x34, 0x12, (byte) 0xFE, (byte) 0xFF}, column.plainValues());
    EncodedColumn doubles = EncodedColumn.encodeFixed(ColumnType.DOUBLE,
        new long[] {Double.doubleToLongBits(1.0)}, null, 1);
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, (byte) 0xF0, 0x3F}, doubles.plainValues());
  }

  @Test
  void theSmallestEncodingIsChosenTiesPreferringPlainThenFor() {
    Random random = new Random(3);
    for (int trial = 0; trial < 300; trial++) {
      ColumnType type = INTEGER_TYPES[trial % INTEGER_TYPES.length];
      int rows = random.nextInt(700);
      int range = 1 << random.nextInt(20);
      boolean sorted = random.nextBoolean();
      long[] values = sequence(rows, i -> sorted ? i * (long) range : random.nextInt(range));
      EncodedColumn column = assertFixedRoundTrip(type, values, null);
      int lanes = GpuForLayout.lanes(type.id().width());
      long[] canonical = column.decodeFixed();
      long plain = (long) rows * type.id().width();
      long f = GpuForCodec.packedBytes(GpuForCodec.forWords(canonical, rows, lanes), rows);
      long d = GpuForCodec.packedBytes(GpuForCodec.dforWords(canonical, rows, lanes), rows);
      Encoding expected = plain <= Math.min(f, d) ? Encoding.PLAIN
          : f <= d ? Encoding.FOR : Encoding.DFOR;
      assertEquals(expected, column.encoding(), type + " " + rows + " " + range);
      assertEquals(Math.min(plain, Math.min(f, d)), column.encodedBytes());
    }
    // 16 equal bytes: 16 plain, 16 GPU-FOR (reference, widths, 2 block starts): plain
    assertEquals(Encoding.PLAIN, EncodedColumn.encodeFixed(ColumnType.BYTE,
        new long[16], null, 16).encoding());
    assertEquals(Encoding.FOR, EncodedColumn.encodeFixed(ColumnType.BYTE,
        new long[17], null, 17).encoding());
    assertEquals(Encoding.PLAIN,
        EncodedColumn.encodeFixed(ColumnType.LONG, new long[0], null, 0).encoding());
  }

  // ---- every type, count and boundary ----

  @Test
  void integerTypesRoundTripAtEveryCount() {
    Random random = new Random(4);
    for (ColumnType type : INTEGER_TYPES) {
      for (int count : COUNTS) {
        assertFixedRoundTrip(type, sequence(count, i -> random.nextLong()), null);
        assertFixedRoundTrip(type, sequence(count, i -> random.nextInt(100) - 50), null);
        assertFixedRoundTrip(type, sequence(count, i -> -3), null);
        assertFixedRoundTrip(type, sequence(count, i -> i % 32 == 9 ? 100_000 : i % 4), null);
        assertFixedRoundTrip(type, sequence(count, i -> i - 60), randomValid(random, count, 0.3));
      }
    }
  }

  @Test
  void boundariesRoundTrip() {
    long[] extremes = {Long.MIN_VALUE, Long.MAX_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE,
        Short.MIN_VALUE, Short.MAX_VALUE, Byte.MIN_VALUE, Byte.MAX_VALUE, 0, -1};
    for (ColumnType type : INTEGER_TYPES) {
      for (int count : COUNTS) {
        assertFixedRoundTrip(type, sequence(count, i -> extremes[i % extremes.length]), null);
        assertFixedRoundTrip(type, sequence(count, i -> i % 2 == 0 ? Long.MAX_VALUE : 0), null);
      }
    }
    // out-of-range input is narrowed to the type, whatever the encoding
    EncodedColumn bytes = EncodedColumn.encodeFixed(ColumnType.BYTE,
        sequence(300, i -> 200), null, 300);
    assertEquals(Encoding.FOR, bytes.encoding());
    assertEquals(-56, bytes.fixedValue(7));
  }

  // ---- nulls ----

  @Test
  void nullSlotsHoldThePreviousValue() {
    long[] values = {9, 5, 6, 9, 7, 9};
    boolean[] valid = {false, true, true, false, true, false};
    EncodedColumn column = assertFixedRoundTrip(ColumnType.INT, values, valid);
    assertEquals(3, column.nullCount());
    assertArrayEquals(new long[] {5, 5, 6, 6, 7, 7}, column.decodeFixed());
    assertArrayEquals(new byte[] {0b010110}, column.validity());
    assertEquals(1 + 6 * 4, column.plainBytes());
  }

  @Test
  void nullHeavyAndAllNullColumns() {
    Random random = new Random(5);
    for (ColumnType type : INTEGER_TYPES) {
      for (int count : COUNTS) {
        long[] values = sequence(count, i -> random.nextLong());
        assertFixedRoundTrip(type, values, randomValid(random, count, 0.95));
        EncodedColumn allNull = assertFixedRoundTrip(type, values, new boolean[count]);
        assertEquals(count, allNull.nullCount());
        assertTrue(Arrays.stream(allNull.decodeFixed()).allMatch(v -> v == 0));
      }
    }
    // whatever a null row's value, it widens nothing: sorted with nulls stays narrow DFOR
    boolean[] valid = randomValid(random, 5000, 0.5);
    EncodedColumn sorted = assertFixedRoundTrip(ColumnType.LONG,
        sequence(5000, i -> valid[i] ? (1L << 50) + i : random.nextLong()), valid);
    assertEquals(Encoding.DFOR, sorted.encoding());
    assertEquals(0, Arrays.stream(sorted.bitWidths()).skip(6).sum());
  }

  @Test
  void allValidFlagsMeanNoBitmap() {
    boolean[] valid = new boolean[10];
    Arrays.fill(valid, true);
    EncodedColumn column = assertFixedRoundTrip(ColumnType.INT, new long[10], valid);
    assertNull(column.validity());
    assertEquals(0, column.nullCount());
  }

  // ---- slices ----

  @Test
  void slicesDecodeAsTheirRowsOfTheWholeColumn() {
    Random random = new Random(12);
    int rows = 5 * GpuForLayout.SET_VALUES + 77;
    long[] sorted = new long[rows];
    long[] small = new long[rows];
    long[] wide = new long[rows];
    boolean[] valid = new boolean[rows];
    byte[][] strings = new byte[rows][];
    byte[][] distinct = new byte[rows][];
    String[] keys = {"ASIA", "", "日本語", "EUROPE"};
    for (int i = 0; i < rows; i++) {
      sorted[i] = 1_000_000L * i + random.nextInt(1000); // GPU-DFOR
      small[i] = random.nextInt(50) - 25; // GPU-FOR
      wide[i] = random.nextLong(); // plain
      valid[i] = i % 13 != 4;
      strings[i] = i % 17 == 2 ? null : keys[random.nextInt(keys.length)].getBytes(UTF_8);
      distinct[i] = i % 19 == 5 ? null : ("part#" + i).getBytes(UTF_8);
    }
    EncodedColumn[] fixed = {
        EncodedColumn.encodeFixed(ColumnType.LONG, sorted, null, rows),
        EncodedColumn.encodeFixed(ColumnType.INT, small, valid, rows),
        EncodedColumn.encodeFixed(ColumnType.LONG, wide, valid, rows)};
    assertEquals(Encoding.DFOR, fixed[0].encoding());
    assertEquals(Encoding.FOR, fixed[1].encoding());
    assertEquals(Encoding.PLAIN, fixed[2].encoding());
    EncodedColumn dictionary = EncodedColumn.encodeStrings(strings, rows);
    EncodedColumn plainStrings = EncodedColumn.encodeStrings(distinct, rows);
    assertTrue(dictionary.isDictionary());
    assertFalse(plainStrings.isDictionary());
    int set = GpuForLayout.SET_VALUES;
    int[][] slices = {{0, rows}, {0, set}, {set, 2 * set}, {2 * set, rows - 2 * set},
        {5 * set, 77}, {rows - 77, 77}, {3 * set, 0}};
    for (int[] slice : slices) {
      int from = slice[0];
      int count = slice[1];
      for (EncodedColumn column : fixed) {
        assertArrayEquals(Arrays.copyOfRange(column.decodeFixed(), from, from + count),
            column.decodeFixed(from, count), column + " from " + from);
      }
      for (EncodedColumn column : new EncodedColumn[] {dictionary, plainStrings}) {
        assertArrayEquals(Arrays.copyOfRange(column.decodeStrings(), from, from + count),
            column.decodeStrings(from, count), column + " from " + from);
      }
    }
    // A slice starts where a GPU-DFOR set does, and lies in the column.
    assertThrows(IllegalArgumentException.class, () -> fixed[0].decodeFixed(128, 10));
    assertThrows(IllegalArgumentException.class, () -> fixed[1].decodeFixed(-set, 10));
    assertThrows(IllegalArgumentException.class, () -> fixed[2].decodeFixed(5 * set, 78));
    assertThrows(IllegalArgumentException.class, () -> dictionary.decodeStrings(0, rows + 1));
    assertThrows(IllegalArgumentException.class, () -> plainStrings.decodeStrings(0, -1));
  }

  // ---- strings ----

  @Test
  void fewDistinctStringsAreADictionary() {
    String[] keys = {"ASIA", "EUROPE", "", "AMERICA", "日本語", "MIDDLE EAST", "AFRICA"};
    Random random = new Random(6);
    byte[][] values = new byte[5000][];
    for (int i = 0; i < values.length; i++) {
      values[i] = i % 11 == 3 ? null : keys[random.nextInt(keys.length)].getBytes(UTF_8);
    }
    EncodedColumn column = assertStringRoundTrip(values);
    assertTrue(column.isDictionary());
    assertEquals(Encoding.FOR, column.encoding());
    assertEquals(7, column.dictionarySize());
    assertEquals(8, column.offsets().length);
    // entries in order of first appearance
    String first = new String(column.bytes(), 0, column.offsets()[1], UTF_8);
    assertEquals(new String(values[0], UTF_8), first);
    assertEquals(0, column.code(0));
    // a null row has the code of the row before it
    assertEquals(column.code(2), column.code(3));
    assertTrue(column.encodedBytes() < column.plainBytes() / 4, column.toString());
  }

  @Test
  void distinctStringsArePlain() {
    byte[][] values = new byte[1000][];
    for (int i = 0; i < values.length; i++) {
      values[i] = ("customer#" + (i * 7919 % 1000) + "-é").getBytes(UTF_8);
    }
    EncodedColumn column = assertStringRoundTrip(values);
    assertFalse(column.isDictionary());
    assertEquals(Encoding.PLAIN, column.encoding());
    assertEquals(1001, column.offsets().length);
    assertEquals(0, column.dictionarySize());
    assertEquals(column.plainBytes(), column.encodedBytes());
    assertThrows(IllegalStateException.class, () -> column.code(0));
  }

  @Test
  void sortedDistinctCodesCanBeDfor() {
    // each key repeated 4 times, in order: codes 0,0,0,0,1,1,1,1,... (GPU-DFOR's best case)
    byte[][] values = new byte[20_000][];
    for (int i = 0; i < values.length; i++) {
      values[i] = ("k" + i / 4).getBytes(UTF_8);
    }
    EncodedColumn column = assertStringRoundTrip(values);
    assertTrue(column.isDictionary());
    assertEquals(Encoding.DFOR, column.encoding());
    assertEquals(5000, column.dictionarySize());
  }

  @Test
  void stringEdgeCases() {
    for (int count : COUNTS) {
      byte[][] allNull = new byte[count][];
      EncodedColumn nulls = assertStringRoundTrip(allNull);
      assertEquals(Encoding.PLAIN, nulls.encoding());
      assertEquals(count, nulls.nullCount());
      assertArrayEquals(new int[count + 1], nulls.offsets());
      byte[][] empty = new byte[count][];
      Arrays.fill(empty, new byte[0]);
      assertStringRoundTrip(empty);
      byte[][] repeated = new byte[count][];
      for (int i = 0; i < count; i++) {
        repeated[i] = i % 5 == 0 ? null : ("ключ" + i % 3).getBytes(UTF_8);
      }
      assertStringRoundTrip(repeated);
    }
    // the array may be longer than the rows
    byte[][] longer = {"a".getBytes(UTF_8), null, "b".getBytes(UTF_8)};
    EncodedColumn two = EncodedColumn.encodeStrings(longer, 2);
    assertEquals(2, two.rowCount());
    assertArrayEquals(new byte[][] {"a".getBytes(UTF_8), null}, two.decodeStrings());
  }

  // ---- serialization, misuse ----

  @Test
  void javaSerializationRoundTrips() throws Exception {
    Random random = new Random(7);
    EncodedColumn[] columns = {
        EncodedColumn.encodeFixed(ColumnType.LONG, sequence(3000, i -> 77L * i), null, 3000),
        EncodedColumn.encodeFixed(ColumnType.decimal(12, 3),
            sequence(3000, i -> random.nextInt(5000)), randomValid(random, 3000, 0.2), 3000),
        EncodedColumn.encodeFixed(ColumnType.DOUBLE, sequence(10, i -> i), null, 10),
        EncodedColumn.encodeStrings(new byte[][] {"x".getBytes(UTF_8), null,
            "x".getBytes(UTF_8), "x".getBytes(UTF_8)}, 4),
        EncodedColumn.encodeStrings(new byte[][] {"x".getBytes(UTF_8), null}, 2)};
    for (EncodedColumn column : columns) {
      EncodedColumn copy = serialize(column);
      assertEquals(column.toString(), copy.toString());
      assertEquals(column.type(), copy.type());
      assertEquals(column.nullCount(), copy.nullCount());
      assertEquals(column.encodedBytes(), copy.encodedBytes());
      assertEquals(column.plainBytes(), copy.plainBytes());
      assertArrayEquals(column.validity(), copy.validity());
      if (column.type().isString()) {
        assertArrayEquals(column.decodeStrings(), copy.decodeStrings());
      } else {
        assertArrayEquals(column.decodeFixed(), copy.decodeFixed());
      }
    }
    assertEquals(ColumnType.decimal(12, 3), serialize(columns[1]).type());
  }

  @Test
  void rejectsMisuse() {
    assertThrows(IllegalArgumentException.class,
        () -> EncodedColumn.encodeFixed(ColumnType.STRING, new long[1], null, 1));
    assertThrows(IllegalArgumentException.class,
        () -> EncodedColumn.encodeFixed(ColumnType.INT, new long[1], null, 2));
    assertThrows(IllegalArgumentException.class,
        () -> EncodedColumn.encodeFixed(ColumnType.INT, new long[2], new boolean[1], 2));
    EncodedColumn ints = EncodedColumn.encodeFixed(ColumnType.INT, new long[2], null, 2);
    assertThrows(IllegalStateException.class, ints::offsets);
    assertThrows(IllegalStateException.class, () -> ints.stringValue(0));
    assertThrows(IndexOutOfBoundsException.class, () -> ints.fixedValue(2));
    EncodedColumn strings = EncodedColumn.encodeStrings(new byte[1][], 1);
    assertThrows(IllegalStateException.class, strings::decodeFixed);
  }

  // ---- helpers ----

  /** Encodes, then checks every row's nullness and value (random access and bulk). */
  private static EncodedColumn assertFixedRoundTrip(ColumnType type, long[] values,
      boolean[] valid) {
    int rows = values.length;
    EncodedColumn column = EncodedColumn.encodeFixed(type, values, valid, rows);
    assertEquals(type, column.type());
    assertEquals(rows, column.rowCount());
    long[] bulk = column.decodeFixed();
    assertEquals(rows, bulk.length);
    int nulls = 0;
    for (int r = 0; r < rows; r++) {
      boolean isNull = valid != null && !valid[r];
      nulls += isNull ? 1 : 0;
      assertEquals(isNull, column.isNull(r), "row " + r);
      assertEquals(bulk[r], column.fixedValue(r), type + " row " + r + " " + column);
      if (!isNull) {
        assertEquals(canonical(values[r], type.id()), bulk[r], type + " row " + r);
      }
    }
    assertEquals(nulls, column.nullCount());
    assertEquals(nulls == 0, column.validity() == null);
    assertEquals(column.lanes(), GpuForLayout.lanes(type.id().width()));
    return column;
  }

  /** Encodes, then checks every row (random access and bulk) and the plain size. */
  private static EncodedColumn assertStringRoundTrip(byte[][] values) {
    int rows = values.length;
    EncodedColumn column = EncodedColumn.encodeStrings(values, rows);
    assertEquals(rows, column.rowCount());
    assertEquals(32, column.lanes());
    byte[][] bulk = column.decodeStrings();
    long bytes = 0;
    for (int r = 0; r < rows; r++) {
      assertEquals(values[r] == null, column.isNull(r));
      assertArrayEquals(values[r], column.stringValue(r), "row " + r);
      assertArrayEquals(values[r], bulk[r], "row " + r);
      bytes += values[r] == null ? 0 : values[r].length;
    }
    long validity = column.nullCount() == 0 ? 0 : (rows + 7) / 8;
    assertEquals(4L * (rows + 1) + bytes + validity, column.plainBytes());
    assertTrue(column.encodedBytes() <= column.plainBytes());
    if (column.isDictionary()) {
      assertEquals(4L * (column.words().length + column.blockStarts().length)
          + 4L * column.offsets().length + column.bytes().length + validity,
          column.encodedBytes());
    }
    return column;
  }

  private static long canonical(long value, TypeId type) {
    return switch (type) {
      case BYTE -> (byte) value;
      case SHORT -> (short) value;
      case INT, DATE -> (int) value;
      default -> value;
    };
  }

  private static boolean[] randomValid(Random random, int count, double nullFraction) {
    boolean[] valid = new boolean[count];
    for (int i = 0; i < count; i++) {
      valid[i] = random.nextDouble() >= nullFraction;
    }
    return valid;
  }

  private static EncodedColumn serialize(EncodedColumn column)
      throws IOException, ClassNotFoundException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(column);
    }
    try (ObjectInputStream in = new ObjectInputStream(
        new ByteArrayInputStream(bytes.toByteArray()))) {
      return (EncodedColumn) in.readObject();
    }
  }

  private static long[] sequence(int count, IntToLongFunction value) {
    long[] values = new long[count];
    for (int i = 0; i < count; i++) {
      values[i] = value.applyAsLong(i);
    }
    return values;
  }
}
