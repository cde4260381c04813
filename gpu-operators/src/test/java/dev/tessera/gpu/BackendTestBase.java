package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * What every backend test class shares: one backend and one stream for the class, and the check
 * after every test that the device pool, the pinned pool and the staging allocator are empty.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class BackendTestBase {
  protected Backend backend;
  protected GpuStream stream;

  /** Opens the backend under test. */
  protected abstract Backend openBackend(RuntimeOptions options);

  @BeforeAll
  void open() {
    backend = openBackend(RuntimeOptions.defaults().withDeviceMemoryCap(2L << 30));
    stream = backend.newStream();
  }

  @AfterAll
  void close() {
    if (stream != null) {
      stream.close();
    }
    if (backend != null) {
      backend.close();
    }
  }

  @AfterEach
  void poolsAreEmpty() {
    assertEquals(0, backend.stagingAllocator().getAllocatedMemory(), "staging buffers leaked");
    assertEquals(0, backend.pinnedMemory().bytesInUse(), "pinned memory leaked");
    assertEquals(0, backend.deviceMemory().bytesInUse(), "device memory leaked");
  }

  /**
   * A device batch of {@code columns} (Java values, null = SQL NULL, as TestColumns builds them)
   * of {@code types}; the caller closes it.
   */
  protected ColumnBatch<DeviceColumn> device(List<ColumnType> types, List<List<Object>> columns) {
    List<HostColumn> host = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      host.add(TestColumns.build(types.get(c), columns.get(c), backend.stagingAllocator()));
    }
    int rows = columns.isEmpty() ? 0 : columns.get(0).size();
    try (ColumnBatch<HostColumn> h = new ColumnBatch<>(host, rows)) {
      ColumnBatch<DeviceColumn> d = ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream);
      stream.synchronize();
      return d;
    }
  }
}
