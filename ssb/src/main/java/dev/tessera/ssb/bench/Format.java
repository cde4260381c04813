package dev.tessera.ssb.bench;

import java.util.Locale;

/** Number formats the report writers share: fixed, locale-free, "" (CSV) for unknown values. */
final class Format {
  private Format() {}

  static String fixed(double value, int decimals) {
    return Double.isNaN(value) ? "" : String.format(Locale.ROOT, "%." + decimals + "f", value);
  }

  static String orDash(String value) {
    return value.isEmpty() ? "-" : value;
  }

  /** Bytes in decimal units (MB = 10^6), as bandwidths are given. */
  static String bytes(long bytes) {
    if (bytes <= 0) {
      return "-";
    }
    String[] units = {"B", "kB", "MB", "GB", "TB"};
    double v = bytes;
    int u = 0;
    while (v >= 1000 && u < units.length - 1) {
      v /= 1000;
      u++;
    }
    return String.format(Locale.ROOT, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  }
}
