package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.RuntimeOptions;
import java.util.List;
import org.junit.jupiter.api.AfterAll;

/**
 * Every test of {@link CudaFilterProjectTest} with generated kernels on: the same random
 * programs and batches against the host reference, phase 1 running as each program's generated
 * kernel wherever the generator covers it (the interpreter otherwise). Checks that generated
 * kernels did run, and that none was left to the interpreter for an opcode or a failed compile.
 */
@RequiresCuda
class CudaGeneratedFilterProjectTest extends CudaFilterProjectTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @AfterAll
  void generatedKernelsRan() {
    GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
    assertTrue(generated.loadedCount() > 0, "no program ran as a generated kernel");
    // Every opcode and key type has an emitter: only a table of too many keys, or a kernel that
    // spilled, may leave one to the interpreter.
    List<String> reasons = generated.reasons();
    assertTrue(reasons.stream().noneMatch(r -> r.contains("does not cover")
        || r.startsWith("compiling the generated kernel failed")),
        "programs left to the interpreter: " + reasons);
  }
}
