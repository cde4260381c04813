package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.execution.columnar.InMemoryRelation;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What a table cached in Tessera's format holds, per column: the bytes as stored (the size of its
 * device copy) and uncompressed, the encodings its batches chose and the bit widths of their
 * miniblocks. Computed by a Spark job over the cached batches (which it materialises if they are
 * not yet), reading only their headers: nothing is decoded. {@code bin/tessera sql --cached} and
 * {@code bin/tessera ssb --input cached} print it.
 *
 * @param columns one entry per cached column, in the table's order
 */
public record CacheSummary(List<ColumnSummary> columns) implements Serializable {
  private static final long serialVersionUID = 1L;

  public CacheSummary {
    columns = List.copyOf(columns);
  }

  /**
   * The summary of {@code relation}'s cache, or null when it is not in Tessera's format (another
   * serializer, or Spark's default format for a column type Tessera does not store).
   */
  public static CacheSummary of(InMemoryRelation relation) {
    if (!(relation.cacheBuilder().serializer() instanceof TesseraCachedBatchSerializer s)
        || !s.supportsColumnarOutput(relation.schema())) {
      return null;
    }
    List<Attribute> output = CollectionConverters.asJava(relation.output());
    int width = output.size();
    JavaRDD<CachedBatch> batches = relation.cacheBuilder().cachedColumnBuffers().toJavaRDD();
    List<ColumnTally[]> partials = batches.mapPartitions(
        (Iterator<CachedBatch> it) -> List.<ColumnTally[]>of(tally(it, width)).iterator())
        .collect();
    ColumnTally[] total = ColumnTally.empty(width);
    for (ColumnTally[] partial : partials) {
      for (int c = 0; c < width; c++) {
        total[c].add(partial[c]);
      }
    }
    List<ColumnSummary> columns = new ArrayList<>(width);
    for (int c = 0; c < width; c++) {
      columns.add(total[c].summary(output.get(c).name(), output.get(c).dataType().simpleString()));
    }
    return new CacheSummary(columns);
  }

  /**
   * The summary of the cache {@code dataset} reads (the first in its plan, which is the dataset
   * itself once it is cached), or null (nothing cached, or not in Tessera's format).
   */
  public static CacheSummary of(Dataset<?> dataset) {
    InMemoryRelation relation = firstCache(dataset.queryExecution().withCachedData());
    return relation == null ? null : of(relation);
  }

  private static InMemoryRelation firstCache(LogicalPlan plan) {
    if (plan instanceof InMemoryRelation relation) {
      return relation;
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      InMemoryRelation found = firstCache(child);
      if (found != null) {
        return found;
      }
    }
    return null;
  }

  private static ColumnTally[] tally(Iterator<CachedBatch> batches, int width) {
    ColumnTally[] tally = ColumnTally.empty(width);
    while (batches.hasNext()) {
      TesseraCachedBatch batch = (TesseraCachedBatch) batches.next();
      for (int c = 0; c < width; c++) {
        tally[c].add(batch.column(c));
      }
    }
    return tally;
  }

  /** Bytes of all columns as stored: the table's device footprint. */
  public long storedBytes() {
    return columns.stream().mapToLong(ColumnSummary::storedBytes).sum();
  }

  /** Bytes of all columns uncompressed (the plain device layout). */
  public long plainBytes() {
    return columns.stream().mapToLong(ColumnSummary::plainBytes).sum();
  }

  /** The rows cached (every column has them all). */
  public long rows() {
    return columns.isEmpty() ? 0 : columns.get(0).rows();
  }

  /** The bytes as stored over the bytes uncompressed, in percent. */
  public double storedPercent() {
    return percent(storedBytes(), plainBytes());
  }

  /** A table, one line per column and a total, for a terminal. */
  public String render() {
    StringBuilder out = new StringBuilder(String.format(Locale.ROOT,
        "  %-20s %-12s %11s %11s %6s %9s  %s%n", "column", "type", "stored", "plain", "ratio",
        "bits/row", "encodings (batches); miniblock bit widths"));
    for (ColumnSummary c : columns) {
      out.append(String.format(Locale.ROOT, "  %-20s %-12s %11s %11s %5.1f%% %9.2f  %s%n",
          c.name(), c.type(), formatBytes(c.storedBytes()), formatBytes(c.plainBytes()),
          percent(c.storedBytes(), c.plainBytes()), c.bitsPerRow(), c.describeEncodings()));
    }
    out.append(String.format(Locale.ROOT, "  %-20s %-12s %11s %11s %5.1f%%%n", "(table)",
        String.format(Locale.ROOT, "%,d rows", rows()), formatBytes(storedBytes()),
        formatBytes(plainBytes()), percent(storedBytes(), plainBytes())));
    return out.toString();
  }

