package dev.tessera.ssb.bench;

import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.cuda.CudaBackend;
import dev.tessera.gpu.cuda.CudaStream;
import dev.tessera.gpu.cuda.DeviceTimer;
import dev.tessera.gpu.memory.DeviceBuffer;

/**
 * The device's peak memory bandwidth, measured as {@code bin/tessera diagnose} does: a
 * device-to-device copy, counting each byte read and written, timed with CUDA events. A kernel
 * that only reads cannot beat this, so {@code bytes read / this} is a floor for its time.
 */
public final class DeviceBandwidth {
  private static final long COPY_BYTES = 512L << 20;
  private static final int REPEATS = 10;

  /**
   * @param gbPerSecond the measured bandwidth, GB/s (10^9 bytes)
   * @param deviceName the device's name
   */
  public record Measured(double gbPerSecond, String deviceName) {}

  private DeviceBandwidth() {}

  /** Measures on CUDA device 0, opening and closing a backend of its own before Spark starts. */
  public static Measured measure() {
    try (CudaBackend backend = CudaBackend.open(RuntimeOptions.defaults().withDeviceOrdinal(0));
        CudaStream stream = backend.newStream();
        DeviceBuffer from = DeviceBuffer.allocate(backend.deviceMemory(), COPY_BYTES);
        DeviceBuffer to = DeviceBuffer.allocate(backend.deviceMemory(), COPY_BYTES);
        DeviceTimer timer = new DeviceTimer(backend.device())) {
      stream.fill(from.address(), COPY_BYTES, (byte) 1);
      stream.copyDeviceToDevice(from.address(), to.address(), COPY_BYTES); // warm-up
      timer.start(stream);
      for (int i = 0; i < REPEATS; i++) {
        stream.copyDeviceToDevice(from.address(), to.address(), COPY_BYTES);
      }
      float millis = timer.stopMillis(stream);
      double gbps = 2.0 * COPY_BYTES * REPEATS / (millis / 1e3) / 1e9;
      return new Measured(gbps, backend.device().name());
    }
  }
}
