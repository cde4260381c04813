package dev.tessera.ssb.compression;

import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * One table's columns ({@link ColumnCompression}) and their totals, as cached in {@code batches}
 * batches.
 */
public record TableCompression(String name, long rows, int batches,
    List<ColumnCompression> columns) {
  public TableCompression {
    columns = List.copyOf(columns);
  }

  /** Plain bytes of all columns. */
  public long plainBytes() {
    return sum(ColumnCompression::plainBytes, c -> true);
  }

  /** Encoded bytes of all columns: what the device copy of the table holds. */
  public long encodedBytes() {
    return sum(ColumnCompression::encodedBytes, c -> true);
  }

  /** Encoded bytes over plain bytes, all columns. */
  public double ratio() {
    return ratio(c -> true);
  }

  /** The columns NSF applies to (integer-like: {@link ColumnCompression#nsfBytes} >= 0). */
  public static boolean isInteger(ColumnCompression column) {
    return column.nsfBytes() >= 0;
  }

  /** Sum of {@code size} over the columns {@code which} selects. */
  public long sum(ToLongFunction<ColumnCompression> size, Predicate<ColumnCompression> which) {
    return columns.stream().filter(which).mapToLong(size).sum();
  }

  /** Encoded over plain bytes of the columns {@code which} selects (NaN when none). */
  public double ratio(Predicate<ColumnCompression> which) {
    long plain = sum(ColumnCompression::plainBytes, which);
    return plain == 0 ? Double.NaN : (double) sum(ColumnCompression::encodedBytes, which) / plain;
  }

  /** Bits per row of {@code bytes} (the sum of its columns' bits per value). */
  public double bitsPerRow(long bytes) {
    return ColumnCompression.bitsPerValue(bytes, rows);
  }
}
