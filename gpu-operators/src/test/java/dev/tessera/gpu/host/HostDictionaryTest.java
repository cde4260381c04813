package dev.tessera.gpu.host;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.DictionaryContractTest;
import dev.tessera.gpu.RuntimeOptions;

class HostDictionaryTest extends DictionaryContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.HOST_REFERENCE, options);
  }
}
