package dev.tessera.gpu.cuda;

import static dev.tessera.gpu.cuda.CudaException.check;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;

import dev.tessera.gpu.GpuException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;

/**
 * One CUDA device and its primary context, shared by everything in the process that uses that
 * device ordinal, with the kernels' module loaded once. Reference counted: {@link #acquire}
 * and {@link #release}; the context and module go away with the last release.
 *
 * <p>The CUDA context is per thread in the driver API; every entry point that talks to the
 * driver calls {@link #makeCurrent()} first, so Spark's task threads need no setup.
 */
public final class CudaDevice {
  private static final Map<Integer, CudaDevice> OPEN = new HashMap<>();

  private final int ordinal;
  private final CUdevice device;
  private final CUcontext context;
  private final String name;
  private final int computeMajor;
  private final int computeMinor;
  private final int multiprocessors;
  /** Shared memory a multiprocessor has for its blocks, and what each block costs besides its own. */
  private final int sharedBytesPerMultiprocessor;
  private final int reservedSharedBytesPerBlock;
  private final int sharedBytesPerBlockOptIn;
  private final long totalMemoryBytes;
  private final int driverVersion;
  private final KernelModule kernels;
  private final GeneratedKernels generated = new GeneratedKernels(this);
  private int references;

  private CudaDevice(int ordinal) {
    CudaAvailability availability = CudaAvailability.get();
    if (!availability.isAvailable()) {
      throw new GpuException("No CUDA device can be used: " + availability.unavailableReason());
    }
    if (ordinal >= availability.deviceCount()) {
      throw new GpuException(String.format("CUDA device %d does not exist: %d device(s) present"
          + " (ordinals 0 to %d)", ordinal, availability.deviceCount(),
          availability.deviceCount() - 1));
    }
    this.ordinal = ordinal;
    this.device = new CUdevice();
    check(cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
    byte[] nameBytes = new byte[256];
    check(cuDeviceGetName(nameBytes, nameBytes.length, device), "cuDeviceGetName");
    this.name = cString(nameBytes);
    this.computeMajor = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    this.computeMinor = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    this.multiprocessors = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    this.sharedBytesPerMultiprocessor =
        attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    this.reservedSharedBytesPerBlock =
        attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    this.sharedBytesPerBlockOptIn =
        attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    long[] total = new long[1];
    check(cuDeviceTotalMem(total, device), "cuDeviceTotalMem");
    this.totalMemoryBytes = total[0];
    int[] version = new int[1];
    check(cuDriverGetVersion(version), "cuDriverGetVersion");
    this.driverVersion = version[0];
    this.context = new CUcontext();
    check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain(" + ordinal + ")");
    try {
      makeCurrent();
      this.kernels = KernelModule.load(this);
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(device);
      throw e;
    }
  }

  /** Opens (or shares) device {@code ordinal}. Each acquire needs one {@link #release}. */
  public static CudaDevice acquire(int ordinal) {
    synchronized (OPEN) {
      CudaDevice d = OPEN.get(ordinal);
      if (d == null) {
        d = new CudaDevice(ordinal);
        OPEN.put(ordinal, d);
      }
      d.references++;
      return d;
    }
  }

  /** Drops one reference; the last one unloads the kernels and releases the primary context. */
  public void release() {
    synchronized (OPEN) {
      if (references <= 0) {
        throw new IllegalStateException("CUDA device " + ordinal + " released more than acquired");
      }
      if (--references == 0) {
        OPEN.remove(ordinal);
        makeCurrent();
        generated.unload();
        kernels.unload();
        cuDevicePrimaryCtxRelease(device);
      }
    }
  }

  /** Binds this device's context to the calling thread. */
  public void makeCurrent() {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent(device " + ordinal + ")");
  }

  /** Free and total device memory now, in bytes. */
  public long[] memoryInfo() {
    makeCurrent();
    long[] free = new long[1];
    long[] total = new long[1];
    check(cuMemGetInfo(free, total), "cuMemGetInfo");
    return new long[] {free[0], total[0]};
  }

  /** The generated kernels compiled for this device's context. */
  GeneratedKernels generated() {
    return generated;
  }

  public KernelModule kernels() {
    return kernels;
  }

  public int ordinal() {
    return ordinal;
  }

  public String name() {
    return name;
  }

  public int computeMajor() {
    return computeMajor;
  }

  public int computeMinor() {
    return computeMinor;
  }

  public int multiprocessors() {
    return multiprocessors;
  }

  /** The most shared memory one multiprocessor gives its resident blocks (L1 takes the rest). */
  public int sharedBytesPerMultiprocessor() {
    return sharedBytesPerMultiprocessor;
  }

  /** Shared memory the system takes for each resident block, besides the block's own. */
  public int reservedSharedBytesPerBlock() {
    return reservedSharedBytesPerBlock;
  }

  /** The most dynamic shared memory one block may have where its kernel asks for it. */
  public int sharedBytesPerBlockOptIn() {
    return sharedBytesPerBlockOptIn;
  }

  public long totalMemoryBytes() {
    return totalMemoryBytes;
  }

  /** The driver's CUDA version as "13.0". */
  public String driverVersion() {
    return (driverVersion / 1000) + "." + (driverVersion % 1000) / 10;
  }

  /** "CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB)". */
  public String description() {
    return String.format("CUDA device %d: %s (sm_%d%d, %d SMs, %.1f GiB)", ordinal, name,
        computeMajor, computeMinor, multiprocessors, totalMemoryBytes / (double) (1L << 30));
  }

  private int attribute(int attribute) {
    int[] value = new int[1];
    check(cuDeviceGetAttribute(value, attribute, device), "cuDeviceGetAttribute(" + attribute + ")");
    return value[0];
  }

  private static String cString(byte[] bytes) {
    int end = 0;
    while (end < bytes.length && bytes[end] != 0) {
      end++;
    }
    return new String(bytes, 0, end, StandardCharsets.US_ASCII);
  }
}
