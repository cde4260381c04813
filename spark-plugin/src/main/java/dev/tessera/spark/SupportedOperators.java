package dev.tessera.spark;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Spark execs and Catalyst expressions Tessera may put on the GPU, by simple class name, with
 * a few words on what each is. This is the one list: {@link TesseraConf} makes an enable switch
 * for each ({@code spark.tessera.exec.<Name>.enabled}, {@code spark.tessera.expression.<Name>
 * .enabled}) and docs/configs.md lists them. The rewrite code may also register further names at
 * run time with {@link TesseraConf#registerExec} and {@link TesseraConf#registerExpression}; to
 * have them in the docs, add them here.
 */
final class SupportedOperators {
  private SupportedOperators() {}

  /** Exec simple class name -> what it does in a query. */
  static final Map<String, String> EXECS = ordered(
      "FilterExec", "WHERE and HAVING conditions",
      "ProjectExec", "SELECT lists: computed columns",
      "HashAggregateExec", "GROUP BY and global aggregates: count, count(DISTINCT), sum and avg"
          + " of integers and decimals, min, max",
      "BroadcastHashJoinExec", "joins with a broadcast side: inner, left/right outer, left semi"
          + " and anti, on integral, date, decimal and string keys");

  /** Expression simple class name -> what it computes. */
  static final Map<String, String> EXPRESSIONS = ordered(
      "AttributeReference", "a column reference",
      "Literal", "a constant",
      "Add", "a + b",
      "Subtract", "a - b",
      "Multiply", "a * b",
      "Divide", "a / b",
      "Remainder", "a % b",
      "Pmod", "pmod(a, b)",
      "UnaryMinus", "-a",
      "Abs", "abs(a)",
      "EqualTo", "a = b",
      "EqualNullSafe", "a <=> b",
      "LessThan", "a < b",
      "LessThanOrEqual", "a <= b",
      "GreaterThan", "a > b",
      "GreaterThanOrEqual", "a >= b",
      "And", "a AND b",
      "Or", "a OR b",
      "Not", "NOT a",
      "IsNull", "a IS NULL",
      "IsNotNull", "a IS NOT NULL",
      "In", "a IN (list)",
      "InSet", "a IN (long constant list)",
      "CaseWhen", "CASE WHEN ... END",
      "If", "if(cond, a, b)",
      "Coalesce", "coalesce(a, b, ...)",
      "Cast", "CAST(a AS type)",
      "Year", "year(date)",
      "Month", "month(date)",
      "DayOfMonth", "dayofmonth(date)",
      "StartsWith", "startswith(s, prefix) or s LIKE 'prefix%'",
      "EndsWith", "endswith(s, suffix) or s LIKE '%suffix'",
      "Contains", "contains(s, part) or s LIKE '%part%'",
      "Length", "length(s)",
      "NormalizeNaNAndZero", "one NaN and no -0.0 in floating point grouping keys",
      "KnownFloatingPointNormalized", "marks normalized floating point keys",
      "UnscaledValue", "a decimal's unscaled value (Spark sums and averages small decimals so)");

  private static Map<String, String> ordered(String... nameThenDescription) {
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i < nameThenDescription.length; i += 2) {
      map.put(nameThenDescription[i], nameThenDescription[i + 1]);
    }
    return Collections.unmodifiableMap(map);
  }
}
