package dev.tessera.gpu.cuda;

/**
 * The size of a join table's probe filter (program.cuh JoinTableView.filter): a Bloom filter of
 * one hash function over the keys of a table without a direct map, which a generated probe reads
 * before it walks the table's slots, and which answers "no build row" for most keys no build row
 * has without the walk.
 *
 * <p>Why: a dimension table filtered below its join whose keys get no direct map
 * (StarJoinBench's sparse form: one row in 25 of the part table, keys 9,973 apart) finds no row
 * for most probes, and each of those walks the slots to an empty one, a dependent L2 round trip
 * a slot and a hash. The filter, at most {@link #MAX_BITS} bits (64 KiB), stays in the
 * multiprocessor's L1: the sparse star join's fused kernel went from 720 to 570 µs (H200).
 * Tables with a direct map get none: a probe that finds no row there reads one word already,
 * and a filter before it made SSB SF10's fused kernels 2-13% slower (a date table all of whose
 * probes find a row has a sparse map, and a filtered customer or part table's map stays in L2).
 *
 * <p>Bit i stands for the keys whose probe filter hash has i as its high bits ({@code h >>>
 * shift}; hash.cuh CombineFilterHash: a multiply a key, where the key tuple's hash that the slots
 * take takes two rounds of Mix; a generated probe computes it for every row, most of which end
 * at their bit).
 *
 * @param shift what a probe shifts the keys' filter hash right by to get its bit
 * @param bits the bitmap's bits, a power of two (its words: {@link #words})
 */
record ProbeFilter(int shift, long bits) {
  /** 2^19 bits: 64 KiB. */
  static final long MAX_BITS = 1L << 19;
  /**
   * Bits a distinct key gets (a power of two at least this many times the keys): about one in
   * 16 keys no build row has passes the filter.
   */
  static final long BITS_PER_KEY = 16;
  /** The fewest bits a key may get, below which the filter passes too many keys to pay. */
  static final long MIN_BITS_PER_KEY = 8;

  /** The filter's uint32 words. */
  long words() {
    return (bits + Integer.SIZE - 1) / Integer.SIZE;
  }

  /**
   * The filter for the slots of {@code keys} distinct keys (a table without a direct map), or
   * null when there are none or too many to get {@link #MIN_BITS_PER_KEY} bits each.
   */
  static ProbeFilter forSlots(long keys) {
    if (keys <= 0 || keys * MIN_BITS_PER_KEY > MAX_BITS) {
      return null;
    }
    long bits = Integer.SIZE;
    while (bits < BITS_PER_KEY * keys && bits < MAX_BITS) {
      bits *= 2;
    }
    return new ProbeFilter(Long.SIZE - Long.numberOfTrailingZeros(bits), bits);
  }
}
