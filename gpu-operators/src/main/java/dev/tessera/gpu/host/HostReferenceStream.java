package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import org.apache.arrow.memory.util.MemoryUtil;

/** Every operation completes when called: host and "device" memory are both host memory. */
final class HostReferenceStream implements GpuStream {
  @Override
  public void copyHostToDevice(long hostAddress, long deviceAddress, long bytes) {
    copy(hostAddress, deviceAddress, bytes);
  }

  @Override
  public void copyDeviceToHost(long deviceAddress, long hostAddress, long bytes) {
    copy(deviceAddress, hostAddress, bytes);
  }

  @Override
  public void copyDeviceToDevice(long sourceAddress, long destinationAddress, long bytes) {
    copy(sourceAddress, destinationAddress, bytes);
  }

  @Override
  public void fill(long deviceAddress, long bytes, byte value) {
    if (bytes > 0) {
      MemoryUtil.setMemory(deviceAddress, bytes, value);
    }
  }

  @Override
  public void synchronize() {}

  @Override
  public void close() {}

  private static void copy(long from, long to, long bytes) {
    if (bytes < 0) {
      throw new IllegalArgumentException("negative copy size " + bytes);
    }
    if (bytes > 0) {
      MemoryUtil.copyMemory(from, to, bytes);
    }
  }
}
