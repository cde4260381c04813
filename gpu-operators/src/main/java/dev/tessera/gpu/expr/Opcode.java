package dev.tessera.gpu.expr;

/**
 * The instructions of an expression {@link Program}: the one definition both backends interpret
 * (the host reference in {@code HostInterpreter}, CUDA in
 * native-kernels/include/tessera/program.cuh, whose numbers must match these codes).
 *
 * <p>An instruction is five int32 words: {@code op, dst, a, b, c}. {@code dst} is always a
 * register; what {@code a}, {@code b} and {@code c} mean is said per opcode below ("reg" operands
 * are register numbers, the others are immediates). A register holds a 64-bit value, a 32-bit
 * length (strings only), a valid bit (false = SQL NULL) and an error code (0 = none; see {@link
 * RowError}).
 *
 * <p>Value kinds in registers:
 * <ul>
 *   <li>INT: a signed 64-bit integer. Booleans (0/1), bytes, shorts, ints, longs, dates (days),
 *       timestamps (microseconds) and decimals (unscaled values) are all INT.
 *   <li>F32: a float's raw bits in the low 32 bits. F64: a double's raw bits.
 *   <li>STR: the address of the first UTF-8 byte, with the byte length beside it.
 * </ul>
 *
 * <p>Nulls: unless said otherwise, a result is null when any register operand is null, and then
 * its value is 0. Errors: unless said otherwise, a result carries the first non-zero error code of
 * its register operands (a then b then c), or the error the instruction itself raises. An error
 * code in a row the filter keeps (or in any row without a filter) fails the whole batch.
 * "ANSI" below is the program's {@link Program#ansi()} flag: Spark's spark.sql.ansi.enabled.
 */
public enum Opcode {
  // ---- loads ---------------------------------------------------------------------------------
  /** dst = input column {@code a} at the current row (converted to its register kind). */
  LOAD_COLUMN(1),
  /** dst = constants[{@code a}] (an INT, F32 or F64 bit pattern), valid. */
  LOAD_CONST(2),
  /** dst = NULL. */
  LOAD_NULL(3),
  /** dst = STR of string-pool bytes [{@code a}, {@code a + b}), valid. */
  LOAD_STRING_CONST(4),
  /** dst = register {@code a} (value, length, validity and error). */
  MOVE(5),

  // ---- integer arithmetic; c = result width in bits (8, 16, 32 or 64) ---------------------------
  /**
   * dst = a + b, wrapped to c bits and sign-extended; on overflow, ANSI raises
   * ARITHMETIC_OVERFLOW.
   */
  ADD_INT(10),
  /** dst = a - b, as ADD_INT. */
  SUB_INT(11),
  /** dst = a * b, as ADD_INT. */
  MUL_INT(12),
  /**
   * dst = a % b (sign of a, as Java); b == 0: NULL, or REMAINDER_BY_ZERO under ANSI. MIN % -1 =
   * 0.
   */
  REM_INT(13),
  /** dst = pmod(a, b) = ((a % b) + b) % b when a % b < 0, else a % b; b == 0 as REM_INT. */
  PMOD_INT(14),
  /** dst = -a wrapped to c bits; ANSI: ARITHMETIC_OVERFLOW for the minimum value. */
  NEG_INT(15),
  /** dst = |a| wrapped to c bits; ANSI: ARITHMETIC_OVERFLOW for the minimum value. */
  ABS_INT(16),

  // ---- floating point (IEEE, as Java) -----------------------------------------------------------
  ADD_F32(20),
  ADD_F64(21),
  SUB_F32(22),
  SUB_F64(23),
  MUL_F32(24),
  MUL_F64(25),
  /** dst = a / b; b == 0 (or -0): NULL, or DIVIDE_BY_ZERO under ANSI (Spark's Divide). */
  DIV_F32(26),
  DIV_F64(27),
  /** dst = a % b (C fmod, which is Java's %); b == 0: NULL, or REMAINDER_BY_ZERO under ANSI. */
  REM_F32(28),
  REM_F64(29),
  /** dst = pmod(a, b) as PMOD_INT but in floating point; b == 0 as REM. */
  PMOD_F32(30),
  PMOD_F64(31),
  NEG_F32(32),
  NEG_F64(33),
  ABS_F32(34),
  ABS_F64(35),
  /**
   * dst = a with every NaN made the one canonical NaN and -0.0 made 0.0 (Spark's grouping keys).
   */
  NORMALIZE_F32(36),
  NORMALIZE_F64(37),

