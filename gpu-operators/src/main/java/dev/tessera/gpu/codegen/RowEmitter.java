package dev.tessera.gpu.codegen;

import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Decimals;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.RowError;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The PTX of one program instruction for one row: one emitter per opcode, each mirroring the
 * case of program.cuh's ExecuteInstruction (and so HostInterpreter) that it names. Values live in
 * PTX registers ({@link Val}); what is known when the kernel is generated (operand kinds, widths,
 * comparisons, ANSI mode, whether an operand can be NULL or carry an error) produces no code.
 *
 * <p>Opcodes without an emitter here make the generator decline the pipeline
 * ({@link CodegenUnsupportedException}); it then runs on the interpreter.
 */
final class RowEmitter {
  private static final long F32_SIGN = 0x80000000L;
  private static final long F32_BITS = 0xffffffffL;
  private static final long F64_SIGN = 0x8000000000000000L;
  private static final long F32_NAN = 0x7fc00000L;
  private static final long F64_NAN = 0x7ff8000000000000L;
  /** Decimals.fits: precision 19 or more always fits an int64. */
  private static final int ALWAYS_FITS_PRECISION = 19;
  /** The immediate a conjunction's constant false is (ProgramEmitter's falseElseSelects). */
  static final String FALSE = "0";
  private final PtxBuilder b;
  private final boolean ansi;
  private final KernelContext kernel;
  /**
   * The registers that hold a constant known not to be 0 ({@link KernelContext#nonZeroConstant}):
   * a remainder by one cannot be NULL, nor raise.
   */
  private final Set<String> nonZero = new HashSet<>();

  RowEmitter(PtxBuilder b, boolean ansi, KernelContext kernel) {
    this.b = b;
    this.ansi = ansi;
    this.kernel = kernel;
  }

  /** What the emitters need from the kernel around them. */
  interface KernelContext {
    /** The .b64 register holding constants[index] (loaded once per kernel). */
    String constant(int index);

    /**
     * Whether constants[index] is not 0: the kernel's key says which constants are 0
     * (ProgramEmitter.structuralKey), so programs share a kernel only where they agree on it.
     */
    boolean nonZeroConstant(int index);

    /** The .b64 address of the string pool. */
    String strings();

    /** The .b64 global address of the constants array. */
    String constantsBase();

    /** A .pred register that is always false. */
    String alwaysFalse();

    /** LOAD_COLUMN of input column {@code column} at the item's row. */
    Val loadColumn(int column, Item item);
  }

  /** One of a thread's rows of the tile: its row number (.s64) and its index among the items. */
  record Item(int index, String row) {}

  /** Whether the generator has an emitter for {@code op}. */
  static boolean covers(Opcode op) {
    try {
      registerOperands(op, 0, 0, 0);
      return true;
    } catch (CodegenUnsupportedException e) {
      return false;
    }
  }

  /**
   * The register operands of {@code op} (among a, b, c, by its Opcode documentation), for the
   * opcodes this class emits.
   */
  static List<Integer> registerOperands(Opcode op, int a, int bb, int c)
      throws CodegenUnsupportedException {
    return switch (op) {
      case LOAD_COLUMN, LOAD_CONST, LOAD_NULL, LOAD_STRING_CONST -> List.of();
      case MOVE, NEG_INT, ABS_INT, NEG_F32, NEG_F64, ABS_F32, ABS_F64, NORMALIZE_F32,
          NORMALIZE_F64, RESCALE_DECIMAL, NOT, IS_NULL, IS_NOT_NULL, CAST_INT_TO_INT,
          CAST_INT_TO_F32, CAST_INT_TO_F64, CAST_F32_TO_F64, CAST_F64_TO_F32,
          CAST_INT_TO_DECIMAL, CAST_DECIMAL_TO_INT, CAST_DECIMAL_TO_F64, CAST_INT_TO_BOOL,
          CAST_F32_TO_BOOL, CAST_F64_TO_BOOL, YEAR, MONTH, DAY_OF_MONTH, LENGTH, CAST_F32_TO_INT,
          CAST_F64_TO_INT, IN_SET_INT -> List.of(a);
      case ADD_INT, SUB_INT, MUL_INT, ADD_F32, ADD_F64, SUB_F32, SUB_F64, MUL_F32, MUL_F64,
          DIV_F32, DIV_F64, ADD_DECIMAL, SUB_DECIMAL, MUL_DECIMAL, CMP_INT, CMP_F32, CMP_F64,
          CMP_STRING, AND, OR, COALESCE, STARTS_WITH, ENDS_WITH, CONTAINS, REM_INT, PMOD_INT,
          EQ_NULL_SAFE -> List.of(a, bb);
      // fmod has no PTX instruction: FloatRemainder writes it out.
      case REM_F32, REM_F64, PMOD_F32, PMOD_F64 -> List.of(a, bb);
      case SELECT -> List.of(a, bb, c);
      default -> throw new CodegenUnsupportedException(
          "the kernel generator has no emitter for " + op + " yet");
    };
  }

