package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
