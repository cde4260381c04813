package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.expr.SparkTypes;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.parquet.bytes.BytesInput;
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

/**
 * Benchmark (not a test) of staging Spark batches for the device, as HostToDeviceExec does: one
 * core copies Spark vectors of 4,096 rows (Spark's batch) into one staging column of
 * {@code rows} rows, value by value (SparkColumnReader.appendValues, the path before bulk copies)
 * and in bulk (SparkColumnReader.append). Per vector kind (on-heap, off-heap, dictionary-encoded:
 * one Parquet dictionary of 1,000 entries for every batch, as a column chunk's, its strings
 * decoded once per task as HostToDeviceExec does, and for strings also "per batch", decoded
 * afresh for each batch) and type, with no NULLs and with 10%; prints GB/s of staged bytes
 * (values, offsets and validity) per core, the median of 5 runs after 2 warm-ups. For
 * dictionary-encoded columns also "as ids": staged as their dictionary ids and
 * entries (DictionaryIds, spark.tessera.upload.dictionaryIds.enabled), in GB/s of the values
 * the bulk path stages for the same rows.
 *
 * <pre>java -cp ... dev.tessera.spark.exec.StagingBench [rows]</pre>
 */
public final class StagingBench {
  private static final int SPARK_BATCH = 4096;
  private static final int WARM_UP = 2;
  private static final int RUNS = 5;

  private StagingBench() {}

  public static void main(String[] args) throws Exception {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 4 * 1024 * 1024;
    List<DataType> types = List.of(DataTypes.IntegerType, DataTypes.LongType,
        DataTypes.DoubleType, DataTypes.DateType, DataTypes.createDecimalType(7, 2),
        DataTypes.createDecimalType(15, 2), DataTypes.StringType);
    System.out.printf("staging %,d rows in Spark batches of %,d, one core%n", rows, SPARK_BATCH);
    System.out.println("vector      type             nulls   value by value GB/s   bulk GB/s"
        + "   x       as ids GB/s");
    // The host reference backend's staging allocator: a pool whose memory is reused, as the
    // plugin's pinned staging is (a fresh allocation per run would time the kernel's page faults).
    try (Backend backend = Backends.open(BackendKind.HOST_REFERENCE,
        RuntimeOptions.defaults().withPinnedMemoryCap(2L << 30))) {
      BufferAllocator allocator = backend.stagingAllocator();
      for (DataType type : List.of(DataTypes.IntegerType, DataTypes.LongType,
          DataTypes.DoubleType, DataTypes.StringType)) {
        System.out.printf("dictionary entries, %s: %.2f ns an entry (%,d entries)%n", type.sql(),
            measureEntries(type, allocator), BIG_DICTIONARY);
      }
      for (String kind : List.of("on-heap", "off-heap", "dictionary", "dictionary per batch")) {
        for (DataType type : types) {
          if (kind.equals("dictionary per batch") && type != DataTypes.StringType) {
            continue; // only strings decode entries themselves
          }
          if (kind.startsWith("dictionary")
              && type instanceof org.apache.spark.sql.types.DecimalType) {
            continue; // Parquet keeps decimals' dictionaries as ints/longs: like INT and LONG
          }
          for (double nulls : new double[] {0, 0.1}) {
            List<WritableColumnVector> batches = batches(kind, type, rows, nulls);
            try {
              ColumnType columnType = SparkTypes.columnType(type);
              double perValue = measure(batches, columnType, rows, false, false, allocator);
              double bulk = measure(batches, columnType, rows, true,
                  !kind.equals("dictionary per batch"), allocator);
              String ids = kind.equals("dictionary") && DictionaryIds.stageable(columnType)
                  ? String.format("%10.2f", measureIds(batches, columnType, rows, allocator))
                  : "         -";
              System.out.printf("%-11s %-16s %4.0f%%   %19.2f   %9.2f   %5.1f   %s%n", kind,
                  type.sql(), nulls * 100, perValue, bulk, bulk / perValue, ids);
            } finally {
              batches.forEach(WritableColumnVector::close);
            }
          }
        }
      }
    }
  }