  /**
   * Emits {@code op} for {@code item}; {@code x}, {@code y}, {@code z} are the register operands
   * in the order {@link #registerOperands} lists them (null where there are fewer).
   */
  Val emit(Opcode op, int a, int bb, int c, Val x, Val y, Val z, Item item) {
    return switch (op) {
      case LOAD_COLUMN -> kernel.loadColumn(a, item);
      case LOAD_CONST -> loadConstant(a);
      // A NULL of any kind, strings included: a zero length keeps string readers well formed.
      case LOAD_NULL -> new Val(imm(0), kernel.alwaysFalse(), null, zeroLength());
      case LOAD_STRING_CONST -> loadStringConstant(a, bb);
      case MOVE -> x;
      case ADD_INT, SUB_INT, MUL_INT -> integerArithmetic(op, x, y, c);
      case NEG_INT, ABS_INT -> negateOrAbs(op == Opcode.NEG_INT, x, c);
      case REM_INT, PMOD_INT -> integerRemainder(op == Opcode.PMOD_INT, x, y, c);
      case ADD_F32, SUB_F32, MUL_F32, DIV_F32 -> floatArithmetic(op, x, y, true);
      case ADD_F64, SUB_F64, MUL_F64, DIV_F64 -> floatArithmetic(op, x, y, false);
      case REM_F32, PMOD_F32 -> floatRemainder(op == Opcode.PMOD_F32, x, y, true);
      case REM_F64, PMOD_F64 -> floatRemainder(op == Opcode.PMOD_F64, x, y, false);
      case EQ_NULL_SAFE -> equalNullSafe(x, y, c);
      case CAST_F32_TO_INT -> castFractionToInt(x, convertFloat("cvt.f64.f32", b.floatOf(x.value()),
          false), c);
      case CAST_F64_TO_INT -> castFractionToInt(x, b.doubleOf(x.value()), c);
      case IN_SET_INT -> inSet(x, bb, c);
      case NEG_F32 -> unary(x, bitOp("xor", and(x.value(), F32_BITS), F32_SIGN));
      case ABS_F32 -> unary(x, and(x.value(), F32_BITS & ~F32_SIGN));
      case NEG_F64 -> unary(x, bitOp("xor", x.value(), F64_SIGN));
      case ABS_F64 -> unary(x, and(x.value(), ~F64_SIGN));
      case NORMALIZE_F32 -> unary(x, normalize(x.value(), true));
      case NORMALIZE_F64 -> unary(x, normalize(x.value(), false));
      case RESCALE_DECIMAL -> decimalResult(x, null, rescale(x.value(), bb >> 8, bb & 0xff), c);
      case CAST_INT_TO_DECIMAL -> decimalResult(x, null, rescale(x.value(), 0, bb), c);
      case ADD_DECIMAL, SUB_DECIMAL, MUL_DECIMAL -> decimalResult(x, y, exact(op, x, y), c);
      case CMP_INT, CMP_F32, CMP_F64, CMP_STRING -> compare(op, x, y, Comparison.ofCode(c));
      case AND, OR -> logic(op == Opcode.AND, x, y);
      case NOT -> unary(x, bool(isNonZero(x.value()), false));
      case IS_NULL -> new Val(x.valid() == null ? imm(0) : bool(x.valid(), false), null,
          x.error(), null);
      case IS_NOT_NULL -> new Val(x.valid() == null ? imm(1) : bool(x.valid(), true), null,
          x.error(), null);
      case SELECT -> choose(trueCondition(x), y, z, x.error());
      case COALESCE -> x.valid() == null ? withConditionError(x, x.error())
          : choose(x.valid(), x, y, x.error());
      case CAST_INT_TO_INT -> castIntToInt(x, c);
      case CAST_INT_TO_F32 -> unary(x, b.bitsOfFloat(convert("cvt.rn.f32.s64", x.value(), true)));
      case CAST_INT_TO_F64 -> unary(x, b.bitsOfDouble(convert("cvt.rn.f64.s64", x.value(), false)));
      case CAST_F32_TO_F64 -> unary(x, b.bitsOfDouble(convertFloat("cvt.f64.f32",
          b.floatOf(x.value()), false)));
      case CAST_F64_TO_F32 -> unary(x, b.bitsOfFloat(convertFloat("cvt.rn.f32.f64",
          b.doubleOf(x.value()), true)));
      case CAST_DECIMAL_TO_INT -> castDecimalToInt(x, bb, c);
      case CAST_DECIMAL_TO_F64 -> unary(x, decimalToDouble(x.value(), bb));
      case CAST_INT_TO_BOOL -> unary(x, bool(isNonZero(x.value()), true));
      case CAST_F32_TO_BOOL -> unary(x, bool(floatNonZero(b.floatOf(x.value()), true), true));
      case CAST_F64_TO_BOOL -> unary(x, bool(floatNonZero(b.doubleOf(x.value()), false), true));
      case YEAR -> unary(x, civilPart(x.value(), 0));
      case MONTH -> unary(x, civilPart(x.value(), 1));
      case DAY_OF_MONTH -> unary(x, civilPart(x.value(), 2));
      case STARTS_WITH -> binary(x, y, utf8Match(0, x, y));
      case ENDS_WITH -> binary(x, y, utf8Match(1, x, y));
      case CONTAINS -> binary(x, y, utf8Match(2, x, y));
      case LENGTH -> unary(x, utf8Length(x));
      default -> throw new IllegalStateException("registerOperands admitted " + op);
    };
  }

  // ---- loads ------------------------------------------------------------------------------------

  private Val loadStringConstant(int offset, int length) {
    String address = b.b64();
    b.op("add.s64 %s, %s, %d", address, kernel.strings(), offset);
    String len = b.b32();
    b.op("mov.b32 %s, %d", len, length);
    return new Val(address, null, null, len);
  }

  // ---- validity and errors ----------------------------------------------------------------------

  /** Both valid: null when neither can be NULL. */
  private String bothValid(Val x, Val y) {
    if (x.valid() == null) {
      return y.valid();
    }
    if (y.valid() == null) {
      return x.valid();
    }
    String p = b.pred();
    b.op("and.pred %s, %s, %s", p, x.valid(), y.valid());
    return p;
  }

  /** program.cuh FirstError: a's error when non-zero, else b's. */
  private String firstError(String ea, String eb) {
    if (ea == null) {
      return eb;
    }
    if (eb == null) {
      return ea;
    }
    String p = b.pred();
    b.op("setp.ne.s32 %s, %s, 0", p, ea);
    String e = b.b32();
    b.op("selp.b32 %s, %s, %s, %s", e, ea, eb, p);
    return e;
  }

  /**
   * program.cuh Raise where {@code condition} holds: the carried error wins over {@code error}.
   */
  private String raise(String carried, String condition, RowError error) {
    String raised = b.b32();
    b.op("selp.b32 %s, %d, 0, %s", raised, error.code(), condition);
    if (carried == null) {
      return raised;
    }
    return firstError(carried, raised);
  }

  private String andPred(String p, String q) {
    if (p == null) {
      return q;
    }
    if (q == null) {
      return p;
    }
    String r = b.pred();
    b.op("and.pred %s, %s, %s", r, p, q);
    return r;
  }

