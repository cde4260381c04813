package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.values.dictionary.PlainValuesDictionary.PlainBinaryDictionary;
import org.apache.spark.sql.execution.datasources.parquet.ParquetDictionary;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.Dictionary;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bulk copies of SparkColumnReader.append against its value-by-value path, per kind of
 * Spark vector (on-heap, off-heap, dictionary-encoded, constant, Arrow) and type, with and
 * without NULLs, with NaN, -0.0, empty strings and the types' extremes: both must stage the
 * same bytes, bits and offsets, appended in uneven chunks after rows already staged.
 */
class SparkColumnReaderTest {
  private static final int ROWS = 1500;
  private static final List<DataType> TYPES = List.of(DataTypes.BooleanType, DataTypes.ByteType,
      DataTypes.ShortType, DataTypes.IntegerType, DataTypes.DateType, DataTypes.LongType,
      DataTypes.TimestampType, DataTypes.FloatType, DataTypes.DoubleType,
      DataTypes.createDecimalType(7, 2), DataTypes.createDecimalType(15, 3),
      DataTypes.StringType);

  private final BufferAllocator allocator = new RootAllocator();

  @AfterEach
  void nothingLeaks() {
    assertEquals(0, allocator.getAllocatedMemory(), "a staging buffer leaked");
    allocator.close();
  }

