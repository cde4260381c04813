package dev.tessera.gpu.kernels;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.memory.DeviceBuffer;

/**
 * The smoke kernel of the diagnostic and the runtime tests (native-kernels/kernels/smoke.cu):
 * {@code y[i] = a * x[i] + b} over int64 values, and the sum of y added into {@code sum[0]}. All
 * arithmetic wraps as Java's long arithmetic does.
 */
public interface SmokeKernel {
  /**
   * Queues the kernel on {@code stream}.
   *
   * @param x {@code count} int64 values
   * @param y room for {@code count} int64 values
   * @param sum one int64 the sum of y is added to (zero it first for the plain sum)
   */
  void axpbSum(GpuStream stream, DeviceBuffer x, DeviceBuffer y, long count, long a, long b,
      DeviceBuffer sum);

  /** Checks the buffers can hold what {@link #axpbSum} reads and writes. */
  static void checkSizes(DeviceBuffer x, DeviceBuffer y, long count, DeviceBuffer sum) {
    if (count < 0 || x.size() < count * 8 || y.size() < count * 8 || sum.size() < 8) {
      throw new IllegalArgumentException(String.format(
          "smoke kernel: %d values need %d bytes in x and y and 8 in sum; got %d, %d and %d",
          count, count * 8, x.size(), y.size(), sum.size()));
    }
  }
}
