package dev.tessera.gpu.sort;

import java.io.Serializable;

/**
 * One key of a sort: a column of the batch, its direction and where its NULLs go (Spark's
 * {@code SortOrder}: {@code ASC NULLS FIRST} is Spark's default ascending order, {@code DESC NULLS
 * LAST} its default descending one). Values compare in Spark's order: floating point NaN above
 * every number and equal to itself, -0.0 equal to 0.0; strings by their UTF-8 bytes, unsigned;
 * booleans false first.
 *
 * @param column the column's index in the batch
 * @param descending whether larger values come first (NULLs still go where {@code nullsFirst} says)
 * @param nullsFirst whether NULLs come before every value
 */
public record SortKey(int column, boolean descending, boolean nullsFirst) implements Serializable {
  public SortKey {
    if (column < 0) {
      throw new IllegalArgumentException("a sort key's column is an index, got " + column);
    }
  }

  /** Ascending, NULLs first (Spark's {@code ASC}). */
  public static SortKey ascending(int column) {
    return new SortKey(column, false, true);
  }

  /** Descending, NULLs last (Spark's {@code DESC}). */
  public static SortKey descending(int column) {
    return new SortKey(column, true, false);
  }

  @Override
  public String toString() {
    return "#" + column + (descending ? " DESC" : " ASC") + (nullsFirst ? " NULLS FIRST"
        : " NULLS LAST");
  }
}