  static Stream<Arguments> writableVectors() {
    List<Arguments> cases = new ArrayList<>();
    for (DataType type : TYPES) {
      for (String kind : List.of("on-heap", "off-heap", "dictionary", "strings backwards")) {
        if (kind.equals("strings backwards") && type != DataTypes.StringType) {
          continue;
        }
        for (double nulls : new double[] {0, 0.2, 1}) {
          cases.add(Arguments.of(type, kind, nulls));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} {1} nulls={2}")
  @MethodSource("writableVectors")
  void writableVectorsStageWhatValueByValueStages(DataType type, String kind, double nulls)
      throws Unsupported {
    List<Object> values = values(type, ROWS, nulls, type.hashCode() + kind.hashCode());
    try (WritableColumnVector vector = writable(type, kind, values)) {
      assertSameStaging(vector, type);
    }
  }

  @Test
  void constantVectorsStageWhatValueByValueStages() throws Unsupported {
    for (DataType type : TYPES) {
      for (boolean isNull : new boolean[] {false, true}) {
        try (ConstantColumnVector vector = new ConstantColumnVector(ROWS, type)) {
          Object value = values(type, 1, 0, 3).get(0);
          if (isNull) {
            vector.setNull();
          } else {
            setConstant(vector, type, value);
          }
          assertSameStaging(vector, type);
        }
      }
    }
  }

  @Test
  void arrowVectorsStageWhatValueByValueStages() throws Unsupported {
    for (DataType type : TYPES) {
      for (double nulls : new double[] {0, 0.2}) {
        List<Object> values = values(type, ROWS, nulls, 11);
        try (FieldVector arrow = arrow(type, values, allocator)) {
          assertSameStaging(new ArrowColumnVector(arrow), type);
        }
      }
    }
  }

  @Test
  void parquetDictionaryStringsAreDecodedOncePerColumnChunk() throws Exception {
    PlainBinaryDictionary chunk1 = binaryDictionary("AMERICA", "", "ÉUROPE€", "ASIA");
    PlainBinaryDictionary chunk2 = binaryDictionary("x", "yy", "zzz", "");
    DictionaryStrings strings = new DictionaryStrings();
    try (HostColumnBuilder builder = new HostColumnBuilder(ColumnType.STRING, 2, allocator)) {
      // Two batches of chunk 1 (each in Spark's new wrapper), then one of chunk 2, the same ids.
      for (PlainBinaryDictionary chunk : List.of(chunk1, chunk1, chunk2)) {
        try (OnHeapColumnVector vector = new OnHeapColumnVector(5, DataTypes.StringType)) {
          WritableColumnVector ids = vector.reserveDictionaryIds(5);
          int[] rows = {2, 0, 1, 2, 3};
          for (int r = 0; r < rows.length; r++) {
            ids.putInt(r, rows[r]);
          }
          vector.putNull(3);
          ids.putInt(3, -1);
          vector.setDictionary(new ParquetDictionary(chunk, false));
          SparkColumnReader.append(vector, 0, 5, ColumnType.STRING, builder, strings);
          if (chunk == chunk1) {
            assertTrue(strings.get(2) != null, "chunk 1's entries kept for its next batch");
          }
        }
      }
      try (HostColumn column = builder.build()) {
        List<String> staged = new ArrayList<>();
        for (int r = 0; r < column.rowCount(); r++) {
          staged.add(column.isNull(r) ? null : column.getString(r));
        }
        assertEquals(Arrays.asList("ÉUROPE€", "AMERICA", "", null, "ASIA",
            "ÉUROPE€", "AMERICA", "", null, "ASIA",
            "zzz", "x", "yy", null, ""), staged, "chunk 2's strings, not chunk 1's");
      }
    }
  }

  /** A PLAIN-encoded Parquet dictionary of these strings (each its length, then its bytes). */
  private static PlainBinaryDictionary binaryDictionary(String... entries) throws Exception {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    for (String entry : entries) {
      byte[] utf8 = entry.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      bytes.write(java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN)
          .putInt(utf8.length).array());
      bytes.write(utf8);
    }
    return new PlainBinaryDictionary(new DictionaryPage(BytesInput.from(bytes.toByteArray()),
        entries.length, Encoding.PLAIN));
  }

  @Test
  void emptyRangesStageNothing() {
    try (OnHeapColumnVector vector = new OnHeapColumnVector(4, DataTypes.IntegerType);
        HostColumnBuilder builder = new HostColumnBuilder(ColumnType.INT, 4, allocator)) {
      SparkColumnReader.append(vector, 2, 2, ColumnType.INT, builder, null);
      assertEquals(0, builder.rowCount());
    }
  }

  /** Both paths stage rows [0, 3) value by value, then the rest in chunks of odd sizes. */
  private void assertSameStaging(ColumnVector vector, DataType sparkType) throws Unsupported {
    ColumnType type = SparkTypes.columnType(sparkType);
    try (HostColumn bulk = stage(vector, type, true);
        HostColumn reference = stage(vector, type, false)) {
      String where = sparkType + " " + vector.getClass().getSimpleName();
      assertEquals(reference.rowCount(), bulk.rowCount(), where + " rows");
      assertEquals(reference.nullCount(), bulk.nullCount(), where + " nulls");
      assertEquals(reference.dataBytes(), bulk.dataBytes(), where + " data bytes");
      for (int r = 0; r < reference.rowCount(); r++) {
        assertEquals(reference.isNull(r), bulk.isNull(r), where + " null at " + r);
      }
      for (long b = 0; b < reference.dataBytes(); b++) {
        assertEquals(reference.data().getByte(b), bulk.data().getByte(b), where + " byte " + b);
      }
      if (type.isString()) {
        for (int r = 0; r <= reference.rowCount(); r++) {
          assertEquals(reference.offsets().getInt(4L * r), bulk.offsets().getInt(4L * r),
              where + " offset " + r);
        }
      }
    }
  }

  private HostColumn stage(ColumnVector vector, ColumnType type, boolean bulk) {
    try (HostColumnBuilder builder = new HostColumnBuilder(type, 2, allocator)) {
      SparkColumnReader.appendValues(vector, 0, 3, type, builder);
      DictionaryStrings strings = new DictionaryStrings(); // kept across the chunks
      int row = 3;
      int chunk = 1;
      while (row < ROWS) {
        int to = Math.min(ROWS, row + chunk);
        if (bulk) {
          SparkColumnReader.append(vector, row, to, type, builder, strings);
        } else {
          SparkColumnReader.appendValues(vector, row, to, type, builder);
        }
        row = to;
        chunk = chunk * 3 + 1;
      }
      return builder.build();
    }
  }

  /** Random values of a Spark type (as the Java types Spark's setters take), some NULL. */
  private static List<Object> values(DataType type, int rows, double nulls, long seed) {
    Random random = new Random(seed);
    List<Object> values = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      if (random.nextDouble() < nulls) {
        values.add(null);
        continue;
      }
      boolean edge = random.nextInt(8) == 0;
      Object v;
      if (type == DataTypes.BooleanType) {
        v = random.nextBoolean();
      } else if (type == DataTypes.ByteType) {
        v = edge ? Byte.MIN_VALUE : (byte) random.nextInt();
      } else if (type == DataTypes.ShortType) {
        v = edge ? Short.MAX_VALUE : (short) random.nextInt();
      } else if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
        v = edge ? Integer.MIN_VALUE : random.nextInt(50); // repeated values: dictionaries
      } else if (type == DataTypes.LongType || type == DataTypes.TimestampType) {
        v = edge ? Long.MAX_VALUE : random.nextLong() % 1000;
      } else if (type == DataTypes.FloatType) {
        v = edge ? new float[] {Float.NaN, -0.0f, Float.NEGATIVE_INFINITY}[random.nextInt(3)]
            : random.nextFloat();
      } else if (type == DataTypes.DoubleType) {
        v = edge ? new double[] {Double.NaN, -0.0, Double.MAX_VALUE}[random.nextInt(3)]
            : random.nextDouble();
      } else if (type instanceof org.apache.spark.sql.types.DecimalType d) {
        long bound = (long) Math.pow(10, d.precision()) - 1;
        long unscaled = edge ? -bound : random.nextLong() % bound;
        v = Decimal.createUnsafe(unscaled, d.precision(), d.scale());
      } else {
        v = edge ? "" : "s" + random.nextInt(40) + (random.nextBoolean() ? "é€" : "");
      }
      values.add(v);
    }
    return values;
  }

