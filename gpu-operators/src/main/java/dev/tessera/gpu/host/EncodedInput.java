package dev.tessera.gpu.host;

import dev.tessera.gpu.codec.GpuForCodec;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * The host reference's load of encoded (cached) input columns: where the CUDA kernels decode a
 * GPU-FOR or GPU-DFOR column as they load it, the host operators decode it up front with the
 * reference codec ({@link GpuForCodec}) into a plain column and read that. Owns the decoded
 * columns only; the input's plain columns stay the caller's.
 */
final class EncodedInput implements AutoCloseable {
  private final List<DeviceColumn> columns;
  private final List<DeviceColumn> decoded;
  private final int rows;

  private EncodedInput(List<DeviceColumn> columns, List<DeviceColumn> decoded, int rows) {
    this.columns = columns;
    this.decoded = decoded;
    this.rows = rows;
  }

  /** {@code input} with each encoded column decoded (in new buffers from {@code pool}). */
  static EncodedInput of(ColumnBatch<DeviceColumn> input, ArenaPool pool) {
    List<DeviceColumn> columns = new ArrayList<>(input.columns().size());
    List<DeviceColumn> decoded = new ArrayList<>();
    try {
      for (DeviceColumn c : input.columns()) {
        if (c.isEncoded()) {
          DeviceColumn plain = decode(c, pool);
          decoded.add(plain);
          columns.add(plain);
        } else {
          columns.add(c);
        }
      }
    } catch (RuntimeException e) {
      decoded.forEach(DeviceColumn::close);
      throw e;
    }
    return new EncodedInput(columns, decoded, input.rowCount());
  }

  /**
   * The batch to read: plain columns, in the input's order. Do not close it (it holds the
   * caller's columns); close this object instead.
   */
  ColumnBatch<DeviceColumn> batch() {
    return new ColumnBatch<>(columns, rows);
  }

  @Override
  public void close() {
    decoded.forEach(DeviceColumn::close);
  }

  private static DeviceColumn decode(DeviceColumn c, ArenaPool pool) {
    int rows = c.rowCount();
    GpuForCodec.Packed packed = new GpuForCodec.Packed(ints(c.words()), ints(c.blockStarts()));
    int lanes = c.type().isString() ? 32 : GpuForLayout.lanes(c.type().id().width());
    long[] values = GpuForCodec.decode(c.encoding(), packed, rows, lanes);
    boolean[] valid = new boolean[rows];
    byte[][] strings = c.type().isString() ? new byte[rows][] : null;
    for (int row = 0; row < rows; row++) {
      valid[row] = !HostColumns.isNull(c, row);
      if (strings != null && valid[row]) {
        strings[row] = dictionaryEntry(c, (int) values[row]);
      }
    }
    return HostColumns.write(c.type(), rows, values, strings, valid, pool);
  }

  /** Entry {@code code} of a dictionary column's dictionary (its data and offsets). */
  private static byte[] dictionaryEntry(DeviceColumn c, int code) {
    long offsets = c.offsets().address();
    int start = MemoryUtil.getInt(offsets + 4L * code);
    int end = MemoryUtil.getInt(offsets + 4L * code + 4);
    byte[] bytes = new byte[end - start];
    MemoryUtil.copyFromMemory(c.data().address() + start, bytes, 0, bytes.length);
    return bytes;
  }

  private static int[] ints(DeviceBuffer buffer) {
    int[] values = new int[(int) (buffer.size() / Integer.BYTES)];
    for (int i = 0; i < values.length; i++) {
      values[i] = MemoryUtil.getInt(buffer.address() + (long) Integer.BYTES * i);
    }
    return values;
  }
}
