package dev.tessera.ssb.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The few statistics the report shows; kept apart so that their edge cases are tested. */
public final class Stats {
  private Stats() {}

  /** The median of {@code values}: the middle one, or the mean of the two middle ones. */
  public static double median(List<Double> values) {
    if (values.isEmpty()) {
      throw new IllegalArgumentException("the median of no values is undefined");
    }
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int mid = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted.get(mid) : (sorted.get(mid - 1) + sorted.get(mid)) / 2;
  }

  /** How many times faster {@code newMillis} is than {@code baseMillis}; NaN when not defined. */
  public static double speedUp(double baseMillis, double newMillis) {
    return newMillis > 0 && baseMillis >= 0 ? baseMillis / newMillis : Double.NaN;
  }

  /** {@code part / whole}, NaN when {@code whole} is 0. */
  public static double fraction(long part, long whole) {
    return whole == 0 ? Double.NaN : part / (double) whole;
  }
}
