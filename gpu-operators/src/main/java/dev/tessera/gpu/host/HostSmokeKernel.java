package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.DeviceBuffer;
import org.apache.arrow.memory.util.MemoryUtil;

/** {@link SmokeKernel} as a plain loop. */
final class HostSmokeKernel implements SmokeKernel {
  @Override
  public void axpbSum(GpuStream stream, DeviceBuffer x, DeviceBuffer y, long count, long a, long b,
      DeviceBuffer sum) {
    SmokeKernel.checkSizes(x, y, count, sum);
    long total = 0;
    for (long i = 0; i < count; i++) {
      long value = a * MemoryUtil.getLong(x.address() + i * 8) + b;
      MemoryUtil.putLong(y.address() + i * 8, value);
      total += value;
    }
    if (count > 0) {
      MemoryUtil.putLong(sum.address(), MemoryUtil.getLong(sum.address()) + total);
    }
  }
}
