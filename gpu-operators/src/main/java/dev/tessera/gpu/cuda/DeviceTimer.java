package dev.tessera.gpu.cuda;

import static dev.tessera.gpu.cuda.CudaException.check;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/** Times work on a stream with a pair of device events (host clocks would time the queueing). */
public final class DeviceTimer implements AutoCloseable {
  private final CudaDevice device;
  private final CUevent start = new CUevent();
  private final CUevent stop = new CUevent();

  public DeviceTimer(CudaDevice device) {
    this.device = device;
    device.makeCurrent();
    check(cuEventCreate(start, CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate");
    check(cuEventCreate(stop, CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate");
  }

  public void start(CudaStream stream) {
    device.makeCurrent();
    check(cuEventRecord(start, stream.handle()), "cuEventRecord");
  }

  /** Records the stop event, waits for it, and returns the milliseconds since {@link #start}. */
  public float stopMillis(CudaStream stream) {
    recordStop(stream);
    return elapsedMillis();
  }

  /** Records the stop event without waiting for it. */
  public void recordStop(CudaStream stream) {
    device.makeCurrent();
    check(cuEventRecord(stop, stream.handle()), "cuEventRecord");
  }

  /** Waits for the stop event and returns the milliseconds between the two events. */
  public float elapsedMillis() {
    device.makeCurrent();
    check(cuEventSynchronize(stop), "cuEventSynchronize");
    float[] millis = new float[1];
    check(cuEventElapsedTime(millis, start, stop), "cuEventElapsedTime");
    return millis[0];
  }

  @Override
  public void close() {
    device.makeCurrent();
    cuEventDestroy(start);
    cuEventDestroy(stop);
  }
}
