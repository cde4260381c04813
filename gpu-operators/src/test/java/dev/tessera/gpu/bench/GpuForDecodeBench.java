package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.cuda.CudaColumnSum;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Benchmark (not a test) of GPU-FOR and GPU-DFOR decoding against reading the plain column: the
 * Crystal thesis's aggregation benchmark (load, decode, sum, store one 8-byte total), through
 * the loads the query kernels use (tessera_column_sum, run by {@link CudaColumnSum}).
 *
 * <p>For each bit width w from 1 to 32 (to 64 for LONG), a column of {@code rows} values uniform in
 * [2^(w-1), 2^w) (w = 1: 0 or 1; w = 32 for INT, 64 for LONG: every value of the type, since
 * [2^31, 2^32) does not fit an INT) is stored PLAIN, GPU-FOR and GPU-DFOR on the device. Each copy
 * is summed {@value #WARM_UP} times, then {@code runs} times timed by device events, every sum
 * checked against the host's. Printed per width: the encodings' bits per value (block starts
 * included), the median milliseconds of each, the effective bandwidth (the plain column's bytes
 * over the time), the ratios to plain, and whether each is within issue 13's target of
 * {@value #TARGET}x the plain read. One width's three copies are on the device at a time (about
 * 3.1 times the plain bytes).
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.GpuForDecodeBench [rows] [int|long|both] [runs]</pre>
 *
 * Defaults: 2^28 rows (1 GiB of INT), int, 10 runs. A LONG column has at most 2^27 rows: its
 * plain host copy is one Java byte array.
 */
public final class GpuForDecodeBench {
  private static final int WARM_UP = 2;
  private static final double TARGET = 1.3;
  private static final int MAX_LONG_ROWS = 1 << 27;

  private GpuForDecodeBench() {}

  /** One copy's figures. */
  private record Measurement(double bitsPerValue, double medianMillis) {}

  public static void main(String[] args) {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 1 << 28;
    List<ColumnType> types = switch (args.length > 1 ? args[1] : "int") {
      case "int" -> List.of(ColumnType.INT);
      case "long" -> List.of(ColumnType.LONG);
      case "both" -> List.of(ColumnType.INT, ColumnType.LONG);
      default -> throw new IllegalArgumentException("the second argument is int, long or both");
    };
    int runs = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    RuntimeOptions options = RuntimeOptions.defaults().withDeviceMemoryCap(8L << 30)
        .withPinnedMemoryCap(2L << 30);
    try (Backend backend = Backends.open(BackendKind.CUDA, options);
        GpuStream stream = backend.newStream()) {
      System.out.println("GPU-FOR decode-and-sum benchmark on " + backend.description());
      for (ColumnType type : types) {
        int typeRows = type.equals(ColumnType.LONG) ? Math.min(rows, MAX_LONG_ROWS) : rows;
        sweep(backend, stream, type, typeRows, runs);
      }
    }
  }

  private static void sweep(Backend backend, GpuStream stream, ColumnType type, int rows,
      int runs) {
    int lanes = type.id().width() * Byte.SIZE;
    long plainBytes = type.fixedDataBytes(rows);
    System.out.printf("%n%s, %,d rows (%,d plain bytes); median of %d runs after %d warm-ups;"
        + " target: within %.1fx of plain%n", type, rows, plainBytes, runs, WARM_UP, TARGET);
    System.out.printf("%5s %8s %8s %9s %9s %9s %10s %9s %9s %9s %10s %8s %8s%n", "bits",
        "FOR b/v", "DFOR b/v", "plain ms", "FOR ms", "DFOR ms", "plain GB/s", "FOR GB/s",
        "DFOR GB/s", "FOR/plain", "DFOR/plain", "FOR ok", "DFOR ok");
    int forWithin = 0;
    int dforWithin = 0;
    for (int width = 1; width <= lanes; width++) {
      long[] values = values(width, lanes, rows, width);
      long expected = 0;
      for (long value : values) {
        expected += value;
      }
      Measurement plain = measure(backend, stream, type, values, Encoding.PLAIN, expected, runs);
      Measurement forCopy = measure(backend, stream, type, values, Encoding.FOR, expected, runs);
      Measurement dfor = measure(backend, stream, type, values, Encoding.DFOR, expected, runs);
      double forRatio = forCopy.medianMillis() / plain.medianMillis();
      double dforRatio = dfor.medianMillis() / plain.medianMillis();
      forWithin += forRatio <= TARGET ? 1 : 0;
      dforWithin += dforRatio <= TARGET ? 1 : 0;
      System.out.printf("%5d %8.2f %8.2f %9.3f %9.3f %9.3f %10.1f %9.1f %9.1f %9.2f %10.2f %8s %8s%n",
          width, forCopy.bitsPerValue(), dfor.bitsPerValue(), plain.medianMillis(),
          forCopy.medianMillis(), dfor.medianMillis(), gbps(plainBytes, plain),
          gbps(plainBytes, forCopy), gbps(plainBytes, dfor), forRatio, dforRatio,
          forRatio <= TARGET ? "yes" : "NO", dforRatio <= TARGET ? "yes" : "NO");
    }
    System.out.printf("%s: GPU-FOR within %.1fx of plain at %d of %d widths, GPU-DFOR at %d%n",
        type, TARGET, forWithin, lanes, dforWithin);
  }

  /**
   * Values uniform in [2^(w-1), 2^w); 0 or 1 for w = 1; every value of the lanes for w = lanes.
   */
  static long[] values(int width, int lanes, int rows, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    long[] values = new long[rows];
    for (int r = 0; r < rows; r++) {
      if (width == lanes) {
        values[r] = lanes == Long.SIZE ? random.nextLong() : random.nextInt();
      } else if (width == 1) {
        values[r] = random.nextInt(2);
      } else {
        values[r] = (1L << (width - 1)) + (random.nextLong() >>> (Long.SIZE + 1 - width));
      }
    }
    return values;
  }

  /** Encodes, uploads and sums one copy; throws if a sum is not {@code expected}. */
  private static Measurement measure(Backend backend, GpuStream stream, ColumnType type,
      long[] values, Encoding encoding, long expected, int runs) {
    EncodedColumn column = EncodedColumn.encodeFixed(type, values, null, values.length, encoding);
    double bitsPerValue = column.encodedBytes() * 8.0 / values.length;
    double[] millis = new double[runs];
    try (DeviceEncodedColumn device = DeviceEncodedColumn.upload(column, backend.deviceMemory(),
            backend.stagingAllocator(), stream);
        DeviceColumn borrowed = device.borrow(() -> {});
        CudaColumnSum sum = CudaColumnSum.of(backend, borrowed, stream)) {
      column = null; // the host copy can go: up to a GiB
      backend.pinnedMemory().trim(); // the next upload's staging may not fit beside this one's
      for (int i = 0; i < WARM_UP + runs; i++) {
        CudaColumnSum.Result result = sum.run();
        if (result.sum() != expected) {
          throw new IllegalStateException(String.format("%s %s: the device summed %d, the host"
              + " %d", type, encoding, result.sum(), expected));
        }
        if (i >= WARM_UP) {
          millis[i - WARM_UP] = result.millis();
        }
      }
    } finally {
      backend.deviceMemory().trim();
    }
    Arrays.sort(millis);
    return new Measurement(bitsPerValue, millis[runs / 2]);
  }

  private static double gbps(long bytes, Measurement m) {
    return bytes / (m.medianMillis() * 1e6);
  }
}