  /** A unary operation that is NULL on a NULL operand and carries its error. */
  private Val unary(Val x, String value) {
    return new Val(value, x.valid(), x.error(), null);
  }

  /** A binary operation that is NULL on a NULL operand and carries the first error. */
  private Val binary(Val x, Val y, String value) {
    return new Val(value, bothValid(x, y), firstError(x.error(), y.error()), null);
  }

  // ---- integers ---------------------------------------------------------------------------------

  /** program.cuh IntegerArithmetic. */
  private Val integerArithmetic(Opcode op, Val x, Val y, int width) {
    String valid = bothValid(x, y);
    String error = firstError(x.error(), y.error());
    String result = b.b64();
    String overflow = null;
    String x32 = b.narrow(x.value());
    String y32 = b.narrow(y.value());
    if (op == Opcode.MUL_INT && x32 != null && y32 != null) {
      // The whole product of two 32-bit values, as mul.lo.s64 of them sign-extended gives.
      b.op("mul.wide.s32 %s, %s, %s", result, x32, y32);
    } else {
      String name = op == Opcode.ADD_INT ? "add.s64"
          : op == Opcode.SUB_INT ? "sub.s64" : "mul.lo.s64";
      b.op("%s %s, %s, %s", name, result, x.value(), y.value());
    }
    if (width == 64) {
      if (ansi) {
        overflow = exactOverflows(op == Opcode.ADD_INT ? Exactly.ADD
            : op == Opcode.SUB_INT ? Exactly.SUBTRACT : Exactly.MULTIPLY, x.value(), y.value(),
            result);
      }
    } else {
      String wrapped = wrap(result, width);
      if (ansi) {
        overflow = b.pred();
        b.op("setp.ne.s64 %s, %s, %s", overflow, wrapped, result);
      }
      result = wrapped;
    }
    if (overflow != null) {
      error = raise(error, andPred(overflow, valid), RowError.ARITHMETIC_OVERFLOW);
    }
    return new Val(result, valid, error, null);
  }

  /** program.cuh Wrap: v wrapped to a width-bit two's complement integer, sign-extended. */
  private String wrap(String v, int width) {
    if (width == 64) {
      return v;
    }
    if (width == 32) {
      String low = b.b32();
      b.op("cvt.u32.u64 %s, %s", low, v);
      return b.signExtend(low);
    }
    String shifted = b.b64();
    b.op("shl.b64 %s, %s, %d", shifted, v, 64 - width);
    String r = b.b64();
    b.op("shr.s64 %s, %s, %d", r, shifted, 64 - width);
    return r;
  }

  /** NEG_INT and ABS_INT. */
  private Val negateOrAbs(boolean neg, Val x, int width) {
    String negated = b.b64();
    b.op("neg.s64 %s, %s", negated, x.value());
    negated = wrap(negated, width);
    String negate = null;
    String result = negated;
    if (!neg) {
      negate = b.pred();
      b.op("setp.lt.s64 %s, %s, 0", negate, x.value());
      result = b.b64();
      b.op("selp.b64 %s, %s, %s, %s", result, negated, x.value(), negate);
    }
    String error = x.error();
    if (ansi) {
      long minimum = width == 64 ? Long.MIN_VALUE : -(1L << (width - 1));
      String isMinimum = b.pred();
      b.op("setp.eq.s64 %s, %s, %d", isMinimum, x.value(), minimum);
      error = raise(error, andPred(andPred(isMinimum, negate), x.valid()),
          RowError.ARITHMETIC_OVERFLOW);
    }
    return new Val(result, x.valid(), error, null);
  }

  private Val castIntToInt(Val x, int width) {
    String r = wrap(x.value(), width);
    String error = x.error();
    if (ansi && width < 64) {
      String changed = b.pred();
      b.op("setp.ne.s64 %s, %s, %s", changed, r, x.value());
      error = raise(error, andPred(changed, x.valid()), RowError.CAST_OVERFLOW);
    }
    return new Val(r, x.valid(), error, null);
  }

  /** A register holding {@code value}: operands stay registers, which every instruction takes. */
  private String imm(long value) {
    String r = b.b64();
    b.op("mov.b64 %s, %d", r, value);
    return r;
  }

  private String zeroLength() {
    String r = b.b32();
    b.op("mov.b32 %s, 0", r);
    return r;
  }

  /** A .pred holding where {@code value} is non-zero; never written again. */
  private String isNonZero(String value) {
    String truth = b.truth(value);
    if (truth != null) {
      return truth;
    }
    String p = b.pred();
    b.op("setp.ne.s64 %s, %s, 0", p, value);
    return p;
  }

  /**
   * A BOOLEAN value: 1 where {@code p} holds ({@code when} true) or where it does not, else 0.
   * Its truth ({@link PtxBuilder#booleanOf}) is a copy of the predicate as it is here, since
   * some predicates are written again later (a probe's found, in a later item).
   */
  private String bool(String p, boolean when) {
    String q = b.pred();
    b.op(when ? "mov.pred %s, %s" : "not.pred %s, %s", q, p);
    return b.booleanOf(q);
  }

  private String selp(String p, String ifTrue, String ifFalse) {
    String r = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", r, ifTrue, ifFalse, p);
    return r;
  }

  private String and(String value, long mask) {
    return bitOp("and", value, mask);
  }

  private String bitOp(String op, String value, long mask) {
    String r = b.b64();
    b.op("%s.b64 %s, %s, %d", op, r, value, mask);
    return r;
  }

  private Val loadConstant(int index) {
    String value = kernel.constant(index);
    if (kernel.nonZeroConstant(index)) {
      nonZero.add(value);
    }
    return Val.of(value);
  }

