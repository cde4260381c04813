package dev.tessera.gpu.column;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/** Host staging columns to device columns and back, as copies queued on a stream. */
public final class ColumnTransfer {
  private ColumnTransfer() {}

  /**
   * Queues the copies of {@code host} into new device buffers from {@code pool}. Asynchronous on
   * CUDA: {@code host} must stay open and unchanged until {@code stream} is synchronized.
   */
  public static DeviceColumn toDeviceAsync(HostColumn host, ArenaPool pool, GpuStream stream) {
    List<DeviceBuffer> allocated = new ArrayList<>(3);
    try {
      DeviceBuffer data = copyIn(host.data(), host.dataBytes(), pool, stream, allocated);
      DeviceBuffer validity = host.validity() == null ? null
          : copyIn(host.validity(), Validity.bytesFor(host.rowCount()), pool, stream, allocated);
      DeviceBuffer offsets = host.offsets() == null ? null
          : copyIn(host.offsets(), 4L * (host.rowCount() + 1), pool, stream, allocated);
      return new DeviceColumn(host.type(), host.rowCount(), host.nullCount(), data, validity,
          offsets, host.dataBytes());
    } catch (RuntimeException e) {
      allocated.forEach(DeviceBuffer::close);
      throw e;
    }
  }

  /** Copies {@code device} into new host staging buffers and waits for the copies. */
  public static HostColumn toHost(DeviceColumn device, BufferAllocator allocator,
      GpuStream stream) {
    HostColumn host = toHostAsync(device, allocator, stream);
    try {
      stream.synchronize();
      return host;
    } catch (RuntimeException e) {
      host.close();
      throw e;
    }
  }

  /** Queues the copies of every column of {@code batch} to the device. */
  public static ColumnBatch<DeviceColumn> toDeviceAsync(ColumnBatch<HostColumn> batch,
      ArenaPool pool, GpuStream stream) {
    List<DeviceColumn> columns = new ArrayList<>(batch.columns().size());
    try {
      for (HostColumn column : batch.columns()) {
        columns.add(toDeviceAsync(column, pool, stream));
      }
      return new ColumnBatch<>(columns, batch.rowCount());
    } catch (RuntimeException e) {
      columns.forEach(DeviceColumn::close);
      throw e;
    }
  }

  /** Copies every column of {@code batch} to the host, with one wait at the end. */
  public static ColumnBatch<HostColumn> toHost(ColumnBatch<DeviceColumn> batch,
      BufferAllocator allocator, GpuStream stream) {
    List<HostColumn> columns = new ArrayList<>(batch.columns().size());
    try {
      for (DeviceColumn column : batch.columns()) {
        columns.add(toHostAsync(column, allocator, stream));
      }
      stream.synchronize();
      return new ColumnBatch<>(columns, batch.rowCount());
    } catch (RuntimeException e) {
      columns.forEach(HostColumn::close);
      throw e;
    }
  }

  private static HostColumn toHostAsync(DeviceColumn device, BufferAllocator allocator,
      GpuStream stream) {
    if (device.isEncoded()) {
      return EncodedDownload.toHost(device, allocator, stream);
    }
    List<ArrowBuf> allocated = new ArrayList<>(3);
    try {
      long dataBytes = device.dataBytes();
      ArrowBuf data = copyOut(device.data(), dataBytes, allocator, stream, allocated);
      ArrowBuf validity = device.validity() == null ? null
          : copyOut(device.validity(), Validity.bytesFor(device.rowCount()), allocator, stream,
              allocated);
      ArrowBuf offsets = device.offsets() == null ? null
          : copyOut(device.offsets(), 4L * (device.rowCount() + 1), allocator, stream, allocated);
      return new HostColumn(device.type(), device.rowCount(), device.nullCount(), data, validity,
          offsets, dataBytes);
    } catch (RuntimeException e) {
      allocated.forEach(ArrowBuf::close);
      throw e;
    }
  }

  private static DeviceBuffer copyIn(ArrowBuf source, long bytes, ArenaPool pool,
      GpuStream stream, List<DeviceBuffer> allocated) {
    DeviceBuffer target = DeviceBuffer.allocate(pool, bytes);
    allocated.add(target);
    stream.copyHostToDevice(source.memoryAddress(), target.address(), bytes);
    return target;
  }

  private static ArrowBuf copyOut(DeviceBuffer source, long bytes, BufferAllocator allocator,
      GpuStream stream, List<ArrowBuf> allocated) {
    ArrowBuf target = allocator.buffer(bytes);
    allocated.add(target);
    stream.copyDeviceToHost(source.address(), target.memoryAddress(), bytes);
    return target;
  }
}
