package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What a process's first generated kernel would wait for, done ahead on a compile thread ({@link
 * CompileThreads}) for a device about to need kernels (the CUDA backend's, as it opens): the
 * compiler library and the prelude loaded, the device's cubin architecture asked of the compiler
 * ({@link CubinTarget}), the generator's classes loaded by generating a one-column projection,
 * and the compiler run once on it. A first kernel generated and compiled 400 ms after this began
 * took about 125 ms on a 2-core machine, against 200-220 without it.
 */
public final class CompilerWarmUp {
  private CompilerWarmUp() {}

  /**
   * Starts the warm-up for a device of compute capability {@code major.minor}. What it compiles
   * goes to the disk cache as any kernel does; what fails here is left for the query that meets
   * it to report. The result, for tests, is the kernel compiled, or null where there is none to
   * compile (no in-jar compiler, or a device only the driver's compiler knows).
   */
  public static CompletableFuture<CompiledKernel> start(int major, int minor) {
    return CompileThreads.start(() -> {
      Optional<String> arch = CubinTarget.forDevice(major, minor);
      if (arch.isEmpty()) {
        return null;
      }
      List<ColumnType> oneColumn = List.of(ColumnType.LONG);
      try {
        return GeneratedModule.compile(FilterProjectGenerator.generate(
            ProgramBuilder.identity(oneColumn, false),
            List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, false))), arch.get());
      } catch (CodegenUnsupportedException e) {
        return null;
      }
    });
  }
}
