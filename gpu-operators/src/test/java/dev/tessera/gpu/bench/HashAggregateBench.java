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
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of the hash aggregation: {@code SELECT k, count(*), sum(v), min(v),
 * max(v) GROUP BY k} over one batch of int64 k and v, for several group counts, in three forms:
 * <ul>
 *   <li>"long keys": update(batch) (the fused kernel with the identity program);
 *   <li>"filter v > 0": the same with {@code WHERE v > 0}, update(program, batch): the filter,
 *       projection and aggregation in one kernel;
 *   <li>"string keys": k as a STRING ("key-" + number), up to 10^6 groups.
 * </ul>
 * Prints the median wall time of update + finish (each synchronizes) over the runs, and the
 * bandwidth floor (every input read once, every group's five values written once).
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.HashAggregateBench [rows] [deviceGBps] [backend]</pre>
 */
public final class HashAggregateBench {
  private static final int WARM_UP = 1;
  private static final int RUNS = 5;
  private static final long MAX_STRING_GROUPS = 1_000_000L;

  private HashAggregateBench() {}

  public static void main(String[] args) {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 32 << 20;
    double deviceGBps = args.length > 1 ? Double.parseDouble(args[1]) : 4245;
    BackendKind kind = BackendKind.fromConfigValue("backend", args.length > 2 ? args[2] : "cuda");
    RuntimeOptions options = RuntimeOptions.defaults().withDeviceMemoryCap(16L << 30)
        .withPinnedMemoryCap(4L << 30);
    try (Backend backend = Backends.open(kind, options); GpuStream stream = backend.newStream()) {
      System.out.println("hash aggregate benchmark on " + backend.description() + ", " + rows
          + " rows");
      for (String form : List.of("long keys", "filter v > 0", "string keys")) {
        boolean strings = form.equals("string keys");
        ColumnType keyType = strings ? ColumnType.STRING : ColumnType.LONG;
        AggregateSpec spec = spec(keyType);
        Program program = form.equals("filter v > 0") ? positiveValues() : null;
        System.out.println(form);
        System.out.println("groups        median ms   G rows/s   floor ms   x floor");
        for (long groups = 1; groups <= (strings ? MAX_STRING_GROUPS : 10_000_000L);
            groups *= 10) {
          try (ColumnBatch<DeviceColumn> input = upload(backend, stream, rows, groups, strings)) {
            long inputBytes = 0;
            for (DeviceColumn c : input.columns()) {
              inputBytes += c.dataBytes() + (c.offsets() == null ? 0 : 4L * (rows + 1));
            }
            measure(backend, stream, spec, program, input, inputBytes, deviceGBps);
          }
        }
      }
    }
  }

  private static AggregateSpec spec(ColumnType keyType) {
    return new AggregateSpec(List.of(keyType, ColumnType.LONG), 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM_INT, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
  }

  /** k, v WHERE v > 0 (about half of the rows). */
  private static Program positiveValues() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.LONG), false);
    int k = b.loadColumn(0);
    int v = b.loadColumn(1);
    int zero = b.loadConstant(0);
    int keep = b.emitNew(Opcode.CMP_INT, v, zero, Comparison.GT.code());
    return b.build(keep, List.of(new Program.Output(k, ColumnType.LONG),
        new Program.Output(v, ColumnType.LONG)));
  }

  private static void measure(Backend backend, GpuStream stream, AggregateSpec spec,
      Program program, ColumnBatch<DeviceColumn> input, long inputBytes, double deviceGBps) {
    HashAggregateKernel kernel = backend.hashAggregateKernel();
    int rows = input.rowCount();
    double[] millis = new double[RUNS];
    long found = 0;
    for (int i = 0; i < WARM_UP + RUNS; i++) {
      long started = System.nanoTime();
      try (HashAggregateKernel.Aggregation a = kernel.open(spec, backend.deviceMemory(), stream)) {
        if (program == null) {
          a.update(input);
        } else {
          a.update(program, input);
        }
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
    long bytes = inputBytes + found * 40L;
    double floor = bytes / (deviceGBps * 1e9) * 1e3;
    System.out.printf("%,12d  %9.3f  %9.2f  %9.3f  %8.1f%n", found, median,
        rows / median / 1e6, floor, median / floor);
  }

  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int rows,
      long groups, boolean strings) {
    Random random = new Random(groups);
    HostColumn k;
    HostColumn v;
    try (HostColumnBuilder kb = new HostColumnBuilder(strings ? ColumnType.STRING : ColumnType.LONG,
            rows, backend.stagingAllocator());
        HostColumnBuilder vb = new HostColumnBuilder(ColumnType.LONG, rows,
            backend.stagingAllocator())) {
      for (int i = 0; i < rows; i++) {
        long key = i < groups ? i : Math.floorMod(random.nextLong(), groups);
        if (strings) {
          kb.appendString("key-" + key);
        } else {
          kb.appendLong(key);
        }
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
