package dev.tessera.gpu.codegen;

/**
 * Java's floating-point {@code %} (C fmod: the remainder of the quotient truncated, exact) and
 * Spark's pmod of FLOAT and DOUBLE values (REM_F32, REM_F64, PMOD_F32, PMOD_F64), written inline
 * in PTX, which has no instruction for them. A call per row to a prelude fmod made ptxas spill the
 * values that live across it (the call ABI saves few registers); this routine needs a handful of
 * registers and no call.
 *
 * <p>The remainder is musl's fmod: both operands as an integer mantissa with its top bit at bit 52
 * and an exponent (subnormals normalised), then long division a bit at a time, one step for each
 * bit the dividend's exponent exceeds the divisor's (a few dozen for everyday values, at most
 * 2,098), and the remainder's mantissa written back as a double. Every step is exact, so the
 * result is too. A FLOAT remainder is the DOUBLE remainder of the widened operands, narrowed:
 * fmod's result is representable in its operands' type, so both conversions are exact. The
 * caller handles a zero divisor (NULL, or REMAINDER_BY_ZERO under ANSI); for it the bits here are
 * NaN, as Java's.
 */
final class FloatRemainder {
  private static final long SIGN = 0x8000000000000000L;
  private static final long INFINITY = 0x7ff0000000000000L;
  private static final long FRACTION = 0x000fffffffffffffL;
  private static final long IMPLICIT_BIT = 0x0010000000000000L;
  /** clz of a mantissa whose top bit is the implicit bit 52. */
  private static final int NORMAL_LEADING_ZEROS = 11;
  private static final long F64_NAN = 0x7ff8000000000000L;
  private static final long F32_NAN = 0x7fc00000L;

  private final PtxBuilder b;

  FloatRemainder(PtxBuilder b) {
    this.b = b;
  }

  /**
   * A fresh .b64 register holding the bits of {@code x % y} ({@code pmod}: pmod(x, y), Spark's
   * {@code m < 0 ? (m + y) % y : m} with {@code m = x % y}) of two .b64 registers holding DOUBLE
   * bits, or FLOAT bits zero-extended ({@code f32}; the result too). NaN results are Java's
   * canonical NaN.
   */
  String emit(boolean pmod, boolean f32, String x, String y) {
    String xd = f32 ? widen(x) : x;
    String yd = f32 ? widen(y) : y;
    String r = fmod(xd, yd);
    if (pmod) {
      String asDouble = b.doubleOf(r);
      String negative = b.pred();
      b.op("setp.lt.f64 %s, %s, 0d0000000000000000", negative, asDouble);
      String done = b.label("pmod_done");
      b.op("@!%s bra %s", negative, done);
      // (m + y) % y: the sum rounded in the operands' type, as Java adds them.
      String sum = f32 ? floatSum(asDouble, y) : doubleSum(asDouble, yd);
      b.op("mov.b64 %s, %s", r, fmod(sum, yd));
      b.place(done);
    }
    return f32 ? narrow(r) : r;
  }

  /**
   * x % y of two DOUBLEs' bits, in a fresh .b64 register: x where |x| < |y| (y infinite among
   * them), a zero of x's sign where |x| = |y|, NaN where x is infinite or either is NaN (or y is
   * 0), else the long division.
   */
  private String fmod(String x, String y) {
    String ax = b.b64();
    b.op("and.b64 %s, %s, %d", ax, x, ~SIGN);
    String ay = b.b64();
    b.op("and.b64 %s, %s, %d", ay, y, ~SIGN);
    String sign = b.b64();
    b.op("and.b64 %s, %s, %d", sign, x, SIGN);
    String nan = b.pred();
    b.op("setp.gt.u64 %s, %s, %d", nan, ay, INFINITY);
    String xNotFinite = b.pred();
    b.op("setp.ge.u64 %s, %s, %d", xNotFinite, ax, INFINITY);
    b.op("or.pred %s, %s, %s", nan, nan, xNotFinite);
    String yZero = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", yZero, ay);
    b.op("or.pred %s, %s, %s", nan, nan, yZero);
    String same = b.pred();
    b.op("setp.eq.u64 %s, %s, %s", same, ax, ay);
    String trivial = b.pred();
    b.op("setp.lt.u64 %s, %s, %s", trivial, ax, ay);
    b.op("or.pred %s, %s, %s", trivial, trivial, same);
    b.op("or.pred %s, %s, %s", trivial, trivial, nan);
    String r = b.b64();
    b.op("mov.b64 %s, %s", r, x);
    String done = b.label("fmod_done");
    b.op("@%s bra %s", trivial, done);
    b.comment("fmod: |x| > |y|, both finite and not 0");
    Mantissa dividend = mantissa(ax);
    Mantissa divisor = mantissa(ay);
    String remainder = dividend.bits;
    String exponent = dividend.exponent;
    String step = b.label("fmod_step");
    String last = b.label("fmod_last");
    b.place(step);
    String aligned = b.pred();
    b.op("setp.le.s32 %s, %s, %s", aligned, exponent, divisor.exponent);
    b.op("@%s bra %s", aligned, last);
    subtractIfFits(remainder, divisor.bits);
    b.op("shl.b64 %s, %s, 1", remainder, remainder);
    b.op("sub.s32 %s, %s, 1", exponent, exponent);
    b.op("bra %s", step);
    b.place(last);
    subtractIfFits(remainder, divisor.bits);
    b.op("mov.b64 %s, %s", r, encode(remainder, exponent));
    b.op("or.b64 %s, %s, %s", r, r, sign);
    b.place(done);
    b.op("selp.b64 %s, %s, %s, %s", r, sign, r, same);
    b.op("selp.b64 %s, %d, %s, %s", r, F64_NAN, r, nan);
    return r;
  }

