package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of the hash aggregation: {@code SELECT k, count(*), sum(v), min(v),
 * max(v) GROUP BY k} over one batch of int64 k and v, for several group counts. Prints the median
 * wall time of update + finish (each synchronizes) over the runs, and the bandwidth floor
 * (every input read once, every group's five values written once).
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.HashAggregateBench [rows] [deviceGBps] [backend]</pre>
 */
public final class HashAggregateBench {
  private static final int WARM_UP = 1;
  private static final int RUNS = 5;

  private HashAggregateBench() {}

  public static void main(String[] args) {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 32 << 20;
    double deviceGBps = args.length > 1 ? Double.parseDouble(args[1]) : 4245;
    BackendKind kind = BackendKind.fromConfigValue("backend", args.length > 2 ? args[2] : "cuda");
    RuntimeOptions options = RuntimeOptions.defaults().withDeviceMemoryCap(16L << 30)
        .withPinnedMemoryCap(4L << 30);
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG), 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM_INT, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
    try (Backend backend = Backends.open(kind, options); GpuStream stream = backend.newStream()) {
      System.out.println("hash aggregate benchmark on " + backend.description() + ", " + rows
          + " rows");
      System.out.println("groups        median ms   G rows/s   floor ms   x floor");
      for (long groups = 1; groups <= 10_000_000L; groups *= 10) {
        try (ColumnBatch<DeviceColumn> input = upload(backend, stream, rows, groups)) {
          HashAggregateKernel kernel = backend.hashAggregateKernel();
          double[] millis = new double[RUNS];
          long found = 0;
          for (int i = 0; i < WARM_UP + RUNS; i++) {
            long started = System.nanoTime();
            try (HashAggregateKernel.Aggregation a =
                    kernel.open(spec, backend.deviceMemory(), stream)) {
              a.update(input);
              try (ColumnBatch<DeviceColumn> out = a.finish()) {
                found = out.rowCount();
              }
            }
            if (i >= WARM_UP) {
              millis[i - WARM_UP] = (System.nanoTime() - started) / 1e6;
            }
          }
          Arrays.sort(millis);
          double median = millis[RUNS / 2];
          long bytes = rows * 16L + found * 40L;
          double floor = bytes / (deviceGBps * 1e9) * 1e3;
          System.out.printf("%,12d  %9.3f  %9.2f  %9.3f  %8.1f%n", found, median,
              rows / median / 1e6, floor, median / floor);
        }
      }
    }
  }

  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int rows,
      long groups) {
    Random random = new Random(groups);
    HostColumn k;
    HostColumn v;
    try (HostColumnBuilder kb = new HostColumnBuilder(ColumnType.LONG, rows,
            backend.stagingAllocator());
        HostColumnBuilder vb = new HostColumnBuilder(ColumnType.LONG, rows,
            backend.stagingAllocator())) {
      for (int i = 0; i < rows; i++) {
        kb.appendLong(i < groups ? i : Math.floorMod(random.nextLong(), groups));
        vb.appendLong(random.nextInt());
      }
      k = kb.build();
      v = vb.build();
    }
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(List.of(k, v), rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