  // ---- decimals: INT unscaled values ------------------------------------------------------------
  /**
   * dst = a rescaled from scale (b >> 8) to scale (b & 0xff), rounding HALF_UP when the scale
   * shrinks; then checked against precision c: |dst| >= 10^c is NULL, or DECIMAL_OVERFLOW under
   * ANSI. (b is an immediate here.)
   */
  RESCALE_DECIMAL(40),
  /** dst = a + b (same scale), checked against precision c as RESCALE_DECIMAL. */
  ADD_DECIMAL(41),
  /** dst = a - b (same scale), checked against precision c. */
  SUB_DECIMAL(42),
  /** dst = a * b (result scale is the sum of the scales), checked against precision c. */
  MUL_DECIMAL(43),

  // ---- comparisons: dst = INT 0/1; c = a {@link Comparison} code --------------------------------
  CMP_INT(50),
  /** Spark's float order: -0.0 = 0.0, NaN = NaN, NaN greater than every other value. */
  CMP_F32(51),
  CMP_F64(52),
  /** Unsigned byte-wise lexicographic order of UTF-8 bytes. */
  CMP_STRING(53),
  /**
   * dst = a <=> b: true when both are NULL, false when one is, else a = b compared as kind c
   * (0 INT, 1 F32, 2 F64, 3 STR). Never NULL.
   */
  EQ_NULL_SAFE(54),

  // ---- logic: SQL three-valued -----------------------------------------------------------------
  /**
   * dst = a AND b. false if either is false (valid); else NULL if either is NULL; else true. Error
   * of b counts only when a is not false (Spark does not evaluate b then).
   */
  AND(60),
  /**
   * dst = a OR b. true if either is true; else NULL if either is NULL; else false. Error of b
   * counts only when a is not true.
   */
  OR(61),
  /** dst = NOT a. */
  NOT(62),
  /** dst = a IS NULL (never NULL; a's error is kept, as Spark evaluates a). */
  IS_NULL(63),
  /** dst = a IS NOT NULL (never NULL). */
  IS_NOT_NULL(64),

  // ---- choice -----------------------------------------------------------------------------------
  /**
   * dst = (a is valid and true) ? b : c, where a, b and c are registers. Error: a's, then the
   * chosen branch's only.
   */
  SELECT(70),
  /** dst = a if a is not NULL, else b (registers). Error: a's, then b's only if b is chosen. */
  COALESCE(71),

  // ---- casts ---------------------------------------------------------------------------------
  /** INT to c-bit integer: wraps; ANSI: CAST_OVERFLOW when the value does not fit. */
  CAST_INT_TO_INT(80),
  CAST_INT_TO_F32(81),
  CAST_INT_TO_F64(82),
  /**
   * F32 to c-bit integer. Not ANSI: NaN is 0, values beyond int32 (c <= 32) or int64 (c = 64)
   * saturate, then narrower widths wrap (Scala's toByte/toShort). ANSI: CAST_OVERFLOW when
   * floor/ceil of the value is outside the c-bit range, or it is NaN.
   */
  CAST_F32_TO_INT(83),
  CAST_F64_TO_INT(84),
  CAST_F32_TO_F64(85),
  CAST_F64_TO_F32(86),
  /** INT to decimal of scale b and precision c: a * 10^b, checked as RESCALE_DECIMAL. */
  CAST_INT_TO_DECIMAL(87),
  /**
   * Decimal of scale b to c-bit integer: truncates toward zero; not ANSI: wraps (Spark's
   * toLong.toInt); ANSI: CAST_OVERFLOW when it does not fit.
   */
  CAST_DECIMAL_TO_INT(88),
  /** Decimal of scale b (precision at most 15) to F64: (double) a / 10^b, exactly rounded. */
  CAST_DECIMAL_TO_F64(89),
  /** INT to boolean: a != 0. */
  CAST_INT_TO_BOOL(90),
  /** F32 to boolean: a != 0 (NaN is true, as Java's d != 0). */
  CAST_F32_TO_BOOL(91),
  CAST_F64_TO_BOOL(92),

