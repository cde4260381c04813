package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The PTX FloatRemainder writes for FLOAT and DOUBLE % and pmod, run instruction by instruction
 * on the CPU ({@link PtxFragment}), against Java's {@code %} and HostInterpreter's pmod, bit for
 * bit (the sign of a zero included; NaN as Java's canonical NaN): every pair of special and
 * boundary values (zeros, subnormals, the largest values, infinities, NaN), random bit patterns
 * over the whole exponent range, and everyday values. Whether the GPU computes what the PTX says
 * is CudaGeneratedFilterProjectTest's and CudaRandomAggregateTest's job, with the switch on.
 */
class FloatRemainderTest {
  /** The long division takes a step a bit of exponent difference: at most 2,098, 10 a step. */
  private static final int MAX_STEPS = 30_000;

  private static final double[] DOUBLES = {0.0, -0.0, Double.MIN_VALUE, -Double.MIN_VALUE,
      3 * Double.MIN_VALUE, Double.MIN_NORMAL, -Double.MIN_NORMAL, Math.nextDown(
      Double.MIN_NORMAL), Math.nextUp(Double.MIN_NORMAL), 1e-310, 1e-300, 0.1, -0.1, 0.5, 1.0,
      -1.0, 1.5, 2.0, 3.0, -3.0, 3.5, 7.0, 10.0, 1e15, Math.scalb(1.0, 52), Math.scalb(1.0, 53)
      + 2, 1e300, -1e300, Double.MAX_VALUE, -Double.MAX_VALUE, Math.nextDown(Double.MAX_VALUE),
      Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN};

  private static final float[] FLOATS = {0.0f, -0.0f, Float.MIN_VALUE, -Float.MIN_VALUE,
      Float.MIN_NORMAL, Math.nextDown(Float.MIN_NORMAL), 1e-40f, 0.1f, -0.1f, 0.5f, 1.0f, -1.0f,
      3.0f, -3.0f, 3.5f, 7.0f, 1e7f, 16777217.0f, 1e30f, -1e30f, Float.MAX_VALUE,
      -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN};

  /** The generated routine for one opcode, ready to run. */
  private record Routine(PtxFragment fragment, String x, String y, String result) {
    static Routine of(boolean pmod, boolean f32) {
      PtxBuilder b = new PtxBuilder();
      String x = b.b64();
      String y = b.b64();
      String result = new FloatRemainder(b).emit(pmod, f32, x, y);
      return new Routine(new PtxFragment(b.finish()), x, y, result);
    }

    long run(long xBits, long yBits) {
      return fragment.run(Map.of(x, xBits, y, yBits), result, MAX_STEPS);
    }
  }

  @Test
  void doubleRemainderIsJavas() {
    checkDoubles(false);
  }

  @Test
  void doublePmodIsSparks() {
    checkDoubles(true);
  }

  @Test
  void floatRemainderIsJavas() {
    checkFloats(false);
  }

  @Test
  void floatPmodIsSparks() {
    checkFloats(true);
  }

  private static void checkDoubles(boolean pmod) {
    Routine routine = Routine.of(pmod, false);
    List<double[]> pairs = new ArrayList<>();
    for (double x : DOUBLES) {
      for (double y : DOUBLES) {
        pairs.add(new double[] {x, y});
      }
    }
    Random random = new Random(14);
    for (int i = 0; i < 4_000; i++) { // any bits: exponents far apart, subnormals, NaN payloads
      pairs.add(new double[] {Double.longBitsToDouble(random.nextLong()),
          Double.longBitsToDouble(random.nextLong())});
    }
    for (int i = 0; i < 20_000; i++) { // everyday magnitudes, within 2^±40 of each other
      double y = (random.nextDouble() - 0.5) * Math.scalb(1.0, random.nextInt(40) - 20);
      double x = (random.nextDouble() - 0.5) * Math.scalb(1.0, random.nextInt(80) - 20);
      pairs.add(new double[] {x, i % 7 == 0 ? Math.rint(y * 100) : y});
    }
    for (double[] pair : pairs) {
      double x = pair[0];
      double y = pair[1];
      if (y == 0) {
        continue; // NULL or REMAINDER_BY_ZERO: RowEmitter tests the divisor, not this routine
      }
      double m = x % y;
      double expected = pmod && m < 0 ? (m + y) % y : m;
      long actual = routine.run(Double.doubleToRawLongBits(x), Double.doubleToRawLongBits(y));
      assertEquals(Double.doubleToLongBits(expected), actual, () -> (pmod ? "pmod(" : "")
          + x + (pmod ? ", " : " % ") + y + (pmod ? ")" : "") + " = " + expected + ", not "
          + Double.longBitsToDouble(actual));
    }
  }

  private static void checkFloats(boolean pmod) {
    Routine routine = Routine.of(pmod, true);
    List<float[]> pairs = new ArrayList<>();
    for (float x : FLOATS) {
      for (float y : FLOATS) {
        pairs.add(new float[] {x, y});
      }
    }
    Random random = new Random(15);
    for (int i = 0; i < 6_000; i++) {
      pairs.add(new float[] {Float.intBitsToFloat(random.nextInt()),
          Float.intBitsToFloat(random.nextInt())});
    }
    for (int i = 0; i < 20_000; i++) {
      float y = (random.nextFloat() - 0.5f) * Math.scalb(1.0f, random.nextInt(30) - 15);
      float x = (random.nextFloat() - 0.5f) * Math.scalb(1.0f, random.nextInt(60) - 15);
      pairs.add(new float[] {x, i % 7 == 0 ? (float) Math.rint(y * 100) : y});
    }
    for (float[] pair : pairs) {
      float x = pair[0];
      float y = pair[1];
      if (y == 0) {
        continue;
      }
      float m = x % y;
      float expected = pmod && m < 0 ? (m + y) % y : m;
      long actual = routine.run(Float.floatToRawIntBits(x) & 0xffffffffL,
          Float.floatToRawIntBits(y) & 0xffffffffL);
      assertEquals(Float.floatToIntBits(expected) & 0xffffffffL, actual, () -> (pmod ? "pmod("
          : "") + x + (pmod ? ", " : " % ") + y + (pmod ? ")" : "") + " = " + expected + ", not "
          + Float.intBitsToFloat((int) actual));
    }
  }
}
