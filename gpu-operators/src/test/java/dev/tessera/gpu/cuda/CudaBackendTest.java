package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendContractTest;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuException;
import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.Test;

/** The backend contract on a real GPU; skipped, with the reason, where there is none. */
@RequiresCuda
class CudaBackendTest extends BackendContractTest {
  @Override
  protected Backend openBackend(RuntimeOptions options) {
    return Backends.open(BackendKind.CUDA, options);
  }

  @Test
  void describesTheDevice() {
    CudaDevice device = ((CudaBackend) backend).device();
    assertTrue(device.computeMajor() >= 7, "compute capability " + device.computeMajor());
    assertTrue(backend.description().contains(device.name()), backend.description());
    long[] memory = device.memoryInfo();
    assertTrue(memory[0] > 0 && memory[0] <= memory[1], "free/total " + memory[0] + "/" + memory[1]);
  }

  @Test
  void anUnknownKernelIsNamedInTheError() {
    GpuException e = assertThrows(GpuException.class, () -> ((CudaBackend) backend).device()
        .kernels().launch("tessera_no_such_kernel", LaunchShape.tilesFor(1),
            (CudaStream) stream, new KernelArgs()));
    assertTrue(e.getMessage().contains("tessera_no_such_kernel"), e.getMessage());
  }

  @Test
  void aFailedLaunchNamesTheKernelAndTheCudaError() {
    // A block of 4096 threads is more than any GPU allows: the launch itself fails.
    CudaException e = assertThrows(CudaException.class, () -> ((CudaBackend) backend).device()
        .kernels().launch(CudaSmokeKernel.KERNEL, new LaunchShape(1, 4096, 0),
            (CudaStream) stream, new KernelArgs().address(0).address(0).i64(0).i64(0).i64(0)
                .address(0)));
    assertTrue(e.getMessage().contains(CudaSmokeKernel.KERNEL), e.getMessage());
    assertTrue(e.getMessage().contains("CUDA_ERROR_INVALID_VALUE"), e.getMessage());
    stream.synchronize(); // the stream is still usable: a launch error is not sticky
  }

  @Test
  void aMissingDeviceOrdinalIsAClearError() {
    int count = CudaAvailability.get().deviceCount();
    GpuException e = assertThrows(GpuException.class, () -> Backends.open(BackendKind.CUDA,
        RuntimeOptions.defaults().withDeviceOrdinal(count)));
    assertTrue(e.getMessage().contains("CUDA device " + count + " does not exist"), e.getMessage());
    assertEquals(count, CudaAvailability.get().deviceCount());
  }
}
