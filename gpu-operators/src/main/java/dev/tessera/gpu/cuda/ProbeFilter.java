package dev.tessera.gpu.cuda;

/**
 * The size of a join table's probe filter (program.cuh JoinTableView.filter): a bitmap that a
 * generated probe reads before the table's direct map or slots, and that answers "no build row"
 * for most keys no build row has without reading either.
 *
 * <p>Why: a dimension table filtered below its join (SSB's part side of q2.1, one row in 25;
 * StarJoinBench's sparse form) finds no row for most probes, and each of those still reads the
 * direct map's word or walks the slots, an L2 round trip a read, at the end of the probe's chain
 * of dependent loads. A bitmap of at most {@link #MAX_BITS} bits (64 KiB) stays in the
 * multiprocessor's L1 beside the aggregate's shared memory, so that those probes end there.
 *
 * <p>Bit i stands for the key offsets {@code i << shift ... (i + 1 << shift) - 1} of a direct
 * map (so a set bit is exact where the shift is 0), or for the keys whose 64-bit hash has i as
 * its high bits ({@code hash >>> shift}), a Bloom filter of one hash function.
 *
 * @param shift what a probe shifts the key's offset or hash right by to get its bit
 * @param bits the bitmap's bits (its words: {@link #words})
 */
record ProbeFilter(int shift, long bits) {
  /** 2^19 bits: 64 KiB. */
  static final long MAX_BITS = 1L << 19;
  /**
   * Bits a distinct key of a table without a direct map gets (a power of two at least this many
   * times the keys): one in about 16 keys no build row has passes the filter.
   */
  static final long BITS_PER_HASHED_KEY = 16;
  /** The fewest bits a hashed key may get, below which the filter passes too many keys. */
  static final long MIN_BITS_PER_HASHED_KEY = 8;

  /** The filter's uint32 words. */
  long words() {
    return (bits + Integer.SIZE - 1) / Integer.SIZE;
  }

  /**
   * The filter for a direct map of {@code span} words holding {@code keys} distinct keys, or null
   * when the map is at least half full: most probes of such a map find a row, and the filter
   * would only add a read to theirs.
   */
  static ProbeFilter forDirectMap(long span, long keys) {
    if (span <= 0 || keys * 2 > span) {
      return null;
    }
    int shift = 0;
    while (((span - 1) >> shift) + 1 > MAX_BITS) {
      shift++;
    }
    return new ProbeFilter(shift, ((span - 1) >> shift) + 1);
  }

  /**
   * The filter for the slots of {@code keys} distinct keys (a table without a direct map), or
   * null when there are none or too many to get {@link #MIN_BITS_PER_HASHED_KEY} bits each.
   */
  static ProbeFilter forSlots(long keys) {
    if (keys <= 0 || keys * MIN_BITS_PER_HASHED_KEY > MAX_BITS) {
      return null;
    }
    long bits = Integer.SIZE;
    while (bits < BITS_PER_HASHED_KEY * keys && bits < MAX_BITS) {
      bits *= 2;
    }
    return new ProbeFilter(Long.SIZE - Long.numberOfTrailingZeros(bits), bits);
  }
}
