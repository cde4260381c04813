package dev.tessera.gpu.expr;

/** The comparison an instruction's {@code c} operand names (CMP_* opcodes). */
public enum Comparison {
  EQ(0),
  LT(1),
  LE(2),
  GT(3),
  GE(4);

  private final int code;

  Comparison(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  public static Comparison ofCode(int code) {
    return values()[code];
  }

  /** Whether a three-way comparison result (-1, 0, 1) satisfies this comparison. */
  public boolean holds(int order) {
    return switch (this) {
      case EQ -> order == 0;
      case LT -> order < 0;
      case LE -> order <= 0;
      case GT -> order > 0;
      case GE -> order >= 0;
    };
  }
}
