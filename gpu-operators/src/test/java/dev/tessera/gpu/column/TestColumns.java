package dev.tessera.gpu.column;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;

/** Random column contents as Java values, and the bridge to and from {@link HostColumn}. */
public final class TestColumns {
  private TestColumns() {}

  /**
   * Sorts {@code rows} by their text ({@code String.valueOf(row)}): an order in which two
   * backends' groups can be compared whatever their types. Each row's text is made once; made at
   * every comparison, it took about half of a 10^6-group differential test's time.
   */
  public static void sortByText(List<List<Object>> rows) {
    List<Map.Entry<String, List<Object>>> keyed = new ArrayList<>(rows.size());
    for (List<Object> row : rows) {
      keyed.add(Map.entry(String.valueOf(row), row));
    }
    keyed.sort(Map.Entry.comparingByKey());
    rows.clear();
    for (Map.Entry<String, List<Object>> e : keyed) {
      rows.add(e.getValue());
    }
  }

  /** {@code batch}'s rows, each a list of its columns' Java values ({@link #values}). */
  public static List<List<Object>> rows(ColumnBatch<HostColumn> batch) {
    List<List<Object>> rows = new ArrayList<>();
    for (int r = 0; r < batch.rowCount(); r++) {
      rows.add(new ArrayList<>());
    }
    for (HostColumn column : batch.columns()) {
      List<Object> values = values(column.type(), column);
      for (int r = 0; r < batch.rowCount(); r++) {
        rows.get(r).add(values.get(r));
      }
    }
    return rows;
  }

  /** One column type of each kind the device supports. */
  public static final List<ColumnType> ALL_TYPES = List.of(ColumnType.BOOLEAN, ColumnType.BYTE,
      ColumnType.SHORT, ColumnType.INT, ColumnType.LONG, ColumnType.FLOAT, ColumnType.DOUBLE,
      ColumnType.DATE, ColumnType.TIMESTAMP, ColumnType.decimal(18, 4), ColumnType.decimal(7, 0),
      ColumnType.STRING);

  private static final String[] STRINGS = {"", "a", "Tessera", "grüße", "日本語のテキスト",
      "emoji \uD83D\uDE80", "comma,quote\"", "x".repeat(300)};

