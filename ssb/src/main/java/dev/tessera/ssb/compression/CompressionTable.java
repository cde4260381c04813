package dev.tessera.ssb.compression;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/** A {@link CompressionReport} as fixed-width text tables, one per SSB table. */
public final class CompressionTable {
  private CompressionTable() {}

  private static final String ROW = "%-18s %-6s %-16s %7s %7s %8s %8s %9s %7s %8s%n";

  public static void print(CompressionReport report, PrintStream out) {
    out.printf(Locale.ROOT, "SSB scale factor %s, seed %d: Tessera's cache format encoded on the"
        + " CPU (host GPU-FOR encoder), batches of %,d rows; %.1f s%n", report.scaleFactor(),
        report.seed(), report.batchRows(), report.seconds());
    out.println("Bits per value. plain: Tessera's plain device layout (4 bytes an int; a string's"
        + " offset and bytes).");
    out.println("  NSF: 1, 2 or 4 bytes per column, the fewest that hold its values (the thesis's"
        + " NSF; integer columns).");
    out.println("  encoded: all the device copy holds. payload: the packed bit widths (a PLAIN"
        + " column's values or bytes).");
    out.println("  overhead: encoded - payload (block headers and starts, GPU-DFOR first values,"
        + " dictionaries, offsets); dict: the dictionary's share of it.");
    for (TableCompression table : report.tables()) {
      out.println();
      print(table, out);
    }
    out.println();
    out.printf(Locale.ROOT, "all tables: plain %,d bytes, encoded %,d bytes (%s of plain)%n",
        report.plainBytes(), report.encodedBytes(),
        percent((double) report.encodedBytes() / report.plainBytes()));
  }

  static void print(TableCompression table, PrintStream out) {
    out.printf(Locale.ROOT, "%s: %,d rows, %d batch(es)%n", table.name(), table.rows(),
        table.batches());
    String header = String.format(Locale.ROOT, ROW, "column", "type", "encoding", "plain", "NSF",
        "encoded", "payload", "overhead", "dict", "enc/plain");
    out.print(header);
    out.println("-".repeat(header.length() - 1));
    for (ColumnCompression c : table.columns()) {
      out.printf(Locale.ROOT, ROW, c.name(), c.type(), c.encodingSummary(), bits(c.plainBits()),
          c.nsfBytes() < 0 ? "-" : bits(ColumnCompression.bitsPerValue(c.nsfBytes(), c.rows())),
          bits(c.encodedBits()), bits(c.payloadBits()), bits(c.overheadBits()),
          c.dictionaryBits() == 0 ? "-" : bits(c.dictionaryBits()), ratio(c.ratio()));
    }
    total(table, "total (bits/row)", c -> true, out);
    total(table, "integer columns", TableCompression::isInteger, out);
    long integerNsf = table.sum(ColumnCompression::nsfBytes, TableCompression::isInteger);
    long integerEncoded = table.sum(ColumnCompression::encodedBytes, TableCompression::isInteger);
    out.printf(Locale.ROOT, "bytes: plain %,d, encoded %,d (%s of plain); integer columns:"
        + " plain %,d, NSF %,d, encoded %,d (%s of plain, %s of NSF)%n", table.plainBytes(),
        table.encodedBytes(), percent(table.ratio()),
        table.sum(ColumnCompression::plainBytes, TableCompression::isInteger), integerNsf,
        integerEncoded, percent(table.ratio(TableCompression::isInteger)),
        percent(integerNsf == 0 ? Double.NaN : (double) integerEncoded / integerNsf));
  }

  /** A totals row: the columns' bits per value added up (bits per row) and their ratio. */
  private static void total(TableCompression table, String label,
      Predicate<ColumnCompression> which, PrintStream out) {
    ToDoubleFunction<ToDoubleFunction<ColumnCompression>> sum =
        f -> table.columns().stream().filter(which).mapToDouble(f).sum();
    Predicate<ColumnCompression> integer = TableCompression::isInteger;
    long nsf = table.sum(ColumnCompression::nsfBytes, integer.and(which));
    boolean allInteger = table.columns().stream().filter(which)
        .allMatch(TableCompression::isInteger);
    double dictionary = sum.applyAsDouble(ColumnCompression::dictionaryBits);
    out.printf(Locale.ROOT, ROW, label, "", "", bits(sum.applyAsDouble(ColumnCompression::plainBits)),
        allInteger ? bits(table.bitsPerRow(nsf)) : "-",
        bits(sum.applyAsDouble(ColumnCompression::encodedBits)),
        bits(sum.applyAsDouble(ColumnCompression::payloadBits)),
        bits(sum.applyAsDouble(ColumnCompression::overheadBits)),
        dictionary == 0 ? "-" : bits(dictionary), ratio(table.ratio(which)));
  }

  static String bits(double bits) {
    return Double.isNaN(bits) ? "-" : String.format(Locale.ROOT, "%.2f", bits);
  }

  static String ratio(double ratio) {
    return Double.isNaN(ratio) ? "-" : String.format(Locale.ROOT, "%.3f", ratio);
  }

  static String percent(double ratio) {
    return Double.isNaN(ratio) ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * ratio);
  }
}
