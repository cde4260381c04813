package dev.tessera.spark.exec;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.expressions.Expression;

/**
 * A sum whose Spark outcome depends on the order of its rows, which the GPU does not keep, and
 * the evidence that it cannot here. Spark adds the rows of a group one at a time:
 *
 * <ul>
 *   <li>{@link Mode#ANSI_LONG}: an ANSI long sum raises as soon as a running sum overflows, even
 *       if the total comes back into range;
 *   <li>{@link Mode#DOUBLE}: avg of integers adds them as doubles, each addition rounded.
 * </ul>
 *
 * Every running sum of a group lies between the sum of its negative and the sum of its positive
 * values. When both are strictly within {@link Mode#bound} no order can differ from the GPU's
 * exact sum: no running long sum overflows, and every running double sum is an integer of at most
 * 53 bits, so no addition rounds. Where the GPU cannot show that, the task's rows are replayed in
 * Spark's order on the CPU ({@link OrderedSumReplay}).
 *
 * @param mode which order dependence
 * @param result the aggregation output column of the GPU's sum
 * @param input the aggregation input column of the summed values
 * @param positive the output column of the sum of the positive values (a DOUBLE, the exact sum
 *     rounded once), or -1 when {@code maxMagnitude} bounds the values instead
 * @param negative likewise, of the negative values
 * @param maxMagnitude the largest magnitude an input value can have (2^31 for an INT), or 0 when
 *     the helper sums bound them
 * @param sparkAdd for {@link Mode#ANSI_LONG}: Spark's own addition of a running sum (bound
 *     reference 0) and a value (1), which raises Spark's error; null otherwise
 */
public record OrderDependentSum(Mode mode, int result, int input, int positive, int negative,
    long maxMagnitude, Expression sparkAdd) implements Serializable {

  /** What depends on the order, and the magnitude below which nothing does. */
  public enum Mode {
    ANSI_LONG(0x1p63),
    DOUBLE(0x1p53);

    private final double bound;

    Mode(double bound) {
      this.bound = bound;
    }

    public double bound() {
      return bound;
    }
  }

  /** Whether the helper sums bound this sum (else the input's magnitude and the row count do). */
  public boolean hasHelpers() {
    return positive >= 0;
  }

  /**
   * Whether {@code rows} values of at most {@link #maxMagnitude} cannot reach the bound, whatever
   * their order (for sums without helper columns).
   */
  boolean boundedByRows(long rows) {
    return (double) rows * maxMagnitude < mode.bound;
  }

  /**
   * Whether a group's helper sums (each the exact sum rounded once) show that no running sum
   * reaches the bound. Rounding may have moved a sum by half a unit, so a rounded value at the
   * bound is not taken as proof.
   */
  boolean withinBound(double positiveSum, double negativeSum) {
    return positiveSum < mode.bound && negativeSum > -mode.bound;
  }
}
