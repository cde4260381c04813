package dev.tessera.gpu.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuInit;

import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * Whether this process can use CUDA, and if not, why — in words a user can act on. Probed once per
 * process: loading the JCuda driver binding (which needs the NVIDIA driver's libcuda.so.1),
 * cuInit, and the device count.
 */
public final class CudaAvailability {
  private static volatile CudaAvailability probed;

  private final int deviceCount;
  private final String unavailableReason;

  private CudaAvailability(int deviceCount, String unavailableReason) {
    this.deviceCount = deviceCount;
    this.unavailableReason = unavailableReason;
  }

  /** The result of probing, computed on first use. */
  public static CudaAvailability get() {
    CudaAvailability result = probed;
    if (result == null) {
      synchronized (CudaAvailability.class) {
        if (probed == null) {
          probed = probe();
        }
        result = probed;
      }
    }
    return result;
  }

  public boolean isAvailable() {
    return unavailableReason == null;
  }

  public int deviceCount() {
    return deviceCount;
  }

  /** Why CUDA cannot be used, or null when it can. */
  public String unavailableReason() {
    return unavailableReason;
  }

  private static CudaAvailability probe() {
    try {
      JCudaDriver.setExceptionsEnabled(false);
    } catch (LinkageError e) {
      return new CudaAvailability(0, whyNotLoaded(e));
    }
    int result = cuInit(0);
    if (result == CUresult.CUDA_ERROR_NO_DEVICE) {
      return new CudaAvailability(0, "the CUDA driver is installed but reports no CUDA device");
    }
    if (result != CUresult.CUDA_SUCCESS) {
      return new CudaAvailability(0, "cuInit failed: " + CudaException.describe(result));
    }
    int[] count = new int[1];
    result = cuDeviceGetCount(count);
    if (result != CUresult.CUDA_SUCCESS) {
      return new CudaAvailability(0, "cuDeviceGetCount failed: " + CudaException.describe(result));
    }
    if (count[0] == 0) {
      return new CudaAvailability(0, "the CUDA driver reports no CUDA device");
    }
    return new CudaAvailability(count[0], null);
  }

  /** JCuda's load error carries whole stack traces; a user needs one sentence. */
  private static String whyNotLoaded(LinkageError e) {
    String message = String.valueOf(e.getMessage());
    if (message.contains("libcuda.so")) {
      return "the NVIDIA driver library libcuda.so.1 was not found (no NVIDIA driver installed,"
          + " or it is not on the library path)";
    }
    return "the JCuda driver binding could not be loaded: " + message.lines().findFirst().orElse("");
  }
}
