package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of the fused filter-project operator:
 * {@code SELECT x * 3 + y, d * 2.0 WHERE y % 10 < 5} over one device batch of int64 x, int32 y
 * and double d (half the rows kept). Prints the median kernel time over the runs (device events on
 * CUDA), rows per second, and the bandwidth floor: bytes the kernel must touch over the device
 * bandwidth given as the second argument (GB/s, measured by the diagnostic).
 *
 * <p>The fourth argument, {@code codegen}, runs the pipeline as its generated kernel instead of
 * the interpreter (spark.tessera.codegen.enabled).
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.FilterProjectBench [rows] [deviceGBps] [backend] [codegen]</pre>
 */
public final class FilterProjectBench {
  private FilterProjectBench() {}

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 16 << 20);
    try (Backend backend = Backends.open(run.backend(), run.options(8L << 30, 2L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.println("filter-project benchmark on " + backend.description()
          + (run.codegen() ? ", generated kernel" : ", interpreter kernel"));
      try (ColumnBatch<DeviceColumn> input = upload(backend, stream, run.rows())) {
        FilterProjectRuns runs = FilterProjectRuns.time(backend, stream, program(), input);
        // Each input value read once; each kept row's two outputs written once (no nulls).
        runs.print(run, run.rows() * (8L + 4 + 8) + runs.kept() * (8L + 8));
      }
    }
  }

  /**
   * The benchmark's program: x * 3 + y, d * 2.0 WHERE y % 10 < 5 over (LONG x, INT y, DOUBLE d).
   * FilterProjectLoadOrderTest checks the order of its kernel's loads.
   */
  public static Program program() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT,
        ColumnType.DOUBLE), false);
    int x = b.loadColumn(0);
    int y = b.loadColumn(1);
    int d = b.loadColumn(2);
    int sum = b.emitNew(Opcode.ADD_INT, b.emitNew(Opcode.MUL_INT, x, b.loadConstant(3), 64), y,
        64);
    int twice = b.emitNew(Opcode.MUL_F64, d, b.loadConstant(Double.doubleToRawLongBits(2.0)), 0);
    int keep = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.REM_INT, y, b.loadConstant(10), 32),
        b.loadConstant(5), Comparison.LT.code());
    return b.build(keep, List.of(new Program.Output(sum, ColumnType.LONG),
        new Program.Output(twice, ColumnType.DOUBLE)));
  }

  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int rows) {
    Random random = new Random(1);
    List<HostColumn> host = new ArrayList<>();
    try (HostColumnBuilder x = new HostColumnBuilder(ColumnType.LONG, rows,
            backend.stagingAllocator());
        HostColumnBuilder y = new HostColumnBuilder(ColumnType.INT, rows,
            backend.stagingAllocator());
        HostColumnBuilder d = new HostColumnBuilder(ColumnType.DOUBLE, rows,
            backend.stagingAllocator())) {
      for (int i = 0; i < rows; i++) {
        x.appendLong(random.nextLong() >> 8);
        y.appendInt(random.nextInt());
        d.appendDouble(random.nextGaussian());
      }
      host.add(x.build());
      host.add(y.build());
      host.add(d.build());
    }
    try (ColumnBatch<HostColumn> batch = new ColumnBatch<>(host, rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(batch, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
