package dev.tessera.gpu.expr;

import java.util.function.LongSupplier;

/** Decimal arithmetic on int64 unscaled values, as Spark's Decimal does it for precision <= 18. */
public final class Decimals {
  private Decimals() {}

  /** The largest n with 10^n in an int64. */
  public static final int MAX_POW10 = 18;

  static final long[] POW10 = new long[MAX_POW10 + 1];

  static {
    POW10[0] = 1;
    for (int i = 1; i < POW10.length; i++) {
      POW10[i] = POW10[i - 1] * 10;
    }
  }

  /** 10^n, 0 <= n <= {@link #MAX_POW10}. */
  public static long pow10(int n) {
    return POW10[n];
  }

  /** Whether |v| < 10^precision. */
  static boolean fits(long v, int precision) {
    return precision >= 19 || (v > -POW10[precision] && v < POW10[precision]);
  }

  /** v from scale {@code from} to scale {@code to}, HALF_UP; null when it overflows a long. */
  static Long rescale(long v, int from, int to) {
    if (to >= from) {
      int up = to - from;
      return up > 18 ? (v == 0 ? 0L : null) : exact(() -> Math.multiplyExact(v, POW10[up]));
    }
    int down = from - to;
    if (down > 18) {
      return 0L;
    }
    long divisor = POW10[down];
    long q = v / divisor;
    long r = v % divisor;
    if (Math.abs(r) * 2 >= divisor) { // |r| < 10^18, so doubling it cannot overflow
      q += v < 0 ? -1 : 1;
    }
    return q;
  }

  /** The supplier's value, or null when it overflowed. */
  static Long exact(LongSupplier s) {
    try {
      return s.getAsLong();
    } catch (ArithmeticException e) {
      return null;
    }
  }
}
