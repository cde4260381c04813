package dev.tessera.ssb;

/**
 * The row counts of a scale factor, as the SSB specification gives them, with the scaled-down
 * counts of fractional scale factors (every table keeps at least one row).
 */
record SsbScale(double factor, long orders, long customers, long suppliers, long parts) {
  static final long ORDERS_PER_SF = 1_500_000L;
  static final long CUSTOMERS_PER_SF = 30_000L;
  static final long SUPPLIERS_PER_SF = 2_000L;
  static final long PARTS_BASE = 200_000L;

  /** The counts of {@code scaleFactor}, which must be a positive finite number. */
  static SsbScale of(double scaleFactor) {
    if (!(scaleFactor > 0) || Double.isInfinite(scaleFactor)) {
      throw new IllegalArgumentException(
          "SSB scale factor must be a positive finite number, got " + scaleFactor);
    }
    long orders = atLeastOne(ORDERS_PER_SF * scaleFactor);
    if (orders > Integer.MAX_VALUE) {
      // Keys are INT columns, as in the specification's schema.
      throw new IllegalArgumentException("SSB scale factor " + scaleFactor
          + " is too large: " + orders + " orders do not fit INT keys");
    }
    return new SsbScale(scaleFactor, orders,
        atLeastOne(CUSTOMERS_PER_SF * scaleFactor),
        atLeastOne(SUPPLIERS_PER_SF * scaleFactor),
        parts(scaleFactor));
  }

  /**
   * 200,000 x (1 + floor(log2 SF)) per the specification. That formula is zero or negative
   * below SF 1, so fractional scale factors scale the SF 1 count linearly instead
   * (200,000 x SF, at least 1): SF 0.01 has 2,000 parts.
   */
  static long parts(double scaleFactor) {
    if (scaleFactor < 1) {
      return atLeastOne(PARTS_BASE * scaleFactor);
    }
    int log2 = 63 - Long.numberOfLeadingZeros((long) Math.floor(scaleFactor));
    return PARTS_BASE * (1 + log2);
  }

  private static long atLeastOne(double rows) {
    return Math.max(1L, (long) Math.floor(rows));
  }
}
