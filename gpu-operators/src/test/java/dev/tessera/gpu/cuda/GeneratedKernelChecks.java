package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import java.util.List;

/** What a CUDA suite run with generated kernels checks of them after its tests. */
final class GeneratedKernelChecks {
  private GeneratedKernelChecks() {}

  /**
   * That {@code cuda} ran {@code what}s (programs, pipelines) as generated kernels, and left none
   * to the interpreter for an opcode or a failed compile: every opcode and join key type has an
   * emitter, so only a join table of more keys than a probe compares, or a kernel that spilled,
   * may run there.
   */
  static void ranGeneratedWhereCovered(Backend cuda, String what) {
    GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
    assertTrue(generated.loadedCount() > 0, "no " + what + " ran as a generated kernel");
    List<String> reasons = generated.reasons();
    assertTrue(reasons.stream().noneMatch(r -> r.contains("does not cover")
        || r.startsWith("compiling the generated kernel failed")),
        what + "s left to the interpreter: " + reasons);
  }

  /**
   * That {@code cuda} left at most one kernel in ten to the interpreter for its registers: the
   * last filter-project form (FilterProjectGenerator.Form.POINTERS_PER_USE) fits all but a few
   * wide projections within them.
   */
  static void fewLeftForRegisters(Backend cuda) {
    GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
    List<String> reasons = generated.reasons();
    long overRegisters = reasons.stream().filter(r -> r.contains("registers, more than")).count();
    assertTrue(overRegisters <= generated.loadedCount() / 10, overRegisters
        + " kernels left to the interpreter for their registers: " + reasons);
  }
}
