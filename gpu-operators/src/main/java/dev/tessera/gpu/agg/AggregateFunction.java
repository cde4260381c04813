package dev.tessera.gpu.agg;

import dev.tessera.gpu.column.ColumnType;
import java.io.Serializable;

/**
 * One aggregate of a hash aggregation: what it computes, over which input column, and the type of
 * its result column. Spark's buffers are built from these: count is COUNT (or COUNT_ROWS), sum is
 * SUM or SUM_DECIMAL, min and max are MIN and MAX; the final (merge) step of a count is a
 * SUM over the partial counts.
 *
 * @param kind what it computes
 * @param input the input column it reads (-1 for COUNT_ROWS)
 * @param resultType the type of the result column
 * @param zeroWhenEmpty for SUM and SUM_DECIMAL: a group with no non-null input gives 0
 *     instead of NULL (the sum buffer of Spark's avg, and of a decimal sum, starts at 0; the
 *     merged count of an empty global aggregate is 0)
 */
public record AggregateFunction(Kind kind, int input, ColumnType resultType,
    boolean zeroWhenEmpty) implements Serializable {

  /** A function whose empty groups give NULL (COUNT and COUNT_ROWS give 0 regardless). */
  public AggregateFunction(Kind kind, int input, ColumnType resultType) {
    this(kind, input, resultType, false);
  }

  /** The aggregates the operator computes. */
  public enum Kind {
    /** Rows of the group, as LONG, never null. */
    COUNT_ROWS,
    /** Non-null inputs of the group, as LONG, never null. */
    COUNT,
    /**
     * Exact sum of integral inputs (BYTE, SHORT, INT, LONG), or of DOUBLE inputs that hold
     * integers (the sum buffers of Spark's avg over integers, which are always whole numbers; a
     * fractional input is outside the contract). The result is LONG, wrapping on overflow (ANSI:
     * the ARITHMETIC_OVERFLOW error), or DOUBLE, the exact sum rounded once to the nearest double
     * (never an error). NULL (or 0, see zeroWhenEmpty) when the group has no non-null input.
     *
     * <p>Known difference: Spark's ANSI long sum fails when any running sum overflows, even if
     * the total comes back into range; the exact sum here fails only when the total overflows.
     */
    SUM,
    /**
     * Exact sum of DECIMAL unscaled values at the input's scale, as DECIMAL with the result's
     * precision; NULL when the sum does not fit that precision (never an error: Spark raises the
     * ANSI error later, in the aggregate's result expression), and NULL (or 0, see
     * zeroWhenEmpty) when the group has no non-null input.
     */
    SUM_DECIMAL,
    /**
     * Smallest non-null input (Spark's order: NaN largest, -0.0 = 0.0; false before true); NULL
     * if none. Any fixed-width type, BOOLEAN included.
     */
    MIN,
    /** Largest non-null input (the same order and types as MIN); NULL if none. */
    MAX
  }
}
