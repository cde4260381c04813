package dev.tessera.gpu.host;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * Reading and writing device columns in host-addressable memory, for the host reference
 * operators. Fixed-width values travel as longs: integers sign-extended, FLOAT as its int bits,
 * DOUBLE as its long bits.
 */
final class HostColumns {
  private HostColumns() {}

  static boolean isNull(DeviceColumn c, int row) {
    return c.validity() != null
        && (MemoryUtil.getByte(c.validity().address() + (row >>> 3)) & (1 << (row & 7))) == 0;
  }

  /** A fixed-width value as a long (see the class comment). */
  static long fixed(DeviceColumn c, int row) {
    long data = c.data().address();
    return switch (c.type().id()) {
      case BOOLEAN, BYTE -> MemoryUtil.getByte(data + row);
      case SHORT -> MemoryUtil.getShort(data + 2L * row);
      case INT, DATE, FLOAT -> MemoryUtil.getInt(data + 4L * row);
      case LONG, TIMESTAMP, DECIMAL, DOUBLE -> MemoryUtil.getLong(data + 8L * row);
      case STRING -> throw new IllegalArgumentException("strings are not fixed-width");
    };
  }

  static byte[] utf8(DeviceColumn c, int row) {
    long offsets = c.offsets().address();
    int start = MemoryUtil.getInt(offsets + 4L * row);
    int end = MemoryUtil.getInt(offsets + 4L * row + 4);
    byte[] bytes = new byte[end - start];
    MemoryUtil.copyFromMemory(c.data().address() + start, bytes, 0, bytes.length);
    return bytes;
  }

  /**
   * A new column of {@code src}'s values at {@code rows[from .. to)}, in that order; a negative
   * row gives NULL (the unmatched side of an outer join).
   */
  static DeviceColumn gather(DeviceColumn src, int[] rows, int from, int to, ArenaPool pool) {
    int n = to - from;
    long[] values = new long[n];
    byte[][] strings = src.type().isString() ? new byte[n][] : null;
    boolean[] valid = new boolean[n];
    for (int i = 0; i < n; i++) {
      int row = rows[from + i];
      valid[i] = row >= 0 && !isNull(src, row);
      if (!valid[i]) {
        continue;
      }
      if (strings != null) {
        strings[i] = utf8(src, row);
      } else {
        values[i] = fixed(src, row);
      }
    }
    return write(src.type(), n, values, strings, valid, pool);
  }

  /**
   * A new device column of {@code rows} values; the validity bitmap is dropped when nothing is
   * NULL, as every operator does.
   *
   * @param values fixed-width values (ignored for strings)
   * @param strings the bytes of string values (null for NULL; ignored for fixed width)
   */
  static DeviceColumn write(ColumnType type, int rows, long[] values, byte[][] strings,
      boolean[] valid, ArenaPool pool) {
    List<DeviceBuffer> owned = new ArrayList<>(3);
    try {
      DeviceBuffer validity = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
      owned.add(validity);
      MemoryUtil.setMemory(validity.address(), validity.size(), (byte) 0);
      int nulls = 0;
      for (int i = 0; i < rows; i++) {
        if (valid[i]) {
          long at = validity.address() + (i >>> 3);
          MemoryUtil.putByte(at, (byte) (MemoryUtil.getByte(at) | (1 << (i & 7))));
        } else {
          nulls++;
        }
      }
      DeviceBuffer data;
      DeviceBuffer offsets = null;
      long dataBytes;
      if (type.isString()) {
        long total = 0;
        for (int i = 0; i < rows; i++) {
          total += valid[i] ? strings[i].length : 0;
        }
        if (total > Integer.MAX_VALUE) {
          throw new IllegalStateException("a string column holds at most 2 GiB of text");
        }
        dataBytes = total;
        data = DeviceBuffer.allocate(pool, dataBytes);
        owned.add(data);
        offsets = DeviceBuffer.allocate(pool, 4L * (rows + 1));
        owned.add(offsets);
        int position = 0;
        for (int i = 0; i < rows; i++) {
          MemoryUtil.putInt(offsets.address() + 4L * i, position);
          if (valid[i]) {
            MemoryUtil.copyToMemory(strings[i], 0, data.address() + position, strings[i].length);
            position += strings[i].length;
          }
        }
        MemoryUtil.putInt(offsets.address() + 4L * rows, position);
      } else {
        dataBytes = type.fixedDataBytes(rows);
        data = DeviceBuffer.allocate(pool, dataBytes);
        owned.add(data);
        int width = type.id().width();
        for (int i = 0; i < rows; i++) {
          long at = data.address() + (long) i * width;
          long v = valid[i] ? values[i] : 0;
          switch (width) {
            case 1 -> MemoryUtil.putByte(at, (byte) v);
            case 2 -> MemoryUtil.putShort(at, (short) v);
            case 4 -> MemoryUtil.putInt(at, (int) v);
            default -> MemoryUtil.putLong(at, v);
          }
        }
      }
      if (nulls == 0) {
        owned.remove(validity);
        validity.close();
        validity = null;
      }
      return new DeviceColumn(type, rows, nulls, data, validity, offsets, dataBytes);
    } catch (RuntimeException e) {
      owned.forEach(DeviceBuffer::close);
      throw e;
    }
  }
}
