package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.RuntimeOptions;

/**
 * The hash-aggregate contract on CUDA with generated kernels on: every update runs its
 * pipeline's generated kernel wherever the generator covers it.
 */
@RequiresCuda
class CudaGeneratedHashAggregateContractTest extends CudaHashAggregateContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return super.openBackend(options.withCodegen(true));
  }
}
