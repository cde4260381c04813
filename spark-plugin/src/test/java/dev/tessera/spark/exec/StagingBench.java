package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.expr.SparkTypes;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.execution.vectorized.Dictionary;
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
 * and in bulk (SparkColumnReader.append). Per vector kind (on-heap, off-heap, dictionary-encoded)
 * and type, with no NULLs and with 10%; prints GB/s of staged bytes (values, offsets and
 * validity) per core, the median of 5 runs after 2 warm-ups.
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
    System.out.println("vector      type             nulls   value by value GB/s   bulk GB/s   x");
    // The host reference backend's staging allocator: a pool whose memory is reused, as the
    // plugin's pinned staging is (a fresh allocation per run would time the kernel's page faults).
    try (Backend backend = Backends.open(BackendKind.HOST_REFERENCE,
        RuntimeOptions.defaults().withPinnedMemoryCap(2L << 30))) {
      BufferAllocator allocator = backend.stagingAllocator();
      for (String kind : List.of("on-heap", "off-heap", "dictionary")) {
        for (DataType type : types) {
          if (kind.equals("dictionary") && type instanceof org.apache.spark.sql.types.DecimalType) {
            continue; // Parquet keeps decimals' dictionaries as ints/longs: like INT and LONG
          }
          for (double nulls : new double[] {0, 0.1}) {
            List<WritableColumnVector> batches = batches(kind, type, rows, nulls);
            try {
              ColumnType columnType = SparkTypes.columnType(type);
              double perValue = measure(batches, columnType, rows, false, allocator);
              double bulk = measure(batches, columnType, rows, true, allocator);
              System.out.printf("%-11s %-16s %4.0f%%   %19.2f   %9.2f   %5.1f%n", kind, type.sql(),
                  nulls * 100, perValue, bulk, bulk / perValue);
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
      boolean bulk, BufferAllocator allocator) {
    double[] rates = new double[RUNS];
    for (int run = 0; run < WARM_UP + RUNS; run++) {
      long started = System.nanoTime();
      long bytes;
      try (HostColumnBuilder builder = new HostColumnBuilder(type, rows, allocator)) {
        for (WritableColumnVector batch : batches) {
          if (bulk) {
            SparkColumnReader.append(batch, 0, SPARK_BATCH, type, builder);
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

  private static List<WritableColumnVector> batches(String kind, DataType type, int rows,
      double nulls) {
    Random random = new Random(42);
    List<WritableColumnVector> batches = new ArrayList<>();
    byte[][] strings = new byte[1000][];
    for (int i = 0; i < strings.length; i++) {
      strings[i] = ("customer#" + (100000 + random.nextInt(900000))).getBytes(
          StandardCharsets.UTF_8);
    }
    for (int b = 0; b < rows / SPARK_BATCH; b++) {
      WritableColumnVector v = kind.equals("off-heap")
          ? new OffHeapColumnVector(SPARK_BATCH, type)
          : new OnHeapColumnVector(SPARK_BATCH, type);
      WritableColumnVector ids = kind.equals("dictionary") ? v.reserveDictionaryIds(SPARK_BATCH)
          : null;
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
        v.setDictionary(new Dictionary() {
          @Override
          public int decodeToInt(int id) {
            return id * 7;
          }

          @Override
          public long decodeToLong(int id) {
            return id * 7L;
          }

          @Override
          public float decodeToFloat(int id) {
            return id * 0.5f;
          }

          @Override
          public double decodeToDouble(int id) {
            return id * 0.5;
          }

          @Override
          public byte[] decodeToBinary(int id) {
            return strings[id].clone(); // Parquet's Binary.getBytes() copies too
          }
        });
      }
      batches.add(v);
    }
    return batches;
  }
}