  /**
   * program.cuh IntegerRemainder (REM_INT, PMOD_INT). By a constant known not to be 0 (x % 3, a
   * grouping key's bucket, say) the result is NULL only where x is: it has no zero test, and a
   * key of it can be held as not NULL.
   */
  private Val integerRemainder(boolean pmod, Val x, Val y, int width) {
    String valid = bothValid(x, y);
    String error = firstError(x.error(), y.error());
    boolean divisorNotZero = nonZero.contains(y.value());
    String zero = null;
    if (!divisorNotZero) {
      zero = b.pred();
      b.op("setp.eq.s64 %s, %s, 0", zero, y.value());
    }
    String r = javaRemainder(x.value(), y.value(), width);
    if (pmod) {
      String negative = b.pred();
      b.op("setp.lt.s64 %s, %s, 0", negative, r);
      String sum = b.b64();
      b.op("add.s64 %s, %s, %s", sum, r, y.value());
      String again = javaRemainder(wrap(sum, width), y.value(), width);
      r = selp(negative, again, r);
    }
    if (divisorNotZero) {
      return new Val(r, valid, error, null);
    }
    if (ansi) {
      error = raise(error, andPred(zero, valid), RowError.REMAINDER_BY_ZERO);
      return new Val(selp(zero, "0", r), valid, error, null);
    }
    String notZero = b.pred();
    b.op("not.pred %s, %s", notZero, zero);
    return new Val(r, andPred(valid, notZero), error, null);
  }

  /**
   * program.cuh java::Rem for n != 0: x % n truncating, MIN % -1 = 0 (rem's result for it, and
   * for n == 0, is not defined, so those are chosen around it). Operands of at most 32 bits (sign
   * extended, as every narrower integer is) use the 32-bit remainder: ptxas makes a 64-bit one a
   * call to a division routine, and values held across a call spill. Wider operands take the
   * routine only where one of them is not in [0, 2^32): the rest (a LONG key modulo a small
   * constant, say) use the unsigned 32-bit remainder, equal there, as NVVM's own PTX does for
   * CUDA C's 64-bit {@code %} (LLVM's BypassSlowDivision), which writing PTX by hand loses.
   */
  private String javaRemainder(String x, String n, int width) {
    String r = b.b64();
    if (width <= 32) {
      remainder32(r, x, n, "s");
    } else {
      String high = b.b64();
      b.op("or.b64 %s, %s, %s", high, x, n);
      b.op("shr.u64 %s, %s, 32", high, high);
      String wide = b.pred();
      b.op("setp.ne.u64 %s, %s, 0", wide, high);
      String slow = b.label("rem_wide");
      String done = b.label("rem_done");
      b.op("@%s bra %s", wide, slow);
      remainder32(r, x, n, "u");
      b.op("bra %s", done);
      b.place(slow);
      b.op("rem.s64 %s, %s, %s", r, x, n);
      b.place(done);
    }
    String minusOne = b.pred();
    b.op("setp.eq.s64 %s, %s, -1", minusOne, n);
    return selp(minusOne, "0", r);
  }

  /**
   * Into {@code r} (.b64): the 32-bit remainder of x's and n's low words, signed ({@code sign}
   * "s", sign-extended) or unsigned ("u", zero-extended).
   */
  private void remainder32(String r, String x, String n, String sign) {
    String x32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", x32, x);
    String n32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", n32, n);
    String r32 = b.b32();
    b.op("rem.%s32 %s, %s, %s", sign, r32, x32, n32);
    b.op("cvt.%s64.%s32 %s, %s", sign, sign, r, r32);
  }

  /** EQ_NULL_SAFE: both NULL is true, one NULL false, else equal as compare says. */
  private Val equalNullSafe(Val x, Val y, int kind) {
    String equal = switch (kind) {
      case 0 -> {
        String p = b.pred();
        b.op("setp.eq.s64 %s, %s, %s", p, x.value(), y.value());
        yield p;
      }
      case 1 -> sparkCompare(b.floatOf(x.value()), b.floatOf(y.value()), "f32", Comparison.EQ);
      case 2 -> sparkCompare(b.doubleOf(x.value()), b.doubleOf(y.value()), "f64", Comparison.EQ);
      default -> {
        String order = utf8Compare(x, y);
        String p = b.pred();
        b.op("setp.eq.s32 %s, %s, 0", p, order);
        yield p;
      }
    };
    String result = equal;
    if (x.valid() != null || y.valid() != null) {
      // both valid: equal; otherwise: both NULL.
      String xv = x.valid() == null ? null : x.valid();
      String yv = y.valid() == null ? null : y.valid();
      String both = andPred(xv, yv);
      String bothEqual = andPred(both, equal);
      if (xv != null && yv != null) {
        String neither = b.pred();
        b.op("or.pred %s, %s, %s", neither, xv, yv);
        b.op("not.pred %s, %s", neither, neither);
        result = orPred(bothEqual, neither);
      } else {
        result = bothEqual; // one side is never NULL: a NULL other side is unequal
      }
    }
    return new Val(bool(result, true), null, firstError(x.error(), y.error()), null);
  }

