package dev.tessera.gpu.cuda;

import static dev.tessera.gpu.cuda.CudaException.check;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import dev.tessera.gpu.GpuStream;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * A CUDA stream (non-blocking with respect to the legacy default stream). Copies and launches are
 * asynchronous; an error raised by queued work surfaces at {@link #synchronize()}, which names the
 * last kernel launched so the failing one can be found.
 */
public final class CudaStream implements GpuStream {
  private final CudaDevice device;
  private final CUstream stream = new CUstream();
  private volatile String lastKernel;
  private boolean closed;

  CudaStream(CudaDevice device) {
    this.device = device;
    device.makeCurrent();
    check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  CUstream handle() {
    return stream;
  }

  void noteLaunch(String kernel) {
    lastKernel = kernel;
  }

  @Override
  public void copyHostToDevice(long hostAddress, long deviceAddress, long bytes) {
    if (bytes == 0) {
      return;
    }
    device.makeCurrent();
    check(cuMemcpyHtoDAsync(NativeAddresses.device(deviceAddress), NativeAddresses.host(hostAddress),
        bytes, stream), "copying " + bytes + " bytes host to device");
  }

  @Override
  public void copyDeviceToHost(long deviceAddress, long hostAddress, long bytes) {
    if (bytes == 0) {
      return;
    }
    device.makeCurrent();
    check(cuMemcpyDtoHAsync(NativeAddresses.host(hostAddress), NativeAddresses.device(deviceAddress),
        bytes, stream), "copying " + bytes + " bytes device to host");
  }

  @Override
  public void copyDeviceToDevice(long sourceAddress, long destinationAddress, long bytes) {
    if (bytes == 0) {
      return;
    }
    device.makeCurrent();
    check(cuMemcpyDtoDAsync(NativeAddresses.device(destinationAddress),
        NativeAddresses.device(sourceAddress), bytes, stream),
        "copying " + bytes + " bytes device to device");
  }

  @Override
  public void fill(long deviceAddress, long bytes, byte value) {
    if (bytes == 0) {
      return;
    }
    device.makeCurrent();
    check(cuMemsetD8Async(NativeAddresses.device(deviceAddress), value, bytes, stream),
        "filling " + bytes + " bytes of device memory");
  }

  @Override
  public void synchronize() {
    device.makeCurrent();
    int result = cuStreamSynchronize(stream);
    if (result != CUresult.CUDA_SUCCESS) {
      String kernel = lastKernel;
      throw new CudaException("work on a CUDA stream"
          + (kernel == null ? "" : " (last kernel launched: " + kernel + ")"), result);
    }
  }

  /**
   * Waits for the stream after {@code failure} ended an operation with work still queued (its
   * buffers must not be freed while kernels may use them); a failure to wait is added to it.
   */
  void synchronizeAfter(Throwable failure) {
    try {
      synchronize();
    } catch (RuntimeException suppressed) {
      failure.addSuppressed(suppressed);
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    device.makeCurrent();
    cuStreamSynchronize(stream);
    cuStreamDestroy(stream);
  }
}
