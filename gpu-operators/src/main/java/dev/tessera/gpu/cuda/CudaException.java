package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuException;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/** A CUDA driver call failed; the message names what was being done and the CUDA error. */
public final class CudaException extends GpuException {
  private static final long serialVersionUID = 1L;
  private final int result;

  CudaException(String what, int result) {
    super(what + " failed: " + describe(result));
    this.result = result;
  }

  /** The CUresult code. */
  public int result() {
    return result;
  }

  /** Throws a {@link CudaException} unless {@code result} is CUDA_SUCCESS. */
  static void check(int result, String what) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw new CudaException(what, result);
    }
  }

  /** "CUDA_ERROR_INVALID_VALUE (invalid argument)", from the driver's own tables. */
  static String describe(int result) {
    String name = CUresult.stringFor(result);
    String[] text = new String[1];
    try {
      if (JCudaDriver.cuGetErrorString(result, text) == CUresult.CUDA_SUCCESS && text[0] != null) {
        return name + " (" + text[0] + ")";
      }
    } catch (LinkageError e) {
      // The driver library is what failed to load; the code's name is all we have.
    }
    return name;
  }
}
