package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.expr.SparkTypes;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.values.dictionary.PlainValuesDictionary;
import org.apache.spark.sql.execution.datasources.parquet.ParquetDictionary;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Staging as dictionary ids against Spark's own decoding: a staged batch of Spark batches from
 * two column chunks (two Parquet dictionaries with NaN, -0.0, the types' extremes, empty and
 * multi-byte strings) and one
 * batch of plain pages, on- and off-heap vectors, with NULLs, appended in uneven pieces. Each
 * row's id looked up in the staged entries (-1 as NULL) must give what the value-by-value path
 * stages from the same vectors.
 */
class DictionaryIdsTest {
  private static final int ROWS = 700;
  private static final int ENTRIES = 50;

  private final BufferAllocator allocator = new RootAllocator();

  @AfterEach
  void nothingLeaks() {
    assertEquals(0, allocator.getAllocatedMemory(), "a staging buffer leaked");
    allocator.close();
  }

  static Stream<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (DataType type : List.of(DataTypes.ByteType, DataTypes.ShortType,
        DataTypes.IntegerType, DataTypes.DateType, DataTypes.LongType, DataTypes.TimestampType,
        DataTypes.FloatType, DataTypes.DoubleType, DataTypes.createDecimalType(7, 2),
        DataTypes.createDecimalType(15, 3), DataTypes.StringType)) {
      for (boolean offHeap : List.of(false, true)) {
        for (double nulls : List.of(0.0, 0.2)) {
          cases.add(Arguments.of(type, offHeap, nulls));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}, off-heap {1}, NULLs {2}")
  @MethodSource("cases")
  void idsLookedUpInTheirEntriesGiveSparksValues(DataType sparkType, boolean offHeap,
      double nulls) throws Exception {
    ColumnType type = SparkTypes.columnType(sparkType);
    Random random = new Random(sparkType.hashCode() + (offHeap ? 1 : 0));
    List<WritableColumnVector> vectors = new ArrayList<>();
    try {
      Dictionary chunk1 = dictionary(sparkType, random);
      Dictionary chunk2 = dictionary(sparkType, random);
      // Two Spark batches of chunk 1 (each with Spark's new wrapper), one of chunk 2, one plain.
      vectors.add(dictionaryBatch(sparkType, offHeap, chunk1, nulls, random));
      vectors.add(dictionaryBatch(sparkType, offHeap, chunk1, nulls, random));
      vectors.add(dictionaryBatch(sparkType, offHeap, chunk2, nulls, random));
      vectors.add(plainBatch(sparkType, offHeap, nulls, random));
      assertTrue(DictionaryIds.dictionaryEncoded(vectors.get(0)));
      assertFalse(DictionaryIds.dictionaryEncoded(vectors.get(3)));

      HostColumn[] staged;
      try (DictionaryIds ids = new DictionaryIds(type, allocator)) {
        ids.start(16);
        for (WritableColumnVector v : vectors) {
          for (int from = 0, piece = 1; from < ROWS; from += piece, piece = piece * 3 + 1) {
            ids.append(v, from, Math.min(piece, ROWS - from));
          }
        }
        staged = ids.finish();
        assertFalse(ids.started());
      }
      try (HostColumn idColumn = staged[0]; HostColumn entries = staged[1];
          HostColumnBuilder reference = new HostColumnBuilder(type, ROWS, allocator)) {
        for (WritableColumnVector v : vectors) {
          SparkColumnReader.appendValues(v, 0, ROWS, type, reference);
        }
        // Chunk 1's entries once, chunk 2's once, the plain batch's rows.
        assertEquals(2 * ENTRIES + ROWS, entries.rowCount(), "entries staged");
        try (HostColumn expected = reference.build()) {
          assertEquals(expected.rowCount(), idColumn.rowCount());
          for (int r = 0; r < expected.rowCount(); r++) {
            int id = idColumn.getInt(r);
            boolean isNull = id == -1 || entries.isNull(id);
            assertEquals(expected.isNull(r), isNull, "NULL at row " + r);
            if (!isNull && type.isString()) {
              assertEquals(expected.getString(r), entries.getString(id), "row " + r);
            } else if (!isNull) {
              assertEquals(bits(expected, r), bits(entries, id), "row " + r + " (id " + id + ")");
            }
          }
        }
      }
    } finally {
      vectors.forEach(WritableColumnVector::close);
    }
  }

  /** A value's bits as staged (a float's and a double's raw bits: NaN and -0.0 kept). */
  private static long bits(HostColumn c, int row) {
    return switch (c.type().id()) {
      case BYTE -> c.getByte(row);
      case SHORT -> c.getShort(row);
      case INT, DATE -> c.getInt(row);
      case FLOAT -> Float.floatToRawIntBits(c.getFloat(row));
      case DOUBLE -> Double.doubleToRawLongBits(c.getDouble(row));
      default -> c.getLong(row);
    };
  }

  private static WritableColumnVector vector(DataType type, boolean offHeap) {
    return offHeap ? new OffHeapColumnVector(ROWS, type) : new OnHeapColumnVector(ROWS, type);
  }

  private static WritableColumnVector dictionaryBatch(DataType type, boolean offHeap,
      Dictionary chunk, double nulls, Random random) {
    WritableColumnVector vector = vector(type, offHeap);
    WritableColumnVector ids = vector.reserveDictionaryIds(ROWS);
    for (int r = 0; r < ROWS; r++) {
      ids.putInt(r, random.nextInt(ENTRIES));
      if (random.nextDouble() < nulls) {
        vector.putNull(r);
      }
    }
    vector.setDictionary(new ParquetDictionary(chunk, false));
    return vector;
  }

  private static WritableColumnVector plainBatch(DataType type, boolean offHeap, double nulls,
      Random random) {
    WritableColumnVector vector = vector(type, offHeap);
    for (int r = 0; r < ROWS; r++) {
      if (random.nextDouble() < nulls) {
        vector.putNull(r);
        continue;
      }
      long value = random.nextLong();
      if (type == DataTypes.ByteType) {
        vector.putByte(r, (byte) value);
      } else if (type == DataTypes.ShortType) {
        vector.putShort(r, (short) value);
      } else if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
        vector.putInt(r, (int) value);
      } else if (type == DataTypes.FloatType) {
        vector.putFloat(r, (float) random.nextGaussian());
      } else if (type == DataTypes.DoubleType) {
        vector.putDouble(r, random.nextGaussian());
      } else if (type == DataTypes.StringType) {
        byte[] utf8 = ("plain " + value % 1000 + (r % 7 == 0 ? "" : "ü")).getBytes(
            java.nio.charset.StandardCharsets.UTF_8);
        vector.putByteArray(r, r % 11 == 0 ? new byte[0] : utf8);
      } else if (isIntDecimal(type)) {
        vector.putInt(r, (int) (value % 10_000_000));
      } else {
        vector.putLong(r, type == DataTypes.LongType || type == DataTypes.TimestampType
            ? value : value % 1_000_000_000_000_000L);
      }
    }
    return vector;
  }

  private static boolean isIntDecimal(DataType type) {
    return type instanceof org.apache.spark.sql.types.DecimalType d
        && d.precision() <= Decimal.MAX_INT_DIGITS();
  }

  /**
   * A PLAIN-encoded Parquet dictionary of {@link #ENTRIES} values of the Parquet type Spark reads
   * {@code type} from (INT32 for bytes, shorts, ints, dates and small decimals; INT64 for longs,
   * timestamps and other decimals), with the types' extremes, NaN and -0.0 among them.
   */
  private static Dictionary dictionary(DataType type, Random random) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ByteBuffer word = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    boolean int32 = type == DataTypes.ByteType || type == DataTypes.ShortType
        || type == DataTypes.IntegerType || type == DataTypes.DateType || isIntDecimal(type);
    for (int i = 0; i < ENTRIES; i++) {
      word.clear();
      if (type == DataTypes.StringType) {
        byte[] utf8 = (i == 0 ? "" : i == 1 ? "日本語" : "entry " + random.nextInt(1000))
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        word.putInt(utf8.length);
        bytes.write(word.array(), 0, word.position());
        bytes.write(utf8);
        continue;
      }
      if (type == DataTypes.FloatType) {
        word.putFloat(new float[] {Float.NaN, -0.0f, 0.0f, Float.MAX_VALUE,
            (float) random.nextGaussian()}[Math.min(i, 4)]);
      } else if (type == DataTypes.DoubleType) {
        word.putDouble(new double[] {Double.NaN, -0.0, Double.NEGATIVE_INFINITY,
            Double.MIN_VALUE, random.nextGaussian()}[Math.min(i, 4)]);
      } else if (int32) {
        int value = type == DataTypes.ByteType ? (byte) random.nextInt()
            : type == DataTypes.ShortType ? (short) random.nextInt()
            : isIntDecimal(type) ? random.nextInt(20_000_000) - 10_000_000
            : new int[] {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, random.nextInt()}[i % 4];
        word.putInt(value);
      } else {
        long value = type == DataTypes.LongType || type == DataTypes.TimestampType
            ? new long[] {Long.MIN_VALUE, Long.MAX_VALUE, 0, random.nextLong()}[i % 4]
            : random.nextLong() % 1_000_000_000_000_000L;
        word.putLong(value);
      }
      bytes.write(word.array(), 0, word.position());
    }
    DictionaryPage page = new DictionaryPage(BytesInput.from(bytes.toByteArray()), ENTRIES,
        Encoding.PLAIN);
    if (type == DataTypes.StringType) {
      return new PlainValuesDictionary.PlainBinaryDictionary(page);
    } else if (type == DataTypes.FloatType) {
      return new PlainValuesDictionary.PlainFloatDictionary(page);
    } else if (type == DataTypes.DoubleType) {
      return new PlainValuesDictionary.PlainDoubleDictionary(page);
    } else if (int32) {
      return new PlainValuesDictionary.PlainIntegerDictionary(page);
    }
    return new PlainValuesDictionary.PlainLongDictionary(page);
  }
}