  /** A finite, non-zero magnitude as {@code bits * 2^(exponent - 1075)}, bit 52 the top bit. */
  private record Mantissa(String bits, String exponent) {}

  /** Of {@code magnitude} (a DOUBLE's bits without the sign, finite, not 0). */
  private Mantissa mantissa(String magnitude) {
    String field = b.b64();
    b.op("shr.u64 %s, %s, 52", field, magnitude);
    String exponent = b.b32();
    b.op("cvt.u32.u64 %s, %s", exponent, field);
    String fraction = b.b64();
    b.op("and.b64 %s, %s, %d", fraction, magnitude, FRACTION);
    String withBit = b.b64();
    b.op("or.b64 %s, %s, %d", withBit, fraction, IMPLICIT_BIT);
    String subnormal = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", subnormal, exponent);
    String bits = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", bits, fraction, withBit, subnormal);
    // A subnormal's scale is exponent field 1's, without the implicit bit.
    b.op("max.s32 %s, %s, 1", exponent, exponent);
    normalize(bits, exponent);
    return new Mantissa(bits, exponent);
  }

  /** Shifts {@code bits} (not 0) so that its top bit is bit 52, adjusting {@code exponent}. */
  private void normalize(String bits, String exponent) {
    String shift = b.b32();
    b.op("clz.b64 %s, %s", shift, bits);
    b.op("sub.s32 %s, %s, %d", shift, shift, NORMAL_LEADING_ZEROS);
    b.op("shl.b64 %s, %s, %s", bits, bits, shift);
    b.op("sub.s32 %s, %s, %s", exponent, exponent, shift);
  }

  /** {@code remainder -= divisor} where that is not negative (one step of the long division). */
  private void subtractIfFits(String remainder, String divisor) {
    String difference = b.b64();
    b.op("sub.s64 %s, %s, %s", difference, remainder, divisor);
    String fits = b.pred();
    b.op("setp.ge.s64 %s, %s, 0", fits, difference);
    b.op("selp.b64 %s, %s, %s, %s", remainder, difference, remainder, fits);
  }

  /**
   * The DOUBLE bits (sign clear) of {@code bits * 2^(exponent - 1075)}, bits below 2^53: 0 for
   * 0; the value is representable (a remainder's always is), so no rounding is needed.
   */
  private String encode(String bits, String exponent) {
    String zero = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", zero, bits);
    normalize(bits, exponent);
    // Normal: the exponent field, the implicit bit dropped.
    String field = b.b64();
    b.op("cvt.u64.u32 %s, %s", field, exponent);
    b.op("shl.b64 %s, %s, 52", field, field);
    String normal = b.b64();
    b.op("sub.s64 %s, %s, %d", normal, bits, IMPLICIT_BIT);
    b.op("or.b64 %s, %s, %s", normal, normal, field);
    // Subnormal (exponent 0 or below): shifted down to the scale of exponent field 1.
    String down = b.b32();
    b.op("neg.s32 %s, %s", down, exponent);
    b.op("add.s32 %s, %s, 1", down, down);
    String subnormal = b.b64();
    b.op("shr.u64 %s, %s, %s", subnormal, bits, down);
    String isNormal = b.pred();
    b.op("setp.gt.s32 %s, %s, 0", isNormal, exponent);
    String r = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", r, normal, subnormal, isNormal);
    b.op("selp.b64 %s, 0, %s, %s", r, r, zero);
    return r;
  }

  /** A FLOAT's bits (zero-extended) as the DOUBLE bits of the same value. */
  private String widen(String bits) {
    String f = b.floatOf(bits);
    String d = b.f64();
    b.op("cvt.f64.f32 %s, %s", d, f);
    return b.bitsOfDouble(d);
  }

  /** A DOUBLE's bits as the FLOAT bits (zero-extended) of the same value; NaN as Java's. */
  private String narrow(String bits) {
    String d = b.doubleOf(bits);
    String nan = b.pred();
    b.op("setp.nan.f64 %s, %s, %s", nan, d, d);
    String f = b.f32();
    b.op("cvt.rn.f32.f64 %s, %s", f, d);
    String r = b.bitsOfFloat(f);
    b.op("selp.b64 %s, %d, %s, %s", r, F32_NAN, r, nan);
    return r;
  }

  /** The DOUBLE bits of (float) m + y, m a double holding a FLOAT value, y FLOAT bits. */
  private String floatSum(String m, String y) {
    String fm = b.f32();
    b.op("cvt.rn.f32.f64 %s, %s", fm, m);
    b.op("add.rn.f32 %s, %s, %s", fm, fm, b.floatOf(y));
    String d = b.f64();
    b.op("cvt.f64.f32 %s, %s", d, fm);
    return b.bitsOfDouble(d);
  }

  /** The bits of m + y, m a double, y DOUBLE bits. */
  private String doubleSum(String m, String y) {
    String fy = b.doubleOf(y);
    String sum = b.f64();
    b.op("add.rn.f64 %s, %s, %s", sum, m, fy);
    return b.bitsOfDouble(sum);
  }
}
