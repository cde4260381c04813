package dev.tessera.gpu.column;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.codec.GpuForCodec;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.memory.DeviceBuffer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The copy to the host of an encoded (cached) device column, as a plain host column: its buffers
 * are copied back and decoded with the reference codec. Only the rare paths that read a cached
 * scan's batch on the host take it (replaying a batch on the CPU, splitting one under memory
 * pressure); kernels decode as they load.
 */
final class EncodedDownload {
  private EncodedDownload() {}

  /** Copies and decodes {@code device}; waits for the copies. */
  static HostColumn toHost(DeviceColumn device, BufferAllocator allocator, GpuStream stream) {
    try (ArrowBuf words = copy(device.words(), allocator, stream);
        ArrowBuf starts = copy(device.blockStarts(), allocator, stream);
        ArrowBuf validity = device.validity() == null ? null
            : copy(device.validity(), allocator, stream);
        ArrowBuf dictionaryOffsets = device.type().isString()
            ? copy(device.offsets(), allocator, stream) : null;
        ArrowBuf dictionary = device.type().isString()
            ? copy(device.data(), allocator, stream) : null) {
      stream.synchronize();
      int rows = device.rowCount();
      GpuForCodec.Packed packed = new GpuForCodec.Packed(ints(words, device.words()),
          ints(starts, device.blockStarts()));
      int lanes = device.type().isString() ? 32 : GpuForLayout.lanes(device.type().id().width());
      long[] values = GpuForCodec.decode(device.encoding(), packed, rows, lanes);
      try (HostColumnBuilder builder = new HostColumnBuilder(device.type(), rows, allocator)) {
        for (int row = 0; row < rows; row++) {
          if (validity != null && (validity.getByte(row >>> 3) & (1 << (row & 7))) == 0) {
            builder.appendNull();
          } else if (dictionary != null) {
            int start = dictionaryOffsets.getInt(4L * values[row]);
            int end = dictionaryOffsets.getInt(4L * values[row] + 4);
            builder.appendUtf8At(dictionary.memoryAddress() + start, end - start);
          } else {
            appendFixed(builder, device.type().id(), values[row]);
          }
        }
        return builder.build();
      }
    }
  }

  private static void appendFixed(HostColumnBuilder builder, TypeId type, long value) {
    switch (type) {
      case BYTE -> builder.appendByte((byte) value);
      case SHORT -> builder.appendShort((short) value);
      case INT, DATE -> builder.appendInt((int) value);
      case LONG, TIMESTAMP, DECIMAL -> builder.appendLong(value);
      default -> throw new IllegalStateException(type + " columns are never encoded");
    }
  }

  private static ArrowBuf copy(DeviceBuffer source, BufferAllocator allocator, GpuStream stream) {
    ArrowBuf target = allocator.buffer(source.size());
    stream.copyDeviceToHost(source.address(), target.memoryAddress(), source.size());
    return target;
  }

  /** The int32 values of {@code buffer}, a host copy of {@code source}. */
  private static int[] ints(ArrowBuf buffer, DeviceBuffer source) {
    int[] values = new int[(int) (source.size() / Integer.BYTES)];
    for (int i = 0; i < values.length; i++) {
      values[i] = buffer.getInt((long) Integer.BYTES * i);
    }
    return values;
  }
}
