package dev.tessera.gpu.cuda;

import dev.tessera.gpu.join.HashJoinKernel;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.PooledBackend;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.codegen.CompilerWarmUp;
import dev.tessera.gpu.kernels.DictionaryKernel;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.sort.TopKKernel;

/** The CUDA backend: one device, its memory pools, pinned staging memory and the kernels. */
public final class CudaBackend extends PooledBackend {
  /** The share of the device's free memory the pool may take when no cap is configured. */
  private static final double AUTOMATIC_CAP_FRACTION = 0.8;

  private final CudaDevice device;
  private final boolean codegen;

  private CudaBackend(CudaDevice device, RuntimeOptions options) {
    super(new ArenaPool("device memory (" + device.description() + ")",
            CudaChunkAllocators.deviceMemory(device), deviceCap(device, options),
            options.deviceCapSetting(), options.deviceChunkBytes()),
        new ArenaPool("pinned host memory", CudaChunkAllocators.pinnedHostMemory(device),
            options.pinnedMemoryCapBytes(), options.pinnedCapSetting(),
            options.pinnedChunkBytes()));
    this.device = device;
    this.codegen = options.codegen();
  }

  private static long deviceCap(CudaDevice device, RuntimeOptions options) {
    return options.deviceMemoryCapBytes() != 0 ? options.deviceMemoryCapBytes()
        : (long) (device.memoryInfo()[0] * AUTOMATIC_CAP_FRACTION);
  }

  /** Opens the device {@code options.deviceOrdinal()}; throws a GpuException saying why not. */
  public static CudaBackend open(RuntimeOptions options) {
    CudaDevice device = CudaDevice.acquire(options.deviceOrdinal());
    if (options.codegen()) {
      CompilerWarmUp.start(device.computeMajor(), device.computeMinor());
    }
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

  /** Whether pipelines run as generated kernels where the generator covers them. */
  boolean codegen() {
    return codegen;
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
  public CudaStream newStream() {
    return new CudaStream(device);
  }

  @Override
  public SmokeKernel smokeKernel() {
    return new CudaSmokeKernel(device);
  }

  @Override
  public HashAggregateKernel hashAggregateKernel() {
    return new CudaHashAggregate(this);
  }

  @Override
  public HashJoinKernel hashJoinKernel() {
    return new CudaHashJoin(this);
  }

  @Override
  public ProgramKernel programKernel() {
    return new CudaFilterProject(this);
  }

  @Override
  public TopKKernel topKKernel() {
    return new CudaTopK(this);
  }

  @Override
  public DictionaryKernel dictionaryKernel() {
    return new CudaDictionaryDecode(this);
  }

  @Override
  protected void releaseDevice() {
    device.release();
  }

  static CudaStream cudaStream(GpuStream stream) {
    if (stream instanceof CudaStream cuda) {
      return cuda;
    }
    throw new IllegalArgumentException("a CUDA kernel needs a CUDA stream, got " + stream);
  }
}
