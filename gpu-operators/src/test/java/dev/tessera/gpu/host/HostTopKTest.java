package dev.tessera.gpu.host;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.TopKContractTest;

class HostTopKTest extends TopKContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.HOST_REFERENCE, options);
  }
}
