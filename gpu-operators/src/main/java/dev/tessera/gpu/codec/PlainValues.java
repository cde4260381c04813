package dev.tessera.gpu.codec;

import dev.tessera.gpu.column.TypeId;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Fixed-width values in the device layout (little-endian, {@link TypeId#width} bytes each) and
 * in {@link EncodedColumn}'s long convention (integers sign-extended, FLOAT as its int bits,
 * DOUBLE as its long bits, BOOLEAN 0 or 1), and the conversions between the two.
 */
final class PlainValues {
  private PlainValues() {}

  private static final VarHandle SHORTS =
      MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INTS =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /**
   * {@code values[0, rows)} in the convention for {@code type}, in a new array: narrowed to its
   * width and sign-extended (BOOLEAN: 0 or 1).
   */
  static long[] canonical(long[] values, int rows, TypeId type) {
    long[] result = new long[rows];
    switch (type) {
      case BOOLEAN -> {
        for (int r = 0; r < rows; r++) {
          result[r] = values[r] != 0 ? 1 : 0;
        }
      }
      case BYTE -> {
        for (int r = 0; r < rows; r++) {
          result[r] = (byte) values[r];
        }
      }
      case SHORT -> {
        for (int r = 0; r < rows; r++) {
          result[r] = (short) values[r];
        }
      }
      case INT, DATE, FLOAT -> {
        for (int r = 0; r < rows; r++) {
          result[r] = (int) values[r];
        }
      }
      case LONG, TIMESTAMP, DECIMAL, DOUBLE -> System.arraycopy(values, 0, result, 0, rows);
      case STRING -> throw new IllegalArgumentException("strings have no fixed width");
    }
    return result;
  }

  /** The device layout of {@code values[0, rows)} (already canonical). */
  static byte[] toBytes(long[] values, int rows, TypeId type) {
    byte[] bytes = new byte[Math.multiplyExact(rows, type.width())];
    switch (type.width()) {
      case 1 -> {
        for (int r = 0; r < rows; r++) {
          bytes[r] = (byte) values[r];
        }
      }
      case 2 -> {
        for (int r = 0; r < rows; r++) {
          SHORTS.set(bytes, 2 * r, (short) values[r]);
        }
      }
      case 4 -> {
        for (int r = 0; r < rows; r++) {
          INTS.set(bytes, 4 * r, (int) values[r]);
        }
      }
      default -> {
        for (int r = 0; r < rows; r++) {
          LONGS.set(bytes, 8 * r, values[r]);
        }
      }
    }
    return bytes;
  }

  /** Value {@code row} of the device layout {@code bytes}, in the long convention. */
  static long read(byte[] bytes, int row, TypeId type) {
    return switch (type.width()) {
      case 1 -> bytes[row];
      case 2 -> (short) SHORTS.get(bytes, 2 * row);
      case 4 -> (int) INTS.get(bytes, 4 * row);
      default -> (long) LONGS.get(bytes, 8 * row);
    };
  }
}
