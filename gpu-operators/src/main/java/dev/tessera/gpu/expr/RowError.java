package dev.tessera.gpu.expr;

/** Errors an expression raises for a row under ANSI mode; the codes are shared with the kernels. */
public enum RowError {
  NONE(0),
  /** Integer arithmetic overflowed (Spark: ARITHMETIC_OVERFLOW). */
  ARITHMETIC_OVERFLOW(1),
  /** Division by zero (Spark: DIVIDE_BY_ZERO). */
  DIVIDE_BY_ZERO(2),
  /** A cast's value does not fit the target type (Spark: CAST_OVERFLOW). */
  CAST_OVERFLOW(3),
  /** A decimal result does not fit its precision (Spark: NUMERIC_VALUE_OUT_OF_RANGE). */
  DECIMAL_OVERFLOW(4),
  /** Remainder or pmod by zero (Spark: REMAINDER_BY_ZERO). */
  REMAINDER_BY_ZERO(5);

  private final int code;

  RowError(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  public static RowError ofCode(int code) {
    for (RowError e : values()) {
      if (e.code == code) {
        return e;
      }
    }
    throw new IllegalArgumentException("no row error " + code);
  }
}
