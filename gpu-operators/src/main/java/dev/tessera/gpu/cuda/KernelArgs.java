package dev.tessera.gpu.cuda;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The parameter list of one kernel launch, in the kernel's parameter order, packed as the kernel
 * lays its parameters out: each at the next offset aligned to its own alignment (its size; 8 for
 * word arrays). The launch hands the driver this one buffer ({@link LaunchParameters}) rather than
 * a pointer per parameter: JCuda marshals each of those through several JNI calls, which cost
 * about 25 µs of host time per launch of a 16-parameter kernel (H100 host).
 */
public final class KernelArgs {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INTS =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  private byte[] bytes = new byte[128];
  private int size;

  /** A device address (a pointer parameter). */
  public KernelArgs address(long deviceAddress) {
    return i64(deviceAddress);
  }

  /** A 64-bit integer parameter. */
  public KernelArgs i64(long value) {
    int at = append(Long.BYTES, Long.BYTES); // first: it may replace bytes
    LONGS.set(bytes, at, value);
    return this;
  }

  /** A 32-bit integer parameter. */
  public KernelArgs i32(int value) {
    int at = append(Integer.BYTES, Integer.BYTES); // first: it may replace bytes
    INTS.set(bytes, at, value);
    return this;
  }

  /** A parameter of 64-bit words passed by value (an array or struct parameter, 8-aligned). */
  public KernelArgs words(long[] words) {
    int at = append(Long.BYTES, Long.BYTES * words.length);
    for (int i = 0; i < words.length; i++) {
      LONGS.set(bytes, at + Long.BYTES * i, words[i]);
    }
    return this;
  }

  /** A double parameter. */
  public KernelArgs f64(double value) {
    return i64(Double.doubleToRawLongBits(value));
  }

  /** Bytes of the packed parameters. */
  int size() {
    return size;
  }

  /** Copies the packed parameters to {@code to} (from its position; the position is kept). */
  void copyTo(ByteBuffer to) {
    to.duplicate().put(bytes, 0, size);
  }

  /**
   * Reserves {@code length} bytes at the next offset aligned to {@code alignment} and returns
   * that offset; the padding before it is zero.
   */
  private int append(int alignment, int length) {
    int at = (size + alignment - 1) & -alignment;
    if (at + length > bytes.length) {
      bytes = Arrays.copyOf(bytes, Math.max(2 * bytes.length, at + length));
    }
    size = at + length;
    return at;
  }
}