  /**
   * program.cuh CastFractionToInt: the ANSI range check on floor and ceiling in double, then
   * Java's (long) or (int) conversion (NaN 0, saturating: PTX's cvt.rzi does exactly that).
   */
  private Val castFractionToInt(Val x, String d, int width) {
    String error = x.error();
    String bad = null;
    if (ansi) {
      double max = width == 64 ? (double) Long.MAX_VALUE : (double) ((1L << (width - 1)) - 1);
      double min = width == 64 ? (double) Long.MIN_VALUE : (double) -(1L << (width - 1));
      String floor = b.f64();
      b.op("cvt.rmi.f64.f64 %s, %s", floor, d);
      String ceiling = b.f64();
      b.op("cvt.rpi.f64.f64 %s, %s", ceiling, d);
      String low = b.pred();
      b.op("setp.le.f64 %s, %s, 0d%016X", low, floor, Double.doubleToRawLongBits(max));
      String high = b.pred();
      b.op("setp.ge.f64 %s, %s, 0d%016X", high, ceiling, Double.doubleToRawLongBits(min));
      String inRange = andPred(low, high);
      bad = b.pred();
      b.op("not.pred %s, %s", bad, inRange); // NaN: out of range, as !(NaN <= max) in Java
      error = raise(error, andPred(bad, x.valid()), RowError.CAST_OVERFLOW);
    }
    // java::DoubleToLong / DoubleToInt, their checks spelled out as program.cuh does: NaN is 0,
    // values at or beyond the range's ends saturate, the rest truncate.
    boolean wide = width == 64;
    double upper = wide ? 9223372036854775808.0 : 2147483647.0;
    double lower = wide ? -9223372036854775808.0 : -2147483648.0;
    String truncated;
    if (wide) {
      truncated = b.b64();
      b.op("cvt.rzi.s64.f64 %s, %s", truncated, d);
    } else {
      String i = b.b32();
      b.op("cvt.rzi.s32.f64 %s, %s", i, d);
      truncated = b.b64();
      b.op("cvt.s64.s32 %s, %s", truncated, i);
    }
    String atUpper = b.pred();
    b.op("setp.ge.f64 %s, %s, 0d%016X", atUpper, d, Double.doubleToRawLongBits(upper));
    String atLower = b.pred();
    b.op("setp.le.f64 %s, %s, 0d%016X", atLower, d, Double.doubleToRawLongBits(lower));
    String nan = b.pred();
    b.op("setp.nan.f64 %s, %s, %s", nan, d, d);
    String saturated = selp(atUpper, Long.toString(wide ? Long.MAX_VALUE : Integer.MAX_VALUE),
        selp(atLower, Long.toString(wide ? Long.MIN_VALUE : Integer.MIN_VALUE), truncated));
    String r = wrap(selp(nan, "0", saturated), width);
    if (bad != null) {
      r = selp(bad, "0", r);
    }
    return new Val(r, x.valid(), error, null);
  }

  /**
   * IN_SET_INT: java.util.Arrays.binarySearch over constants[from, from + count), step for step
   * (so an unsorted list gives Java's answer); NULL when not found and the list held a NULL.
   */
  private Val inSet(Val x, int from, int c) {
    int count = c & 0xffff;
    boolean listHasNull = (c & 0x10000) != 0;
    String low = b.b32();
    b.op("mov.b32 %s, %d", low, from);
    String high = b.b32();
    b.op("mov.b32 %s, %d", high, from + count - 1);
    String found = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", found);
    String loop = b.label("in_set");
    String done = b.label("in_set_done");
    b.place(loop);
    String over = b.pred();
    b.op("setp.gt.s32 %s, %s, %s", over, low, high);
    b.op("@%s bra %s", over, done);
    String mid = b.b32();
    b.op("add.u32 %s, %s, %s", mid, low, high);
    b.op("shr.u32 %s, %s, 1", mid, mid);
    String mid64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", mid64, mid);
    String address = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", address, mid64, kernel.constantsBase());
    String value = b.b64();
    b.op("ld.global.nc.u64 %s, [%s]", value, address);
    String less = b.pred();
    b.op("setp.lt.s64 %s, %s, %s", less, value, x.value());
    String greater = b.pred();
    b.op("setp.gt.s64 %s, %s, %s", greater, value, x.value());
    b.op("@%s add.s32 %s, %s, 1", less, low, mid);
    b.op("@%s sub.s32 %s, %s, 1", greater, high, mid);
    String equal = b.pred();
    b.op("or.pred %s, %s, %s", equal, less, greater);
    b.op("not.pred %s, %s", equal, equal);
    b.op("@%s bra %s", equal, done + "_found");
    b.op("bra.uni %s", loop);
    b.place(done + "_found");
    b.op("setp.eq.s32 %s, 0, 0", found);
    b.place(done);
    String result = bool(found, true);
    String valid = x.valid();
    if (listHasNull) {
      valid = andPred(valid, found);
    }
    return new Val(result, valid, x.error(), null);
  }

  // ---- floating point ---------------------------------------------------------------------------

  private String convert(String instruction, String integer, boolean toFloat) {
    String r = toFloat ? b.f32() : b.f64();
    b.op("%s %s, %s", instruction, r, integer);
    return r;
  }

  private String convertFloat(String instruction, String from, boolean toFloat) {
    String r = toFloat ? b.f32() : b.f64();
    b.op("%s %s, %s", instruction, r, from);
    return r;
  }

  /**
   * program.cuh FloatArithmetic / DoubleArithmetic for +, -, * and /: IEEE round to nearest
   * (.rn: never contracted into a fused multiply-add), subnormals kept; division by zero (or
   * -0) is NULL, or DIVIDE_BY_ZERO under ANSI.
   */
  private Val floatArithmetic(Opcode op, Val x, Val y, boolean f32) {
    String valid = bothValid(x, y);
    String error = firstError(x.error(), y.error());
    String fx = b.floatingOf(x.value(), f32);
    String fy = b.floatingOf(y.value(), f32);
    String type = f32 ? "f32" : "f64";
    String r = f32 ? b.f32() : b.f64();
    String name = switch (op) {
      case ADD_F32, ADD_F64 -> "add.rn";
      case SUB_F32, SUB_F64 -> "sub.rn";
      case MUL_F32, MUL_F64 -> "mul.rn";
      default -> "div.rn";
    };
    b.op("%s.%s %s, %s, %s", name, type, r, fx, fy);
    String bits = f32 ? b.bitsOfFloat(r) : b.bitsOfDouble(r);
    if (op == Opcode.DIV_F32 || op == Opcode.DIV_F64) {
      return byNonZero(bits, valid, error, fy, f32, RowError.DIVIDE_BY_ZERO);
    }
    return new Val(bits, valid, error, null);
  }

  /**
   * program.cuh FloatArithmetic / DoubleArithmetic for % and pmod ({@link FloatRemainder});
   * by zero (or -0) NULL, or REMAINDER_BY_ZERO under ANSI.
   */
  private Val floatRemainder(boolean pmod, Val x, Val y, boolean f32) {
    String valid = bothValid(x, y);
    String error = firstError(x.error(), y.error());
    String bits = new FloatRemainder(b).emit(pmod, f32, x.value(), y.value());
    String fy = b.floatingOf(y.value(), f32);
    return byNonZero(bits, valid, error, fy, f32, RowError.REMAINDER_BY_ZERO);
  }

