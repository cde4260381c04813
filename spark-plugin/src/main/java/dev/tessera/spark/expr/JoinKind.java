package dev.tessera.spark.expr;

/** A broadcast hash join as its stream side sees it. */
public enum JoinKind {
  INNER, LEFT_OUTER, LEFT_SEMI, LEFT_ANTI;

  /**
   * Whether the join needs only whether a match exists (semi and anti joins): repeated build keys
   * never change its output.
   */
  public boolean matchOnly() {
    return this == LEFT_SEMI || this == LEFT_ANTI;
  }
}
