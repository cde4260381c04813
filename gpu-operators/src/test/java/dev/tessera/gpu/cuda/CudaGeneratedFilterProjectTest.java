package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;

/**
 * Every test of {@link CudaFilterProjectTest} with generated kernels on: the same random
 * programs and batches against the host reference, phase 1 running as each program's generated
 * kernel wherever the generator covers it (the interpreter otherwise). Checks that generated
 * kernels did run.
 */
@RequiresCuda
class CudaGeneratedFilterProjectTest extends CudaFilterProjectTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @AfterAll
  void generatedKernelsRan() {
    assertTrue(((CudaBackend) cuda).device().generated().loadedCount() > 0,
        "no program ran as a generated kernel");
  }
}