  /**
   * A division's or remainder's result {@code bits} where the divisor {@code fy} (a .f32 or .f64
   * register) is not zero: NULL where it is (program.cuh DivisionByZero), or {@code byZero} and
   * 0 under ANSI.
   */
  private Val byNonZero(String bits, String valid, String error, String fy, boolean f32,
      RowError byZero) {
    String zero = b.pred();
    b.op("setp.eq.%s %s, %s, %s", f32 ? "f32" : "f64", zero, fy,
        f32 ? "0f00000000" : "0d0000000000000000");
    if (ansi) {
      error = raise(error, andPred(zero, valid), byZero);
      return new Val(selp(zero, "0", bits), valid, error, null);
    }
    String nonZero = b.pred();
    b.op("not.pred %s, %s", nonZero, zero);
    return new Val(bits, andPred(valid, nonZero), error, null);
  }

  /** NORMALIZE_F32/F64: every NaN as Java's canonical NaN, -0.0 as 0.0. */
  private String normalize(String bits, boolean f32) {
    String f = b.floatingOf(bits, f32);
    String type = f32 ? "f32" : "f64";
    String nan = b.pred();
    b.op("setp.nan.%s %s, %s, %s", type, nan, f, f);
    String zero = b.pred();
    b.op("setp.eq.%s %s, %s, %s", type, zero, f, f32 ? "0f00000000" : "0d0000000000000000");
    String kept = f32 ? and(bits, F32_BITS) : bits;
    String notZero = selp(zero, "0", kept);
    return selp(nan, Long.toString(f32 ? F32_NAN : F64_NAN), notZero);
  }

  private String floatNonZero(String f, boolean f32) {
    String p = b.pred();
    // setp.neu: true for NaN too, as Java's f != 0.
    b.op("setp.neu.%s %s, %s, %s", f32 ? "f32" : "f64", p, f,
        f32 ? "0f00000000" : "0d0000000000000000");
    return p;
  }

  // ---- decimals ---------------------------------------------------------------------------------

  /** A value and whether Java's exact arithmetic succeeded (program.cuh java::Exact). */
  private record Exact(String value, String ok) {}

  private Exact exact(Opcode op, Val x, Val y) {
    Exactly how = op == Opcode.ADD_DECIMAL ? Exactly.ADD
        : op == Opcode.SUB_DECIMAL ? Exactly.SUBTRACT : Exactly.MULTIPLY;
    String r = b.b64();
    b.op("%s %s, %s, %s", how.instruction, r, x.value(), y.value());
    String ok = b.pred();
    b.op("not.pred %s, %s", ok, exactOverflows(how, x.value(), y.value(), r));
    return new Exact(r, ok);
  }

  /** Java's exact long arithmetic (Math.addExact, subtractExact, multiplyExact). */
  private enum Exactly {
    ADD("add.s64"),
    SUBTRACT("sub.s64"),
    MULTIPLY("mul.lo.s64");

    final String instruction;

    Exactly(String instruction) {
      this.instruction = instruction;
    }
  }

  /**
   * Whether the exact {@code x how y} does not fit a long, given {@code result}, the wrapped one
   * (program.cuh java::AddExact, SubtractExact, MultiplyExact): addExact overflows when
   * ((x ^ r) & (y ^ r)) < 0, subtractExact when ((x ^ y) & (x ^ r)) < 0, and a product when its
   * high half is not the sign extension of its low half. {@code y} may be an immediate.
   */
  private String exactOverflows(Exactly how, String x, String y, String result) {
    String overflow = b.pred();
    if (how == Exactly.MULTIPLY) {
      String high = b.b64();
      b.op("mul.hi.s64 %s, %s, %s", high, x, y);
      String sign = b.b64();
      b.op("shr.s64 %s, %s, 63", sign, result);
      b.op("setp.ne.s64 %s, %s, %s", overflow, high, sign);
      return overflow;
    }
    String t1 = b.b64();
    String t2 = b.b64();
    if (how == Exactly.ADD) {
      b.op("xor.b64 %s, %s, %s", t1, x, result);
      b.op("xor.b64 %s, %s, %s", t2, y, result);
    } else {
      b.op("xor.b64 %s, %s, %s", t1, x, y);
      b.op("xor.b64 %s, %s, %s", t2, x, result);
    }
    b.op("and.b64 %s, %s, %s", t1, t1, t2);
    b.op("setp.lt.s64 %s, %s, 0", overflow, t1);
    return overflow;
  }

  /** program.cuh DecimalRescale, with the scales known when the kernel is generated. */
  private Exact rescale(String v, int from, int to) {
    if (to >= from) {
      int up = to - from;
      if (up > Decimals.MAX_POW10) {
        String ok = b.pred();
        b.op("setp.eq.s64 %s, %s, 0", ok, v);
        return new Exact(imm(0), ok);
      }
      if (up == 0) {
        return new Exact(v, null);
      }
      String factor = Long.toString(Decimals.pow10(up));
      String r = b.b64();
      b.op("mul.lo.s64 %s, %s, %s", r, v, factor);
      String ok = b.pred();
      b.op("not.pred %s, %s", ok, exactOverflows(Exactly.MULTIPLY, v, factor, r));
      return new Exact(r, ok);
    }
    int down = from - to;
    if (down > Decimals.MAX_POW10) {
      return new Exact(imm(0), null);
    }
    long divisor = Decimals.pow10(down);
    String q = b.b64();
    b.op("div.s64 %s, %s, %d", q, v, divisor);
    String r = b.b64();
    b.op("rem.s64 %s, %s, %d", r, v, divisor);
    String magnitude = b.b64();
    b.op("abs.s64 %s, %s", magnitude, r);
    String twice = b.b64();
    b.op("shl.b64 %s, %s, 1", twice, magnitude);
    String roundAway = b.pred();
    b.op("setp.ge.s64 %s, %s, %d", roundAway, twice, divisor);
    String negative = b.pred();
    b.op("setp.lt.s64 %s, %s, 0", negative, v);
    String step = b.b64();
    b.op("selp.b64 %s, -1, 1, %s", step, negative);
    String rounded = b.b64();
    b.op("add.s64 %s, %s, %s", rounded, q, step);
    return new Exact(selp(roundAway, rounded, q), null);
  }