  private static WritableColumnVector writable(DataType type, String kind, List<Object> values) {
    WritableColumnVector vector = kind.equals("off-heap")
        ? new OffHeapColumnVector(values.size(), type)
        : new OnHeapColumnVector(values.size(), type);
    boolean dictionary = kind.equals("dictionary") && type != DataTypes.BooleanType
        && type != DataTypes.ByteType && type != DataTypes.ShortType;
    if (dictionary) {
      List<Object> entries = new ArrayList<>();
      WritableColumnVector ids = vector.reserveDictionaryIds(values.size());
      for (int r = 0; r < values.size(); r++) {
        Object v = values.get(r);
        if (v == null) {
          vector.putNull(r);
          ids.putInt(r, r % 2 == 0 ? -1 : Integer.MAX_VALUE); // a NULL's entry means nothing
          continue;
        }
        if (type instanceof org.apache.spark.sql.types.DecimalType d) {
          // Parquet's dictionary holds a decimal's unscaled value: an int up to 9 digits.
          long unscaled = ((Decimal) v).toUnscaledLong();
          v = d.precision() <= Decimal.MAX_INT_DIGITS() ? (Object) (int) unscaled : unscaled;
        }
        int id = entries.indexOf(v);
        if (id < 0) {
          id = entries.size();
          entries.add(v);
        }
        ids.putInt(r, id);
      }
      vector.setDictionary(new ListDictionary(entries));
      return vector;
    }
    for (int i = 0; i < values.size(); i++) {
      int r = kind.equals("strings backwards") ? values.size() - 1 - i : i;
      put(vector, type, r, values.get(r));
    }
    return vector;
  }

