package dev.tessera.gpu.host;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.DictionaryContractTest;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import java.util.List;
import org.junit.jupiter.api.Test;

class HostDictionaryTest extends DictionaryContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.HOST_REFERENCE, options);
  }

  /** The reference refuses an id outside its dictionary (the CUDA gather trusts the ids). */
  @Test
  void idsOutsideTheEntriesAreRefused() {
    try (ColumnBatch<DeviceColumn> dictionary =
            device(List.of(ColumnType.INT), List.of(List.of(10, 20, 30)));
        ColumnBatch<DeviceColumn> ids =
            device(List.of(ColumnType.INT), List.of(List.of(0, 3)))) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> backend.dictionaryKernel().decode(ids.columns(), dictionary.columns(), 2,
              backend.deviceMemory(), stream));
      assertTrue(e.getMessage().contains("dictionary id 3 at row 1"), e.getMessage());
    }
  }
}