  /** program.cuh DecimalResult: the value if it fits the precision, else NULL or an error. */
  private Val decimalResult(Val x, Val y, Exact result, int precision) {
    String valid = y == null ? x.valid() : bothValid(x, y);
    String error = y == null ? x.error() : firstError(x.error(), y.error());
    String good = result.ok();
    if (precision < ALWAYS_FITS_PRECISION) {
      long bound = Decimals.pow10(precision);
      String below = b.pred();
      b.op("setp.lt.s64 %s, %s, %d", below, result.value(), bound);
      String above = b.pred();
      b.op("setp.gt.s64 %s, %s, %d", above, result.value(), -bound);
      good = andPred(good, andPred(below, above));
    }
    if (good == null) {
      return new Val(result.value(), valid, error, null);
    }
    if (ansi) {
      String bad = b.pred();
      b.op("not.pred %s, %s", bad, good);
      error = raise(error, andPred(bad, valid), RowError.DECIMAL_OVERFLOW);
      return new Val(selp(good, result.value(), "0"), valid, error, null);
    }
    return new Val(result.value(), andPred(valid, good), error, null);
  }

  private Val castDecimalToInt(Val x, int scale, int width) {
    String truncated = x.value();
    if (scale > 0) {
      truncated = b.b64();
      b.op("div.s64 %s, %s, %d", truncated, x.value(), Decimals.pow10(scale));
    }
    String r = wrap(truncated, width);
    String error = x.error();
    if (ansi && width < 64) {
      String changed = b.pred();
      b.op("setp.ne.s64 %s, %s, %s", changed, r, truncated);
      error = raise(error, andPred(changed, x.valid()), RowError.CAST_OVERFLOW);
    }
    return new Val(r, x.valid(), error, null);
  }

  private String decimalToDouble(String v, int scale) {
    String d = b.f64();
    b.op("cvt.rn.f64.s64 %s, %s", d, v);
    // (double) 10^scale, rounded to nearest as __ll2double_rn rounds it.
    String divisor = b.f64();
    b.op("mov.f64 %s, 0d%016X", divisor, Double.doubleToRawLongBits(Decimals.pow10(scale)));
    String q = b.f64();
    b.op("div.rn.f64 %s, %s, %s", q, d, divisor);
    return b.bitsOfDouble(q);
  }

  // ---- comparisons and logic --------------------------------------------------------------------

  private Val compare(Opcode op, Val x, Val y, Comparison comparison) {
    String holds = switch (op) {
      case CMP_INT -> {
        String p = b.pred();
        String x32 = b.narrow(x.value());
        String y32 = b.narrow(y.value());
        if (x32 != null && y32 != null) {
          b.op("setp.%s.s32 %s, %s, %s", ptx(comparison), p, x32, y32);
        } else {
          b.op("setp.%s.s64 %s, %s, %s", ptx(comparison), p, x.value(), y.value());
        }
        yield p;
      }
      case CMP_F32 -> sparkCompare(b.floatOf(x.value()), b.floatOf(y.value()), "f32", comparison);
      case CMP_F64 -> sparkCompare(b.doubleOf(x.value()), b.doubleOf(y.value()), "f64", comparison);
      default -> {
        String order = utf8Compare(x, y);
        String p = b.pred();
        b.op("setp.%s.s32 %s, %s, 0", ptx(comparison), p, order);
        yield p;
      }
    };
    return binary(x, y, bool(holds, true));
  }

  private static String ptx(Comparison comparison) {
    return switch (comparison) {
      case EQ -> "eq";
      case LT -> "lt";
      case LE -> "le";
      case GT -> "gt";
      case GE -> "ge";
    };
  }

  /**
   * program.cuh SparkCompare then Holds: NaN is larger than every other value and equal to
   * itself; -0.0 equals 0.0 (the ordered IEEE comparisons already say so).
   */
  private String sparkCompare(String fx, String fy, String type, Comparison comparison) {
    String xNan = b.pred();
    b.op("setp.nan.%s %s, %s, %s", type, xNan, fx, fx);
    String yNan = b.pred();
    b.op("setp.nan.%s %s, %s, %s", type, yNan, fy, fy);
    String less = null;
    String greater = null;
    String equal = null;
    if (comparison != Comparison.GT && comparison != Comparison.EQ) {
      // x < y, or x a number and y NaN.
      less = b.pred();
      b.op("setp.lt.%s %s, %s, %s", type, less, fx, fy);
      less = orNotAnd(less, xNan, yNan);
    }
    if (comparison != Comparison.LT && comparison != Comparison.EQ) {
      greater = b.pred();
      b.op("setp.gt.%s %s, %s, %s", type, greater, fx, fy);
      greater = orNotAnd(greater, yNan, xNan);
    }
    if (comparison == Comparison.EQ || comparison == Comparison.LE
        || comparison == Comparison.GE) {
      equal = b.pred();
      b.op("setp.eq.%s %s, %s, %s", type, equal, fx, fy);
      String bothNan = b.pred();
      b.op("and.pred %s, %s, %s", bothNan, xNan, yNan);
      b.op("or.pred %s, %s, %s", equal, equal, bothNan);
    }
    return switch (comparison) {
      case EQ -> equal;
      case LT -> less;
      case GT -> greater;
      case LE -> orPred(less, equal);
      case GE -> orPred(greater, equal);
    };
  }

  /** {@code ordered || (!notNan && nan)}: the ordered result, or one side NaN and not the other. */
  private String orNotAnd(String ordered, String notNan, String nan) {
    String notFirst = b.pred();
    b.op("not.pred %s, %s", notFirst, notNan);
    String onlySecond = b.pred();
    b.op("and.pred %s, %s, %s", onlySecond, notFirst, nan);
    String r = b.pred();
    b.op("or.pred %s, %s, %s", r, ordered, onlySecond);
    return r;
  }