  /** {@code rows} values of {@code type}, each null with probability {@code nullFraction}. */
  public static List<Object> random(ColumnType type, int rows, double nullFraction, long seed) {
    Random random = new Random(seed);
    List<Object> values = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      values.add(random.nextDouble() < nullFraction ? null : value(type, random, i));
    }
    return values;
  }

  private static Object value(ColumnType type, Random random, int i) {
    boolean edge = i % 17 == 0;
    return switch (type.id()) {
      case BOOLEAN -> random.nextBoolean();
      case BYTE -> edge ? (i % 2 == 0 ? Byte.MIN_VALUE : Byte.MAX_VALUE) : (byte) random.nextInt();
      case SHORT -> edge ? (i % 2 == 0 ? Short.MIN_VALUE : Short.MAX_VALUE)
          : (short) random.nextInt();
      case INT -> edge ? (i % 2 == 0 ? Integer.MIN_VALUE : Integer.MAX_VALUE) : random.nextInt();
      case LONG -> edge ? (i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : random.nextLong();
      case FLOAT -> edge ? new float[] {Float.NaN, -0.0f, Float.NEGATIVE_INFINITY,
          Float.MIN_VALUE}[i % 4] : random.nextFloat() * 1e6f - 5e5f;
      case DOUBLE -> edge ? new double[] {Double.NaN, -0.0, Double.POSITIVE_INFINITY,
          Double.MAX_VALUE}[i % 4] : random.nextGaussian() * 1e9;
      case DATE -> random.nextInt(200_000) - 100_000;
      case TIMESTAMP -> random.nextLong() / 1000;
      case DECIMAL -> {
        long bound = BigInteger.TEN.pow(type.precision()).longValueExact();
        long unscaled = edge ? bound - 1 : random.nextLong() % bound;
        yield new BigDecimal(BigInteger.valueOf(unscaled), type.scale());
      }
      case STRING -> STRINGS[random.nextInt(STRINGS.length)] + (random.nextBoolean() ? i : "");
    };
  }

  /** A host column holding {@code values}. */
  public static HostColumn build(ColumnType type, List<Object> values, BufferAllocator allocator) {
    return build(type, values, allocator, values.size());
  }

  /** A host column holding {@code values}, from a builder sized for {@code initialRows}. */
  public static HostColumn build(ColumnType type, List<Object> values, BufferAllocator allocator,
      int initialRows) {
    try (HostColumnBuilder builder = new HostColumnBuilder(type, initialRows, allocator)) {
      append(type, values, builder);
      return builder.build();
    }
  }

  /** Appends {@code values} to {@code builder} one by one. */
  public static void append(ColumnType type, List<Object> values, HostColumnBuilder builder) {
    for (Object v : values) {
      if (v == null) {
        builder.appendNull();
        continue;
      }
      switch (type.id()) {
        case BOOLEAN -> builder.appendBoolean((Boolean) v);
        case BYTE -> builder.appendByte((Byte) v);
        case SHORT -> builder.appendShort((Short) v);
        case INT, DATE -> builder.appendInt((Integer) v);
        case LONG, TIMESTAMP -> builder.appendLong((Long) v);
        case FLOAT -> builder.appendFloat((Float) v);
        case DOUBLE -> builder.appendDouble((Double) v);
        case DECIMAL -> builder.appendDecimal((BigDecimal) v);
        case STRING -> builder.appendString((String) v);
      }
    }
  }

  /** Asserts {@code column} holds exactly {@code values}; floats compare bit for bit. */
  public static void assertHolds(ColumnType type, List<Object> values, HostColumn column) {
    assertEquals(type, column.type());
    assertEquals(values.size(), column.rowCount(), "row count");
    assertEquals(values.stream().filter(v -> v == null).count(), column.nullCount(), "null count");
    for (int i = 0; i < values.size(); i++) {
      Object expected = values.get(i);
      String where = type + " row " + i;
      if (expected == null) {
        assertTrue(column.isNull(i), where + " should be null");
        continue;
      }
      assertTrue(!column.isNull(i), where + " should not be null");
      switch (type.id()) {
        case BOOLEAN -> assertEquals(expected, column.getBoolean(i), where);
        case BYTE -> assertEquals(expected, column.getByte(i), where);
        case SHORT -> assertEquals(expected, column.getShort(i), where);
        case INT, DATE -> assertEquals(expected, column.getInt(i), where);
        case LONG, TIMESTAMP -> assertEquals(expected, column.getLong(i), where);
        case FLOAT -> assertEquals(Float.floatToRawIntBits((Float) expected),
            Float.floatToRawIntBits(column.getFloat(i)), where);
        case DOUBLE -> assertEquals(Double.doubleToRawLongBits((Double) expected),
            Double.doubleToRawLongBits(column.getDouble(i)), where);
        case DECIMAL -> assertEquals(expected, column.getDecimal(i), where);
        case STRING -> assertArrayEquals(((String) expected).getBytes(
            java.nio.charset.StandardCharsets.UTF_8), column.getUtf8(i), where);
      }
    }
  }

  /** The values of {@code column} as Java objects (null for NULL), in the types build() takes. */
  public static List<Object> values(ColumnType type, HostColumn column) {
    List<Object> values = new ArrayList<>(column.rowCount());
    for (int i = 0; i < column.rowCount(); i++) {
      if (column.isNull(i)) {
        values.add(null);
        continue;
      }
      values.add(switch (type.id()) {
        case BOOLEAN -> column.getBoolean(i);
        case BYTE -> column.getByte(i);
        case SHORT -> column.getShort(i);
        case INT, DATE -> column.getInt(i);
        case LONG, TIMESTAMP -> column.getLong(i);
        case FLOAT -> column.getFloat(i);
        case DOUBLE -> column.getDouble(i);
        case DECIMAL -> column.getDecimal(i);
        case STRING -> column.getString(i);
      });
    }
    return values;
  }
}
