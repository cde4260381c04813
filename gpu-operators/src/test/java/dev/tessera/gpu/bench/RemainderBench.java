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
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.Random;

/**
 * Benchmark (not a test) of DOUBLE {@code %}: {@code SELECT d % divisor} over one device batch of
 * d, Gaussian times {@code scale}. The generated kernel's remainder (RowEmitter's fmod) takes a
 * step per bit of the operands' exponent difference, as does CUDA's {@code fmod}, which the
 * interpreter calls: a scale of 1e6 over a divisor of 7 is about 20 steps, 1e300 over 1e-300
 * about 2,000. Prints the median kernel time and the bandwidth floor, as FilterProjectBench does.
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.RemainderBench [rows] [deviceGBps] [backend] [codegen|interpreter] [scale] [divisor]</pre>
 */
public final class RemainderBench {
  private RemainderBench() {}

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 16 << 20);
    double scale = args.length > 4 ? Double.parseDouble(args[4]) : 1e6;
    double divisor = args.length > 5 ? Double.parseDouble(args[5]) : 7;
    try (Backend backend = Backends.open(run.backend(), run.options(8L << 30, 2L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.printf("remainder benchmark on %s, %s kernel: d %% %s, d Gaussian times %s%n",
          backend.description(), run.codegen() ? "generated" : "interpreter", divisor, scale);
      try (ColumnBatch<DeviceColumn> input = upload(backend, stream, run.rows(), scale)) {
        FilterProjectRuns runs = FilterProjectRuns.time(backend, stream, program(divisor), input);
        // Each value read once and its remainder written once (no nulls).
        runs.print(run, run.rows() * (8L + 8));
      }
    }
  }

  /** The benchmark's program: d % divisor over (DOUBLE d). */
  static Program program(double divisor) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.DOUBLE), false);
    int remainder = b.emitNew(Opcode.REM_F64, b.loadColumn(0),
        b.loadConstant(Double.doubleToRawLongBits(divisor)), 0);
    return b.build(-1, List.of(new Program.Output(remainder, ColumnType.DOUBLE)));
  }

  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int rows,
      double scale) {
    Random random = new Random(1);
    HostColumn column;
    try (HostColumnBuilder d = new HostColumnBuilder(ColumnType.DOUBLE, rows,
        backend.stagingAllocator())) {
      for (int i = 0; i < rows; i++) {
        d.appendDouble(random.nextGaussian() * scale);
      }
      column = d.build();
    }
    try (ColumnBatch<HostColumn> batch = new ColumnBatch<>(List.of(column), rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(batch, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
