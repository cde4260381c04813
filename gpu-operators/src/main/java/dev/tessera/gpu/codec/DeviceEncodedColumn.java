package dev.tessera.gpu.codec;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The device copy of one {@link EncodedColumn}, still encoded: the long-lived form a cached column
 * keeps in the executor's device store, which owns it. Queries read it through
 * {@link #borrow}: device columns over these buffers that the kernels decode as they load them.
 * An encoded column's words are followed by {@link GpuForLayout#TRAILING_WORDS} zero words, which
 * the generated kernels' GPU-FOR loads rely on.
 */
public final class DeviceEncodedColumn implements AutoCloseable {
  private final ColumnType type;
  private final int rowCount;
  private final int nullCount;
  private final Encoding encoding;
  private final DeviceBuffer data;
  private final DeviceBuffer validity;
  private final DeviceBuffer offsets;
  private final DeviceBuffer words;
  private final DeviceBuffer blockStarts;
  private final List<DeviceBuffer> owned;
  private final long dataBytes;

  private DeviceEncodedColumn(EncodedColumn column, DeviceBuffer data, DeviceBuffer validity,
      DeviceBuffer offsets, DeviceBuffer words, DeviceBuffer blockStarts, long dataBytes,
      List<DeviceBuffer> owned) {
    this.type = column.type();
    this.rowCount = column.rowCount();
    this.nullCount = column.nullCount();
    this.encoding = column.encoding();
    this.data = data;
    this.validity = validity;
    this.offsets = offsets;
    this.words = words;
    this.blockStarts = blockStarts;
    this.dataBytes = dataBytes;
    this.owned = owned;
  }

  /**
   * Copies {@code column} to the device as it is stored (through staging memory from
   * {@code staging}); waits for the copies.
   */
  public static DeviceEncodedColumn upload(EncodedColumn column, ArenaPool pool,
      BufferAllocator staging, GpuStream stream) {
    List<DeviceBuffer> owned = new ArrayList<>(5);
    List<ArrowBuf> stagingBuffers = new ArrayList<>(5);
    try {
      Copier copy = new Copier(pool, staging, stream, owned, stagingBuffers);
      DeviceBuffer validity = column.validity() == null ? null : copy.bytes(column.validity());
      DeviceEncodedColumn result;
      if (column.encoding() == Encoding.PLAIN) {
        if (column.type().isString()) {
          DeviceBuffer bytes = copy.bytes(column.bytes());
          result = new DeviceEncodedColumn(column, bytes, validity,
              copy.ints(column.offsets(), 0), null, null, column.bytes().length, owned);
        } else {
          DeviceBuffer values = copy.bytes(column.plainValues());
          result = new DeviceEncodedColumn(column, values, validity, null, null, null,
              column.plainValues().length, owned);
        }
      } else {
        DeviceBuffer words = copy.ints(column.words(), GpuForLayout.TRAILING_WORDS);
        DeviceBuffer starts = copy.ints(column.blockStarts(), 0);
        if (column.type().isString()) {
          DeviceBuffer dictionary = copy.bytes(column.bytes());
          result = new DeviceEncodedColumn(column, dictionary, validity,
              copy.ints(column.offsets(), 0), words, starts, column.bytes().length, owned);
        } else {
          result = new DeviceEncodedColumn(column, words, validity, null, words, starts,
              words.size(), owned);
        }
      }
      stream.synchronize();
      return result;
    } catch (RuntimeException e) {
      owned.forEach(DeviceBuffer::close);
      throw e;
    } finally {
      stagingBuffers.forEach(ArrowBuf::close);
    }
  }

  /** Device bytes this copy holds. */
  public long deviceBytes() {
    return owned.stream().mapToLong(DeviceBuffer::size).sum();
  }

  /**
   * A device column over these buffers for one reader, who closes it; closing runs
   * {@code release} (the reader's reference to this copy) and leaves the buffers alone.
   */
  public DeviceColumn borrow(AutoCloseable release) {
    if (encoding == Encoding.PLAIN) {
      return DeviceColumn.borrowed(type, rowCount, nullCount, data, validity, offsets, dataBytes,
          release);
    }
    return DeviceColumn.borrowedEncoded(type, rowCount, nullCount, encoding, words, blockStarts,
        validity, type.isString() ? data : null, type.isString() ? offsets : null, release);
  }

  @Override
  public void close() {
    owned.forEach(DeviceBuffer::close);
    owned.clear();
  }

  /** Queues host-to-device copies of Java arrays through staging buffers. */
  private record Copier(ArenaPool pool, BufferAllocator staging, GpuStream stream,
      List<DeviceBuffer> owned, List<ArrowBuf> stagingBuffers) {
    DeviceBuffer bytes(byte[] values) {
      ArrowBuf host = stage(values.length);
      host.setBytes(0, values);
      return send(host, values.length);
    }

    /** {@code values}, then {@code trailingZeros} zero words. */
    DeviceBuffer ints(int[] values, int trailingZeros) {
      long bytes = (long) Integer.BYTES * (values.length + trailingZeros);
      ArrowBuf host = stage(bytes);
      host.setZero((long) Integer.BYTES * values.length, (long) Integer.BYTES * trailingZeros);
      // One bulk copy through a little-endian view (ArrowBuf's own byte order); an int array
      // of a cached batch is far below the view's 2 GiB limit.
      host.nioBuffer(0, Math.toIntExact((long) Integer.BYTES * values.length))
          .order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().put(values);
      return send(host, bytes);
    }

    private ArrowBuf stage(long bytes) {
      ArrowBuf host = staging.buffer(Math.max(bytes, 1));
      stagingBuffers.add(host);
      return host;
    }

    private DeviceBuffer send(ArrowBuf host, long bytes) {
      DeviceBuffer device = DeviceBuffer.allocate(pool, bytes);
      owned.add(device);
      if (bytes > 0) {
        stream.copyHostToDevice(host.memoryAddress(), device.address(), bytes);
      }
      return device;
    }
  }
}