  /** GB/s of staged bytes: the median of RUNS runs after WARM_UP. */
  private static double measure(List<WritableColumnVector> batches, ColumnType type, int rows,
      boolean bulk, boolean perChunk, BufferAllocator allocator) {
    double[] rates = new double[RUNS];
    for (int run = 0; run < WARM_UP + RUNS; run++) {
      long started = System.nanoTime();
      long bytes;
      try (HostColumnBuilder builder = new HostColumnBuilder(type, rows, allocator)) {
        // A task's decoded dictionary strings for this column, kept across its batches, or none.
        DictionaryStrings strings = perChunk ? new DictionaryStrings() : null;
        for (WritableColumnVector batch : batches) {
          if (bulk) {
            SparkColumnReader.append(batch, 0, SPARK_BATCH, type, builder, strings);
          } else {
            SparkColumnReader.appendValues(batch, 0, SPARK_BATCH, type, builder);
          }
        }
        bytes = builder.bytesUsed();
        try (HostColumn column = builder.build()) {
          bytes = Math.max(bytes, column.dataBytes());
        }
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      if (run >= WARM_UP) {
        rates[run - WARM_UP] = bytes / seconds / 1e9;
      }
    }
    Arrays.sort(rates);
    return rates[RUNS / 2];
  }

  /**
   * Staging a dictionary-encoded column as its ids and entries (DictionaryIds, decoded on the
   * device later): GB/s of the values and validity the bulk path stages for the same rows, so
   * the two rates compare; the median of RUNS runs after WARM_UP.
   */
  private static double measureIds(List<WritableColumnVector> batches, ColumnType type, int rows,
      BufferAllocator allocator) {
    long valueBytes;
    try (HostColumnBuilder builder = new HostColumnBuilder(type, rows, allocator)) {
      for (WritableColumnVector batch : batches) {
        SparkColumnReader.append(batch, 0, SPARK_BATCH, type, builder, null);
      }
      valueBytes = builder.bytesUsed();
    }
    double[] rates = new double[RUNS];
    for (int run = 0; run < WARM_UP + RUNS; run++) {
      long started = System.nanoTime();
      try (DictionaryIds ids = new DictionaryIds(type, allocator)) {
        ids.start(rows);
        for (WritableColumnVector batch : batches) {
          ids.append(batch, 0, SPARK_BATCH);
        }
        for (HostColumn staged : ids.finish()) {
          staged.close();
        }
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      if (run >= WARM_UP) {
        rates[run - WARM_UP] = valueBytes / seconds / 1e9;
      }
    }
    Arrays.sort(rates);
    return rates[RUNS / 2];
  }

  /** Entries of a dictionary as large as Parquet's default 1 MiB page holds of INT values. */
  private static final int BIG_DICTIONARY = 262_144;

  /**
   * Staging a column chunk's dictionary entries, as DictionaryIds does once per staged batch for
   * each dictionary its rows use: ns an entry, the median of RUNS runs after WARM_UP.
   */
  private static double measureEntries(DataType type, BufferAllocator allocator)
      throws Exception {
    byte[][] strings = new byte[BIG_DICTIONARY][];
    for (int i = 0; i < strings.length; i++) {
      strings[i] = ("customer#" + (100000 + i)).getBytes(StandardCharsets.UTF_8);
    }
    org.apache.parquet.column.Dictionary chunk = parquetDictionary(type, strings);
    ColumnType columnType = SparkTypes.columnType(type);
    double[] ns = new double[RUNS];
    try (OnHeapColumnVector v = new OnHeapColumnVector(SPARK_BATCH, type)) {
      v.reserveDictionaryIds(SPARK_BATCH);
      v.setDictionary(new ParquetDictionary(chunk, false));
      for (int run = 0; run < WARM_UP + RUNS; run++) {
        long started = System.nanoTime();
        try (DictionaryIds ids = new DictionaryIds(columnType, allocator)) {
          ids.start(SPARK_BATCH);
          ids.append(v, 0, 1);
          for (HostColumn staged : ids.finish()) {
            staged.close();
          }
        }
        if (run >= WARM_UP) {
          ns[run - WARM_UP] = (System.nanoTime() - started) / (double) BIG_DICTIONARY;
        }
      }
    }
    Arrays.sort(ns);
    return ns[RUNS / 2];
  }

  /**
   * A PLAIN-encoded Parquet dictionary of {@code strings.length} entries of {@code type}: entry i
   * is 7i (0.5i for DOUBLE), or {@code strings[i]}.
   */
  private static org.apache.parquet.column.Dictionary parquetDictionary(DataType type,
      byte[][] strings) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ByteBuffer word = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < strings.length; i++) {
      word.clear();
      if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
        word.putInt(7 * i);
      } else if (type == DataTypes.LongType) {
        word.putLong(7L * i);
      } else if (type == DataTypes.DoubleType) {
        word.putDouble(0.5 * i);
      } else {
        word.putInt(strings[i].length);
      }
      bytes.write(word.array(), 0, word.position());
      if (type == DataTypes.StringType) {
        bytes.write(strings[i]);
      }
    }
    DictionaryPage page = new DictionaryPage(BytesInput.from(bytes.toByteArray()),
        strings.length, Encoding.PLAIN);
    if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
      return new PlainValuesDictionary.PlainIntegerDictionary(page);
    } else if (type == DataTypes.LongType) {
      return new PlainValuesDictionary.PlainLongDictionary(page);
    } else if (type == DataTypes.DoubleType) {
      return new PlainValuesDictionary.PlainDoubleDictionary(page);
    }
    return new PlainValuesDictionary.PlainBinaryDictionary(page);
  }

  private static List<WritableColumnVector> batches(String kind, DataType type, int rows,
      double nulls) throws IOException {
    Random random = new Random(42);
    List<WritableColumnVector> batches = new ArrayList<>();
    byte[][] strings = new byte[1000][];
    for (int i = 0; i < strings.length; i++) {
      strings[i] = ("customer#" + (100000 + random.nextInt(900000))).getBytes(
          StandardCharsets.UTF_8);
    }
    // One Parquet dictionary for every batch, as a column chunk's is; Spark's reader wraps it
    // anew for each batch it reads (ParquetDictionary), and so does this.
    org.apache.parquet.column.Dictionary chunk = kind.startsWith("dictionary")
        ? parquetDictionary(type, strings) : null;
    for (int b = 0; b < rows / SPARK_BATCH; b++) {
      WritableColumnVector v = kind.equals("off-heap")
          ? new OffHeapColumnVector(SPARK_BATCH, type)
          : new OnHeapColumnVector(SPARK_BATCH, type);
      WritableColumnVector ids = kind.startsWith("dictionary")
          ? v.reserveDictionaryIds(SPARK_BATCH) : null;
      for (int r = 0; r < SPARK_BATCH; r++) {
        if (random.nextDouble() < nulls) {
          v.putNull(r);
          continue;
        }
        int n = random.nextInt(1000);
        if (ids != null) {
          ids.putInt(r, n);
        } else if (type == DataTypes.IntegerType || type == DataTypes.DateType) {
          v.putInt(r, n);
        } else if (type == DataTypes.LongType) {
          v.putLong(r, random.nextLong());
        } else if (type == DataTypes.DoubleType) {
          v.putDouble(r, random.nextDouble());
        } else if (type instanceof org.apache.spark.sql.types.DecimalType d) {
          v.putDecimal(r, Decimal.createUnsafe(random.nextInt(1_000_000), d.precision(),
              d.scale()), d.precision());
        } else {
          v.putByteArray(r, strings[n]);
        }
      }
      if (ids != null) {
        v.setDictionary(new ParquetDictionary(chunk, false));
      }
      batches.add(v);
    }
    return batches;
  }
}
