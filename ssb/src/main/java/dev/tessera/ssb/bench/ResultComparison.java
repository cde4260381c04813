package dev.tessera.ssb.bench;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.Row;

/**
 * Whether Tessera's result equals Spark's: the rows in any order (both sides are sorted first, as
 * a query without ORDER BY has no order, and ties of an ORDER BY none either), floating-point
 * values equal within a relative tolerance (the GPU adds sums in another order), everything else
 * exactly (decimals by value: 1.0 equals 1.00).
 */
public final class ResultComparison {
  /** The relative tolerance of doubles and floats the benchmark uses. */
  public static final double DEFAULT_TOLERANCE = 1e-9;

  private ResultComparison() {}

  /**
   * Null when the results are equal, else what differs first (row number and values), for the
   * report.
   */
  public static String difference(List<Row> expected, List<Row> actual, double relTolerance) {
    if (expected.size() != actual.size()) {
      return "expected " + expected.size() + " rows, got " + actual.size();
    }
    List<Row> e = sorted(expected);
    List<Row> a = sorted(actual);
    for (int i = 0; i < e.size(); i++) {
      Row x = e.get(i);
      Row y = a.get(i);
      if (x.length() != y.length()) {
        return "row " + i + ": expected " + x.length() + " columns, got " + y.length();
      }
      for (int c = 0; c < x.length(); c++) {
        if (!valuesEqual(x.get(c), y.get(c), relTolerance)) {
          return "row " + i + " (sorted), column " + c + ": expected " + x + ", got " + y;
        }
      }
    }
    return null;
  }

  static boolean valuesEqual(Object x, Object y, double relTolerance) {
    if (x == null || y == null) {
      return x == y;
    }
    if ((x instanceof Double || x instanceof Float) && (y instanceof Double || y instanceof Float)) {
      double a = ((Number) x).doubleValue();
      double b = ((Number) y).doubleValue();
      if (Double.isNaN(a) || Double.isNaN(b) || Double.isInfinite(a) || Double.isInfinite(b)) {
        return Double.compare(a, b) == 0;
      }
      return Math.abs(a - b) <= relTolerance * Math.max(Math.abs(a), Math.abs(b));
    }
    if (x instanceof BigDecimal a && y instanceof BigDecimal b) {
      return a.compareTo(b) == 0;
    }
    return x.equals(y);
  }

  /** The rows in an order that does not depend on the last bits of floating-point values. */
  private static List<Row> sorted(List<Row> rows) {
    List<Row> copy = new ArrayList<>(rows);
    copy.sort(Comparator.comparing(ResultComparison::sortKey));
    return copy;
  }

  private static String sortKey(Row row) {
    StringBuilder key = new StringBuilder();
    for (int c = 0; c < row.length(); c++) {
      Object v = row.get(c);
      if (v instanceof Double || v instanceof Float) {
        key.append(String.format(Locale.ROOT, "%.6e", ((Number) v).doubleValue()));
      } else if (v instanceof BigDecimal d) {
        key.append(d.stripTrailingZeros().toPlainString());
      } else {
        key.append(v);
      }
      key.append('\u0001');
    }
    return key.toString();
  }
}
