package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
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
 * Benchmark (not a test) of a wide filter-project: 24 outputs over eight columns (each column as
 * it is, times 3, and plus 1) where {@code y % 10 < 5} (three rows in four kept: a negative y's
 * remainder is negative). Wide projections are where a generated kernel's first forms need more
 * than 128 registers (every output's buffer addresses held through the row loop), so they run in
 * its last form (FilterProjectGenerator.Form.POINTERS_PER_USE), which reads those addresses
 * where it writes a row (162 registers in the first form, 64 in that one). Prints what the
 * in-jar compiler makes of the generated kernel, the median kernel time over the runs (device
 * events on CUDA) and the bandwidth floor, as FilterProjectBench does.
 *
 * <pre>run-bench.sh dev.tessera.gpu.bench.WideProjectionBench [rows] [deviceGBps] [backend] [codegen]</pre>
 */
public final class WideProjectionBench {
  private static final List<ColumnType> INPUTS = List.of(ColumnType.LONG, ColumnType.INT,
      ColumnType.DOUBLE, ColumnType.LONG, ColumnType.INT, ColumnType.DOUBLE, ColumnType.LONG,
      ColumnType.INT);

  private WideProjectionBench() {}

  public static void main(String[] args) {
    BenchArgs run = BenchArgs.parse(args, 16 << 20);
    Program program = program();
    try (Backend backend = Backends.open(run.backend(), run.options(8L << 30, 2L << 30));
        GpuStream stream = backend.newStream()) {
      System.out.println("wide filter-project benchmark on " + backend.description()
          + (run.codegen() ? ", generated kernel" : ", interpreter kernel"));
      try (ColumnBatch<DeviceColumn> input = upload(backend, stream, run.rows())) {
        System.out.println(compileReport(program,
            input.columns().stream().map(InputSpec::of).toList()));
        FilterProjectRuns runs = FilterProjectRuns.time(backend, stream, program, input);
        long inputRowBytes = INPUTS.stream().mapToLong(WideProjectionBench::bytes).sum();
        long outputRowBytes = program.outputs().stream()
            .mapToLong(o -> bytes(o.type())).sum();
        // Each input value read once; each kept row's outputs written once (no nulls).
        runs.print(run, run.rows() * inputRowBytes + runs.kept() * outputRowBytes);
      }
    }
  }

  /** The benchmark's program: c, c * 3 and c + 1 of each input column c, where y % 10 < 5. */
  public static Program program() {
    ProgramBuilder b = new ProgramBuilder(INPUTS, false);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < INPUTS.size(); c++) {
      ColumnType type = INPUTS.get(c);
      int value = b.loadColumn(c);
      outputs.add(new Program.Output(value, type));
      if (type.equals(ColumnType.DOUBLE)) {
        outputs.add(new Program.Output(b.emitNew(Opcode.MUL_F64, value,
            b.loadConstant(Double.doubleToRawLongBits(3.0)), 0), type));
        outputs.add(new Program.Output(b.emitNew(Opcode.ADD_F64, value,
            b.loadConstant(Double.doubleToRawLongBits(1.0)), 0), type));
      } else {
        int bits = (int) bytes(type) * Byte.SIZE;
        outputs.add(new Program.Output(
            b.emitNew(Opcode.MUL_INT, value, b.loadConstant(3), bits), type));
        outputs.add(new Program.Output(
            b.emitNew(Opcode.ADD_INT, value, b.loadConstant(1), bits), type));
      }
    }
    int y = b.loadColumn(1);
    int keep = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.REM_INT, y, b.loadConstant(10), 32),
        b.loadConstant(5), Comparison.LT.code());
    return b.build(keep, outputs);
  }

  /**
   * What the in-jar compiler makes of the program's generated kernel, as the CUDA backend's
   * compile does it (GeneratedKernels.load: its forms, then other options), so that a run says
   * whether its codegen path runs generated. (The backend also tries the driver's compiler on a
   * kernel rejected for spills alone: its log says so.)
   */
  private static String compileReport(Program program, List<InputSpec> layouts) {
    if (!PtxCompiler.available()) {
      return "generated kernel: no compile report (" + PtxCompiler.unavailableReason() + ")";
    }
    GeneratedKernel kernel;
    try {
      kernel = FilterProjectGenerator.generate(program, layouts);
    } catch (CodegenUnsupportedException e) {
      return "generated kernel: none (" + e.getMessage() + ")";
    }
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    String rejection = GeneratedModule.rejection(report);
    if (rejection == null) {
      return "generated kernel: " + report.summary() + ": codegen runs it";
    }
    CompiledKernel again = GeneratedModule.compileAgain(kernel, "sm_90");
    return "generated kernel: " + report.summary() + ", rejected (" + rejection + "); "
        + (again == null ? "and with other options: the interpreter runs it"
            : "with other options " + again.report(kernel.entry()).summary()
                + ": codegen runs it");
  }

  private static long bytes(ColumnType type) {
    return type.equals(ColumnType.INT) ? Integer.BYTES : Long.BYTES;
  }

  private static ColumnBatch<DeviceColumn> upload(Backend backend, GpuStream stream, int rows) {
    Random random = new Random(1);
    List<HostColumn> host = new ArrayList<>();
    List<HostColumnBuilder> builders = new ArrayList<>();
    try {
      for (ColumnType type : INPUTS) {
        builders.add(new HostColumnBuilder(type, rows, backend.stagingAllocator()));
      }
      for (int i = 0; i < rows; i++) {
        for (int c = 0; c < INPUTS.size(); c++) {
          HostColumnBuilder column = builders.get(c);
          switch (INPUTS.get(c).id()) {
            case LONG -> column.appendLong(random.nextLong() >> 8);
            case INT -> column.appendInt(random.nextInt());
            default -> column.appendDouble(random.nextGaussian());
          }
        }
      }
      for (HostColumnBuilder column : builders) {
        host.add(column.build());
      }
    } finally {
      builders.forEach(HostColumnBuilder::close);
    }
    try (ColumnBatch<HostColumn> batch = new ColumnBatch<>(host, rows)) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(batch, backend.deviceMemory(), stream);
      stream.synchronize();
      return device;
    }
  }
}
