package dev.tessera.gpu.host;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.FilterProjectContractTest;
import dev.tessera.gpu.RuntimeOptions;

class HostFilterProjectTest extends FilterProjectContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.HOST_REFERENCE, options);
  }
}
