package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.StagingAllocators;
import org.apache.arrow.memory.BufferAllocator;

/** The CUDA backend: one device, its memory pools, pinned staging memory and the kernels. */
public final class CudaBackend implements Backend {
  private final CudaDevice device;
  private final ArenaPool deviceMemory;
  private final ArenaPool pinnedMemory;
  private final BufferAllocator staging;
  private boolean closed;

  private CudaBackend(CudaDevice device, RuntimeOptions options) {
    this.device = device;
    long cap = options.deviceMemoryCapBytes();
    if (cap == 0) {
      cap = (long) (device.memoryInfo()[0] * 0.8);
    }
    this.deviceMemory = new ArenaPool("device memory (" + device.description() + ")",
        CudaChunkAllocators.deviceMemory(device), cap, options.deviceCapSetting(),
        options.deviceChunkBytes());
    this.pinnedMemory = new ArenaPool("pinned host memory",
        CudaChunkAllocators.pinnedHostMemory(device), options.pinnedMemoryCapBytes(),
        options.pinnedCapSetting(), options.pinnedChunkBytes());
    this.staging = StagingAllocators.rootOver(pinnedMemory);
  }

  /** Opens the device {@code options.deviceOrdinal()}; throws a GpuException saying why not. */
  public static CudaBackend open(RuntimeOptions options) {
    CudaDevice device = CudaDevice.acquire(options.deviceOrdinal());
    try {
      return new CudaBackend(device, options);
    } catch (RuntimeException e) {
      device.release();
      throw e;
    }
  }

  public CudaDevice device() {
    return device;
  }

  @Override
  public BackendKind kind() {
    return BackendKind.CUDA;
  }

  @Override
  public String description() {
    return device.description();
  }

  @Override
  public ArenaPool deviceMemory() {
    return deviceMemory;
  }

  @Override
  public ArenaPool pinnedMemory() {
    return pinnedMemory;
  }

  @Override
  public BufferAllocator stagingAllocator() {
    return staging;
  }

  @Override
  public CudaStream newStream() {
    return new CudaStream(device);
  }

  @Override
  public SmokeKernel smokeKernel() {
    return new CudaSmokeKernel(device);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      staging.close();
    } finally {
      pinnedMemory.close();
      deviceMemory.close();
      device.release();
    }
  }

  static CudaStream cudaStream(GpuStream stream) {
    if (stream instanceof CudaStream cuda) {
      return cuda;
    }
    throw new IllegalArgumentException("a CUDA kernel needs a CUDA stream, got " + stream);
  }
}
