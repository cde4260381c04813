package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.TopKContractTest;

/** The top-k contract on the CUDA backend. */
@RequiresCuda
class CudaTopKContractTest extends TopKContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }
}
