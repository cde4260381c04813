package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.DictionaryContractTest;
import dev.tessera.gpu.RuntimeOptions;

/** The dictionary decode's contract on the CUDA backend. */
@RequiresCuda
class CudaDictionaryContractTest extends DictionaryContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }
}
