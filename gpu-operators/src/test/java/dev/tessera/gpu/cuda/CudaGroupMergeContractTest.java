package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GroupMergeContractTest;
import dev.tessera.gpu.RuntimeOptions;

@RequiresCuda
class CudaGroupMergeContractTest extends GroupMergeContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }
}
