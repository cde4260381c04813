package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;

/**
 * The filter-project contract on CUDA with generated kernels on: each hand-checked program runs
 * as its generated kernel wherever the generator covers it (CudaFilterProjectContractTest runs
 * them on the interpreter kernel). Checks that generated kernels did run.
 */
@RequiresCuda
class CudaGeneratedFilterProjectContractTest extends CudaFilterProjectContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return super.openBackend(options.withCodegen(true));
  }

  @AfterAll
  void generatedKernelsRan() {
    assertTrue(((CudaBackend) backend).device().generated().loadedCount() > 0,
        "no program ran as a generated kernel");
  }
}
