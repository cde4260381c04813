package dev.tessera.ssb.bench;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class ResultComparisonTest {
  private static final double TOL = 1e-9;

  private static Row row(Object... values) {
    return RowFactory.create(values);
  }

  @Test
  void equalInAnyOrder() {
    List<Row> a = List.of(row(1L, "x"), row(2L, "y"), row(null, "z"));
    List<Row> b = List.of(row(null, "z"), row(2L, "y"), row(1L, "x"));
    assertNull(ResultComparison.difference(a, b, TOL));
  }

  @Test
  void unequalValueNamesTheRows() {
    String diff = ResultComparison.difference(List.of(row(1L, "x")), List.of(row(1L, "q")), TOL);
    assertTrue(diff.contains("[1,x]") && diff.contains("[1,q]"), diff);
  }

  @Test
  void differentRowCounts() {
    String diff = ResultComparison.difference(List.of(row(1L)), List.of(), TOL);
    assertTrue(diff.contains("expected 1 rows, got 0"), diff);
  }

  @Test
  void doublesWithinRelativeTolerance() {
    assertNull(ResultComparison.difference(List.of(row(1e12)), List.of(row(1e12 + 1e2)), TOL));
    assertTrue(ResultComparison.difference(List.of(row(1.0)), List.of(row(1.001)), TOL) != null);
    assertTrue(ResultComparison.valuesEqual(Double.NaN, Double.NaN, TOL));
    assertFalse(ResultComparison.valuesEqual(1.0, null, TOL));
  }

  @Test
  void doublesDifferingInLastBitsStillPairUpWhenSorted() {
    List<Row> a = List.of(row("a", 0.1 + 0.2), row("b", 5.0));
    List<Row> b = List.of(row("b", 5.0), row("a", 0.3));
    assertNull(ResultComparison.difference(a, b, TOL));
  }

  @Test
  void decimalsByValue() {
    assertNull(ResultComparison.difference(List.of(row(new BigDecimal("1.0"))),
        List.of(row(new BigDecimal("1.00"))), TOL));
  }
}
