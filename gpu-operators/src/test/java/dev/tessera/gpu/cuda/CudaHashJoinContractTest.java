package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.HashJoinContractTest;
import dev.tessera.gpu.RuntimeOptions;

/** The hash join contract on the CUDA backend. */
@RequiresCuda
class CudaHashJoinContractTest extends HashJoinContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }
}
