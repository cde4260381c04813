package dev.tessera.gpu.expr;

/**
 * Spark's ordering of floating point values (SQLOrderingUtil): -0.0 = 0.0, NaN = NaN, NaN largest.
 */
public final class SparkOrder {
  private SparkOrder() {}

  public static int compareDoubles(double x, double y) {
    if (x < y) {
      return -1;
    }
    if (x > y) {
      return 1;
    }
    if (x == y) {
      return 0;
    }
    boolean xNaN = Double.isNaN(x);
    boolean yNaN = Double.isNaN(y);
    return xNaN == yNaN ? 0 : xNaN ? 1 : -1;
  }

  public static int compareFloats(float x, float y) {
    return compareDoubles(x, y);
  }
}
