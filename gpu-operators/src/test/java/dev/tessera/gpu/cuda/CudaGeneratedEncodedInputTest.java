package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.EncodedInputContractTest;
import dev.tessera.gpu.RuntimeOptions;

/** The encoded-input contract with generated kernels: GPU-FOR and GPU-DFOR loads in PTX. */
@RequiresCuda
class CudaGeneratedEncodedInputTest extends EncodedInputContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options.withCodegen(true));
  }
}
