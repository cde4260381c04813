package dev.tessera.gpu.agg;

import dev.tessera.gpu.column.ColumnType;
import java.io.Serializable;

/**
 * One aggregate of a hash aggregation: what it computes, over which input column, and the type of
 * its result column. Spark's buffers are built from these: count is COUNT (or COUNT_ROWS), sum is
 * SUM_INT or SUM_DECIMAL, min and max are MIN and MAX; the final (merge) step of a count is a
 * SUM_INT over the partial counts.
 *
 * @param kind what it computes
 * @param input the input column it reads (-1 for COUNT_ROWS)
 * @param resultType the type of the result column
 */
public record AggregateFunction(Kind kind, int input, ColumnType resultType)
    implements Serializable {

  /** The aggregates the operator computes. */
  public enum Kind {
    /** Rows of the group, as LONG, never null. */
    COUNT_ROWS,
    /** Non-null inputs of the group, as LONG, never null. */
    COUNT,
    /**
     * Sum of integral inputs (BYTE, SHORT, INT, LONG) as LONG, wrapping on overflow (ANSI: the
     * ARITHMETIC_OVERFLOW error); NULL when the group has no non-null input.
     */
    SUM_INT,
    /**
     * Sum of DECIMAL unscaled values at the input's scale; NULL when the group has no non-null
     * input, or when the sum does not fit the result precision (ANSI: DECIMAL_OVERFLOW).
     */
    SUM_DECIMAL,
    /** Smallest non-null input (Spark's order: NaN largest, -0.0 = 0.0); NULL if none. */
    MIN,
    /** Largest non-null input (Spark's order: NaN largest, -0.0 = 0.0); NULL if none. */
    MAX
  }
}