  /** {@code bytes} for a reader: B, KiB, MiB, GiB or TiB. */
  public static String formatBytes(long bytes) {
    if (bytes < 1 << 10) {
      return bytes + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double value = bytes;
    int unit = -1;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit++;
    }
    return String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
  }

  private static double percent(long part, long whole) {
    return whole == 0 ? 0 : 100.0 * part / whole;
  }

  /**
   * One cached column.
   *
   * @param batches cached batches
   * @param encodingBatches batches per {@link Encoding}, by ordinal
   * @param dictionaryBatches batches whose strings are dictionary-encoded (codes in
   *     {@code encodingBatches}' encoding)
   * @param miniblockWidths miniblocks of GPU-FOR / GPU-DFOR batches per bit width 0..64
   */
  public record ColumnSummary(String name, String type, long rows, long batches,
      long storedBytes, long plainBytes, long[] encodingBatches, long dictionaryBatches,
      long[] miniblockWidths) implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Bits stored per row, validity and dictionaries included. */
    public double bitsPerRow() {
      return rows == 0 ? 0 : storedBytes * 8.0 / rows;
    }

    /** Batches stored with {@code encoding}. */
    public long batches(Encoding encoding) {
      return encodingBatches[encoding.ordinal()];
    }

    private static String label(Encoding encoding) {
      return switch (encoding) {
        case PLAIN -> "plain";
        case FOR -> "GPU-FOR";
        case DFOR -> "GPU-DFOR";
      };
    }

    /** E.g. "GPU-FOR 58, GPU-DFOR 2, dictionary 60; widths 3-17, mean 12.4". */
    public String describeEncodings() {
      List<String> parts = new ArrayList<>();
      for (Encoding e : Encoding.values()) {
        if (batches(e) > 0) {
          parts.add(label(e) + " " + batches(e));
        }
      }
      if (dictionaryBatches > 0) {
        parts.add("dictionary " + dictionaryBatches);
      }
      String text = parts.isEmpty() ? "no batches" : String.join(", ", parts);
      long miniblocks = 0;
      long bits = 0;
      int min = -1;
      int max = -1;
      for (int w = 0; w < miniblockWidths.length; w++) {
        if (miniblockWidths[w] > 0) {
          min = min < 0 ? w : min;
          max = w;
          miniblocks += miniblockWidths[w];
          bits += w * miniblockWidths[w];
        }
      }
      return miniblocks == 0 ? text : String.format(Locale.ROOT, "%s; widths %d-%d, mean %.1f",
          text, min, max, (double) bits / miniblocks);
    }
  }

  /** A column's running totals over batches; merged across partitions on the driver. */
  private static final class ColumnTally implements Serializable {
    private static final long serialVersionUID = 1L;

    private long rows;
    private long batches;
    private long storedBytes;
    private long plainBytes;
    private final long[] encodingBatches = new long[Encoding.values().length];
    private long dictionaryBatches;
    private final long[] miniblockWidths = new long[65];

    static ColumnTally[] empty(int width) {
      ColumnTally[] tally = new ColumnTally[width];
      for (int c = 0; c < width; c++) {
        tally[c] = new ColumnTally();
      }
      return tally;
    }

    void add(EncodedColumn column) {
      rows += column.rowCount();
      batches++;
      storedBytes += column.encodedBytes();
      plainBytes += column.plainBytes();
      encodingBatches[column.encoding().ordinal()]++;
      dictionaryBatches += column.isDictionary() ? 1 : 0;
      int[] widths = column.bitWidths();
      for (int w = 0; w < widths.length; w++) {
        miniblockWidths[w] += widths[w];
      }
    }

    void add(ColumnTally other) {
      rows += other.rows;
      batches += other.batches;
      storedBytes += other.storedBytes;
      plainBytes += other.plainBytes;
      dictionaryBatches += other.dictionaryBatches;
      for (int i = 0; i < encodingBatches.length; i++) {
        encodingBatches[i] += other.encodingBatches[i];
      }
      for (int w = 0; w < miniblockWidths.length; w++) {
        miniblockWidths[w] += other.miniblockWidths[w];
      }
    }

    ColumnSummary summary(String name, String type) {
      return new ColumnSummary(name, type, rows, batches, storedBytes, plainBytes,
          encodingBatches.clone(), dictionaryBatches, miniblockWidths.clone());
    }
  }
}
