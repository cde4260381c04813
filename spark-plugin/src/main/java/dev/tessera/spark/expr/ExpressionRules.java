package dev.tessera.spark.expr;

import dev.tessera.gpu.expr.Opcode;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Abs;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Contains;
import org.apache.spark.sql.catalyst.expressions.DayOfMonth;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EndsWith;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.KnownFloatingPointNormalized;
import org.apache.spark.sql.catalyst.expressions.Length;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Month;
import org.apache.spark.sql.catalyst.expressions.Multiply;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.Pmod;
import org.apache.spark.sql.catalyst.expressions.Remainder;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.catalyst.expressions.Subtract;
import org.apache.spark.sql.catalyst.expressions.UnaryMinus;
import org.apache.spark.sql.catalyst.expressions.UnscaledValue;
import org.apache.spark.sql.catalyst.expressions.Year;
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero;

/**
 * The Catalyst expressions Tessera compiles into GPU programs, keyed by class: for each, what it
 * computes and how {@link ExpressionCompiler} translates it. This is the one list of supported
 * expressions: the enable switches ({@code spark.tessera.expression.<Name>.enabled}), the settings
 * page and the supported-operators list come from it, and an expression whose class is not here
 * keeps its operator on the CPU.
 */
public final class ExpressionRules {
  /** How one expression class compiles: into the compiler's program, or Unsupported. */
  @FunctionalInterface
  public interface Translation<E extends Expression> {
    ExpressionCompiler.Value compile(ExpressionCompiler compiler, E expression)
        throws Unsupported;
  }

  /**
   * One supported expression.
   *
   * @param type the Catalyst class
   * @param description what it computes, e.g. "a + b"
   */
  public record Rule<E extends Expression>(Class<E> type, String description,
      Translation<E> translation) {
    /** The expression's name in settings and explain: its class's simple name. */
    public String name() {
      return type.getSimpleName();
    }

    ExpressionCompiler.Value compile(ExpressionCompiler compiler, Expression e)
        throws Unsupported {
      return translation.compile(compiler, type.cast(e));
    }
  }

  private static final Map<Class<?>, Rule<?>> RULES = rules(
      rule(AttributeReference.class, "a column reference", ExpressionCompiler::attribute),
      rule(Alias.class, "a name for a value (AS)", (c, a) -> c.compile(a.child())),
      rule(Literal.class, "a constant", (c, l) -> c.literal(l.value(), l.dataType())),
      rule(Add.class, "a + b", ExpressionCompiler::arithmetic),
      rule(Subtract.class, "a - b", ExpressionCompiler::arithmetic),
      rule(Multiply.class, "a * b", ExpressionCompiler::arithmetic),
      rule(Divide.class, "a / b", ExpressionCompiler::arithmetic),
      rule(Remainder.class, "a % b", ExpressionCompiler::arithmetic),
      rule(Pmod.class, "pmod(a, b)", ExpressionCompiler::arithmetic),
      rule(UnaryMinus.class, "-a", (c, m) -> c.negateOrAbs(m.child(), m.failOnError(), true)),
      rule(Abs.class, "abs(a)", (c, a) -> c.negateOrAbs(a.child(), a.failOnError(), false)),
      rule(EqualTo.class, "a = b", ExpressionCompiler::comparison),
      rule(EqualNullSafe.class, "a <=> b", ExpressionCompiler::nullSafeEquality),
      rule(LessThan.class, "a < b", ExpressionCompiler::comparison),
      rule(LessThanOrEqual.class, "a <= b", ExpressionCompiler::comparison),
      rule(GreaterThan.class, "a > b", ExpressionCompiler::comparison),
      rule(GreaterThanOrEqual.class, "a >= b", ExpressionCompiler::comparison),
      rule(And.class, "a AND b", (c, a) -> c.logic(Opcode.AND, a.left(), a.right())),
      rule(Or.class, "a OR b", (c, o) -> c.logic(Opcode.OR, o.left(), o.right())),
      rule(Not.class, "NOT a", (c, n) -> c.predicate(Opcode.NOT, n.child())),
      rule(IsNull.class, "a IS NULL", (c, n) -> c.predicate(Opcode.IS_NULL, n.child())),
      rule(IsNotNull.class, "a IS NOT NULL",
          (c, n) -> c.predicate(Opcode.IS_NOT_NULL, n.child())),
      rule(In.class, "a IN (list)", ExpressionCompiler::in),
      rule(InSet.class, "a IN (long constant list)", ExpressionCompiler::inSet),
      rule(CaseWhen.class, "CASE WHEN ... END", ExpressionCompiler::caseWhen),
      rule(If.class, "if(cond, a, b)", ExpressionCompiler::ifThenElse),
      rule(Coalesce.class, "coalesce(a, b, ...)", ExpressionCompiler::coalesce),
      rule(Cast.class, "CAST(a AS type)", (c, cast) -> Casts.compile(c, cast, c.ansi())),
      rule(Year.class, "year(date)", (c, y) -> c.unary(Opcode.YEAR, y.child(), y.dataType())),
      rule(Month.class, "month(date)",
          (c, m) -> c.unary(Opcode.MONTH, m.child(), m.dataType())),
      rule(DayOfMonth.class, "dayofmonth(date)",
          (c, d) -> c.unary(Opcode.DAY_OF_MONTH, d.child(), d.dataType())),
      rule(StartsWith.class, "startswith(s, prefix) or s LIKE 'prefix%'",
          (c, s) -> c.logic(Opcode.STARTS_WITH, s.left(), s.right())),
      rule(EndsWith.class, "endswith(s, suffix) or s LIKE '%suffix'",
          (c, s) -> c.logic(Opcode.ENDS_WITH, s.left(), s.right())),
      rule(Contains.class, "contains(s, part) or s LIKE '%part%'",
          (c, s) -> c.logic(Opcode.CONTAINS, s.left(), s.right())),
      rule(Length.class, "length(s)", ExpressionCompiler::length),
      rule(NormalizeNaNAndZero.class, "one NaN and no -0.0 in floating point grouping keys",
          ExpressionCompiler::normalize),
      rule(KnownFloatingPointNormalized.class, "marks normalized floating point keys",
          (c, k) -> c.compile(k.child())), // a tag only: the child normalizes
      rule(UnscaledValue.class,
          "a decimal's unscaled value (Spark sums and averages small decimals so)",
          // A decimal register holds the unscaled value already: only the type changes.
          (c, u) -> new ExpressionCompiler.Value(c.compile(u.child()).register(),
              u.dataType())));

  private ExpressionRules() {}

  /** Every supported expression, in the order of the settings page. */
  public static List<Rule<?>> all() {
    return List.copyOf(RULES.values());
  }

  /** The rule for {@code e}'s class, or null when Tessera has no GPU version of it. */
  public static Rule<?> of(Expression e) {
    return RULES.get(e.getClass());
  }

  private static <E extends Expression> Rule<E> rule(Class<E> type, String description,
      Translation<E> translation) {
    return new Rule<>(type, description, translation);
  }

  private static Map<Class<?>, Rule<?>> rules(Rule<?>... rules) {
    Map<Class<?>, Rule<?>> byClass = new LinkedHashMap<>();
    for (Rule<?> r : rules) {
      if (byClass.put(r.type(), r) != null) {
        throw new IllegalStateException("two expression rules for " + r.name());
      }
    }
    return Collections.unmodifiableMap(byClass);
  }
}