  // ---- dates (INT days since 1970-01-01, proleptic Gregorian) ----------------------------------
  YEAR(100),
  MONTH(101),
  DAY_OF_MONTH(102),

  // ---- strings -------------------------------------------------------------------------------
  /** dst = a starts with b (bytes). */
  STARTS_WITH(110),
  ENDS_WITH(111),
  CONTAINS(112),
  /** dst = number of characters of a (UTF-8 bytes that are not continuation bytes). */
  LENGTH(113),

  // ---- sets ----------------------------------------------------------------------------------
  /**
   * dst = a IN (constants[b], ..., constants[b + (c & 0xffff) - 1]), INT constants sorted
   * ascending. Not found: false, or NULL when bit 16 of c says the list held a NULL.
   */
  IN_SET_INT(120),

  // ---- hash join probes (Program.tables(): the join tables the program reads) ---------------
  /**
   * dst = INT, the build row of join table {@code a} whose keys equal the registers listed in
   * constants[{@code b} .. {@code b + c}) (register numbers, one per key column of the table, in
   * order; INT keys compare as 64-bit integers, STR keys by bytes). With repeated keys, the
   * smallest such build row. NULL when any key register is NULL or no build row matches. Never
   * an error of its own.
   */
  PROBE(130),
  /**
   * dst = payload column {@code c} of join table {@code a} at the build row in register {@code b}
   * (converted to its register kind as LOAD_COLUMN does); NULL when b is NULL or the payload
   * value is NULL.
   */
  LOAD_BUILD(131);

  private final int code;

  Opcode(int code) {
    this.code = code;
  }

  /** The number in the instruction stream (and in program.cuh). */
  public int code() {
    return code;
  }

  /**
   * Whether this instruction never raises an error of its own (it still carries its operands'):
   * the opcodes whose description above names no error, even under ANSI. Any other opcode may
   * raise one, so a kernel must run it wherever Spark evaluates it; an instruction of these may be
   * left out where its value cannot change the result.
   */
  public boolean raisesNoErrorOfItsOwn() {
    return switch (this) {
      case LOAD_COLUMN, LOAD_CONST, LOAD_NULL, LOAD_STRING_CONST, MOVE, ADD_F32, ADD_F64, SUB_F32,
          SUB_F64, MUL_F32, MUL_F64, NEG_F32, NEG_F64, ABS_F32, ABS_F64, NORMALIZE_F32,
          NORMALIZE_F64, CMP_INT, CMP_F32, CMP_F64, CMP_STRING, EQ_NULL_SAFE, AND, OR, NOT,
          IS_NULL, IS_NOT_NULL, SELECT, COALESCE, CAST_INT_TO_F32, CAST_INT_TO_F64,
          CAST_F32_TO_F64, CAST_F64_TO_F32, CAST_DECIMAL_TO_F64, CAST_INT_TO_BOOL,
          CAST_F32_TO_BOOL, CAST_F64_TO_BOOL, YEAR, MONTH, DAY_OF_MONTH, STARTS_WITH, ENDS_WITH,
          CONTAINS, LENGTH, IN_SET_INT, PROBE, LOAD_BUILD -> true;
      default -> false;
    };
  }

  private static final Opcode[] BY_CODE = new Opcode[132];

  static {
    for (Opcode op : values()) {
      BY_CODE[op.code] = op;
    }
  }

  public static Opcode ofCode(int code) {
    Opcode op = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    if (op == null) {
      throw new IllegalArgumentException("no opcode " + code);
    }
    return op;
  }
}
