package dev.tessera.spark.expr;

import org.apache.spark.sql.catalyst.expressions.Expression;

/**
 * An expression that keeps its operator on the CPU, and why.
 *
 * @param name the expression's class, e.g. "Year"
 * @param sql the expression as SQL, e.g. "year(d)"
 * @param reason why it cannot run on the GPU, a sentence for the user
 */
public record ExpressionBlocker(String name, String sql, String reason) {
  ExpressionBlocker(Expression e, String reason) {
    this(e.getClass().getSimpleName(), e.sql(), reason);
  }

  /** The blocker as one sentence, for the reasons stored on a plan node. */
  @Override
  public String toString() {
    return "the expression " + sql + ": " + reason;
  }
}
