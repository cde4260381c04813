package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * Base of the tests that run an operator on CUDA and on the host reference and compare the
 * results: both backends, with a stream each, opened once per class, and every pool of both
 * checked empty after each test. Subclasses carry {@code @RequiresCuda}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class CudaVersusHostTest {
  protected static final long GiB = 1L << 30;

  protected Backend cuda;
  protected Backend host;
  protected GpuStream cudaStream;
  protected GpuStream hostStream;

  /** The CUDA backend's memory caps; tests with large inputs raise them. */
  protected RuntimeOptions cudaOptions() {
    return RuntimeOptions.defaults().withDeviceMemoryCap(4 * GiB).withPinnedMemoryCap(4 * GiB);
  }

  /** The host reference's memory caps (its "device" memory is host memory). */
  protected RuntimeOptions hostOptions() {
    return RuntimeOptions.defaults().withDeviceMemoryCap(8 * GiB).withPinnedMemoryCap(4 * GiB);
  }

  @BeforeAll
  void openBackends() {
    cuda = Backends.open(BackendKind.CUDA, cudaOptions());
    cudaStream = cuda.newStream();
    host = Backends.open(BackendKind.HOST_REFERENCE, hostOptions());
    hostStream = host.newStream();
  }

  @AfterEach
  void poolsAreEmpty() {
    for (Backend b : new Backend[] {cuda, host}) {
      assertEquals(0, b.stagingAllocator().getAllocatedMemory(), b.kind() + ": staging leaked");
      assertEquals(0, b.pinnedMemory().bytesInUse(), b.kind() + ": pinned memory leaked");
      assertEquals(0, b.deviceMemory().bytesInUse(), b.kind() + ": device memory leaked");
    }
  }

  @AfterAll
  void closeBackends() {
    for (AutoCloseable c : new AutoCloseable[] {cudaStream, cuda, hostStream, host}) {
      if (c != null) {
        try {
          c.close();
        } catch (Exception e) {
          throw new AssertionError("closing " + c + " failed", e);
        }
      }
    }
  }
}
