package dev.tessera.gpu.cuda;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;

import dev.tessera.gpu.memory.ChunkAllocator;
import dev.tessera.gpu.memory.PoolExhaustedException;
import jcuda.driver.CUresult;

/** The chunk sources of the CUDA backend's pools: device memory and pinned host memory. */
final class CudaChunkAllocators {
  private CudaChunkAllocators() {}

  static ChunkAllocator deviceMemory(CudaDevice device) {
    return new ChunkAllocator() {
      @Override
      public long allocate(long bytes) {
        device.makeCurrent();
        NativeAddresses.DevicePointer pointer = new NativeAddresses.DevicePointer();
        int result = cuMemAlloc(pointer, bytes);
        if (result == CUresult.CUDA_ERROR_OUT_OF_MEMORY) {
          long[] info = device.memoryInfo();
          throw new PoolExhaustedException(String.format(
              "the GPU has %,d of %,d bytes free", info[0], info[1]));
        }
        CudaException.check(result, "cuMemAlloc(" + bytes + ")");
        return pointer.address();
      }

      @Override
      public void free(long address, long bytes) {
        device.makeCurrent();
        CudaException.check(cuMemFree(NativeAddresses.device(address)), "cuMemFree");
      }

      @Override
      public String describe() {
        return "CUDA device " + device.ordinal() + " memory";
      }
    };
  }

  static ChunkAllocator pinnedHostMemory(CudaDevice device) {
    return new ChunkAllocator() {
      @Override
      public long allocate(long bytes) {
        device.makeCurrent();
        NativeAddresses.HostPointer pointer = new NativeAddresses.HostPointer();
        // Portable: usable from every context, as Spark tasks may share staging buffers.
        int result = cuMemHostAlloc(pointer, bytes, jcuda.driver.JCudaDriver.CU_MEMHOSTALLOC_PORTABLE);
        if (result == CUresult.CUDA_ERROR_OUT_OF_MEMORY) {
          throw new PoolExhaustedException("the host could not pin " + bytes + " more bytes");
        }
        CudaException.check(result, "cuMemHostAlloc(" + bytes + ")");
        return pointer.address();
      }

      @Override
      public void free(long address, long bytes) {
        device.makeCurrent();
        CudaException.check(cuMemFreeHost(NativeAddresses.host(address)), "cuMemFreeHost");
      }

      @Override
      public String describe() {
        return "pinned host memory";
      }
    };
  }
}
