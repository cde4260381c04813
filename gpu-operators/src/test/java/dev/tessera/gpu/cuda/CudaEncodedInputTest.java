package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.EncodedInputContractTest;
import dev.tessera.gpu.RuntimeOptions;

@RequiresCuda
class CudaEncodedInputTest extends EncodedInputContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }
}