  private static void put(WritableColumnVector vector, DataType type, int r, Object v) {
    if (v == null) {
      vector.putNull(r);
    } else if (type == DataTypes.BooleanType) {
      vector.putBoolean(r, (Boolean) v);
    } else if (type == DataTypes.ByteType) {
      vector.putByte(r, (Byte) v);
    } else if (type == DataTypes.ShortType) {
      vector.putShort(r, (Short) v);
    } else if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
      vector.putInt(r, (Integer) v);
    } else if (type == DataTypes.LongType || type == DataTypes.TimestampType) {
      vector.putLong(r, (Long) v);
    } else if (type == DataTypes.FloatType) {
      vector.putFloat(r, (Float) v);
    } else if (type == DataTypes.DoubleType) {
      vector.putDouble(r, (Double) v);
    } else if (type instanceof org.apache.spark.sql.types.DecimalType d) {
      vector.putDecimal(r, (Decimal) v, d.precision());
    } else {
      vector.putByteArray(r, ((String) v).getBytes(StandardCharsets.UTF_8));
    }
  }

  private static void setConstant(ConstantColumnVector vector, DataType type, Object v) {
    if (type == DataTypes.BooleanType) {
      vector.setBoolean((Boolean) v);
    } else if (type == DataTypes.ByteType) {
      vector.setByte((Byte) v);
    } else if (type == DataTypes.ShortType) {
      vector.setShort((Short) v);
    } else if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
      vector.setInt((Integer) v);
    } else if (type == DataTypes.LongType || type == DataTypes.TimestampType) {
      vector.setLong((Long) v);
    } else if (type == DataTypes.FloatType) {
      vector.setFloat((Float) v);
    } else if (type == DataTypes.DoubleType) {
      vector.setDouble((Double) v);
    } else if (type instanceof org.apache.spark.sql.types.DecimalType d) {
      vector.setDecimal((Decimal) v, d.precision());
    } else {
      vector.setUtf8String(UTF8String.fromString((String) v));
    }
  }

  private static FieldVector arrow(DataType type, List<Object> values, BufferAllocator a) {
    if (type == DataTypes.BooleanType) {
      return filled(new BitVector("c", a), values, (v, r, x) -> v.set(r, (Boolean) x ? 1 : 0));
    } else if (type == DataTypes.ByteType) {
      return filled(new TinyIntVector("c", a), values, (v, r, x) -> v.set(r, (Byte) x));
    } else if (type == DataTypes.ShortType) {
      return filled(new SmallIntVector("c", a), values, (v, r, x) -> v.set(r, (Short) x));
    } else if (type == DataTypes.IntegerType) {
      return filled(new IntVector("c", a), values, (v, r, x) -> v.set(r, (Integer) x));
    } else if (type == DataTypes.DateType) {
      return filled(new DateDayVector("c", a), values, (v, r, x) -> v.set(r, (Integer) x));
    } else if (type == DataTypes.LongType) {
      return filled(new BigIntVector("c", a), values, (v, r, x) -> v.set(r, (Long) x));
    } else if (type == DataTypes.TimestampType) {
      return filled(new TimeStampMicroTZVector("c", a, "UTC"), values,
          (v, r, x) -> v.set(r, (Long) x));
    } else if (type == DataTypes.FloatType) {
      return filled(new Float4Vector("c", a), values, (v, r, x) -> v.set(r, (Float) x));
    } else if (type == DataTypes.DoubleType) {
      return filled(new Float8Vector("c", a), values, (v, r, x) -> v.set(r, (Double) x));
    } else if (type instanceof org.apache.spark.sql.types.DecimalType d) {
      return filled(new DecimalVector("c", a, d.precision(), d.scale()), values,
          (v, r, x) -> v.set(r, ((Decimal) x).toJavaBigDecimal()));
    }
    return filled(new VarCharVector("c", a), values,
        (v, r, x) -> v.setSafe(r, ((String) x).getBytes(StandardCharsets.UTF_8)));
  }

  /** Sets row r of an Arrow vector to value x (never NULL). */
  private interface ArrowSetter<V> {
    void set(V vector, int r, Object x);
  }

  /** {@code vector} holding {@code values}: the non-NULL ones set, the others left NULL. */
  private static <V extends FieldVector> V filled(V vector, List<Object> values,
      ArrowSetter<V> setter) {
    vector.setInitialCapacity(values.size());
    vector.allocateNew();
    for (int r = 0; r < values.size(); r++) {
      if (values.get(r) != null) {
        setter.set(vector, r, values.get(r));
      }
    }
    vector.setValueCount(values.size());
    return vector;
  }

  /** A dictionary of the distinct values, as Parquet's reader hands Spark one. */
  private record ListDictionary(List<Object> entries) implements Dictionary {
    @Override
    public int decodeToInt(int id) {
      return (Integer) entries.get(id);
    }

    @Override
    public long decodeToLong(int id) {
      return (Long) entries.get(id);
    }

    @Override
    public float decodeToFloat(int id) {
      return (Float) entries.get(id);
    }

    @Override
    public double decodeToDouble(int id) {
      return (Double) entries.get(id);
    }

    @Override
    public byte[] decodeToBinary(int id) {
      return ((String) entries.get(id)).getBytes(StandardCharsets.UTF_8);
    }
  }
}