  private String orPred(String p, String q) {
    String r = b.pred();
    b.op("or.pred %s, %s, %s", r, p, q);
    return r;
  }

  /** program.cuh Logic: AND stops at a false left side, OR at a true one. */
  private Val logic(boolean isAnd, Val x, Val y) {
    long stop = isAnd ? 0 : 1;
    String aStop = stops(x, stop);
    String bStop = stops(y, stop);
    String anyStop = orPred(aStop, bStop);
    String value = bool(anyStop, !isAnd);
    String valid = bothValid(x, y);
    if (valid != null) {
      valid = orPred(anyStop, valid);
    }
    String error = null;
    if (x.error() != null || y.error() != null) {
      String first = firstError(x.error(), y.error());
      String ea = x.error() == null ? "0" : x.error();
      error = b.b32();
      b.op("selp.b32 %s, %s, %s, %s", error, ea, first, aStop);
    }
    return new Val(value, valid, error, null);
  }

  /**
   * A .pred that holds where AND's left operand {@code x} decides it: false and valid. {@link
   * #logic} then reads nothing of the right operand (its value, validity nor error), so a kernel
   * may leave the right operand's own instructions out there.
   */
  String andStops(Val x) {
    return stops(x, 0);
  }

  /**
   * A .pred that holds where SELECT(keep, condition, false)'s {@code keep} decides it: not valid
   * and true. {@link #choose} then takes the constant, and nothing of the condition. (Also where
   * an AND's left operand decides whether a filter keeps the row: ProgramEmitter's keepOnly.)
   */
  String selectStops(Val keep) {
    String p = b.pred();
    b.op("not.pred %s, %s", p, trueCondition(keep));
    return p;
  }

  /** Where {@code x} is valid and equal to {@code stop} (AND's 0, OR's 1). */
  private String stops(Val x, long stop) {
    String truth = b.truth(x.value());
    String p;
    if (truth == null) {
      p = b.pred();
      b.op("setp.eq.s64 %s, %s, %d", p, x.value(), stop);
    } else if (stop == 0) {
      p = b.pred();
      b.op("not.pred %s, %s", p, truth);
    } else {
      p = truth;
    }
    return andPred(p, x.valid());
  }

  /** SELECT's condition: valid and non-zero. */
  private String trueCondition(Val x) {
    return andPred(isNonZero(x.value()), x.valid());
  }

  /**
   * program.cuh CopyChosen: {@code ifTrue} or {@code ifFalse} whole (value, length, validity),
   * with the condition's error in front of the chosen one's.
   */
  private Val choose(String condition, Val ifTrue, Val ifFalse, String conditionError) {
    String value;
    String truth = b.truth(ifTrue.value());
    if (truth != null && ifFalse.value().equals(FALSE)) {
      // A conjunction (ProgramEmitter's SELECT(keep, condition, false)): BOOLEAN too.
      value = b.booleanOf(andPred(condition, truth));
    } else {
      value = selp(condition, ifTrue.value(), ifFalse.value());
    }
    String valid = null;
    if (ifTrue.valid() != null || ifFalse.valid() != null) {
      // (condition && trueValid) || (!condition && falseValid): selp has no predicate form.
      valid = b.pred();
      String takeTrue = andPredOrConstant(condition, ifTrue.valid());
      String notCondition = b.pred();
      b.op("not.pred %s, %s", notCondition, condition);
      String takeFalse = andPredOrConstant(notCondition, ifFalse.valid());
      b.op("or.pred %s, %s, %s", valid, takeTrue, takeFalse);
    }
    String length = null;
    if (ifTrue.length() != null || ifFalse.length() != null) {
      length = b.b32();
      b.op("selp.b32 %s, %s, %s, %s", length, ifTrue.length() == null ? "0" : ifTrue.length(),
          ifFalse.length() == null ? "0" : ifFalse.length(), condition);
    }
    String chosenError = null;
    if (ifTrue.error() != null || ifFalse.error() != null) {
      chosenError = b.b32();
      b.op("selp.b32 %s, %s, %s, %s", chosenError,
          ifTrue.error() == null ? "0" : ifTrue.error(),
          ifFalse.error() == null ? "0" : ifFalse.error(), condition);
    }
    return new Val(value, valid, firstError(conditionError, chosenError), length);
  }

  /** {@code condition && valid}, where a null {@code valid} means always valid. */
  private String andPredOrConstant(String condition, String valid) {
    return valid == null ? condition : andPred(condition, valid);
  }

  private Val withConditionError(Val chosen, String conditionError) {
    return new Val(chosen.value(), chosen.valid(), firstError(conditionError, chosen.error()),
        chosen.length());
  }

  // ---- prelude calls ----------------------------------------------------------------------------

  private String utf8Compare(Val x, Val y) {
    String r = b.b32();
    PreludeCall.call(b, "tessera_utf8_compare", List.of(r), List.of(
        PreludeCall.b64(x.value()), PreludeCall.b32(x.length()), PreludeCall.b64(y.value()),
        PreludeCall.b32(y.length())));
    return r;
  }

  private String utf8Match(int kind, Val s, Val p) {
    String r = b.b32();
    PreludeCall.call(b, "tessera_utf8_match", List.of(r), List.of(PreludeCall.b32(
        Integer.toString(kind)), PreludeCall.b64(s.value()), PreludeCall.b32(s.length()),
        PreludeCall.b64(p.value()), PreludeCall.b32(p.length())));
    return b.signExtend(r);
  }

  private String utf8Length(Val s) {
    String r = b.b32();
    PreludeCall.call(b, "tessera_utf8_length", List.of(r), List.of(PreludeCall.b64(s.value()),
        PreludeCall.b32(s.length())));
    return b.signExtend(r);
  }

  private String civilPart(String days, int part) {
    String r = b.b32();
    PreludeCall.call(b, "tessera_civil_part", List.of(r), List.of(PreludeCall.b64(days),
        PreludeCall.b32(Integer.toString(part))));
    return b.signExtend(r);
  }
}
