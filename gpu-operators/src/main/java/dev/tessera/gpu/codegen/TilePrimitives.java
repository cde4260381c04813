package dev.tessera.gpu.codegen;

/**
 * The block-wide tile primitives a generated kernel needs between its phases, written into the
 * kernel as PTX: the exclusive sum of the keep flags over the striped tile (scan.cuh
 * BlockExclusiveSum) and the decoupled look-back across tiles (lookback.cuh BlockTilePrefix),
 * instruction for instruction as the interpreter kernels compile them. Inline, not prelude calls:
 * values the kernel holds across a call beyond the few registers the call convention preserves
 * are spilled, and these run where the kernel holds its most values.
 *
 * <p>And the GPU-DFOR tile decode (program.cuh DforTileValues), for the same reason: a kernel
 * with several GPU-DFOR columns holds every decoded tile while it decodes the next.
 *
 * <p>All contain barriers: every thread of the block must reach them.
 */
final class TilePrimitives {
  /** Threads of a warp (the generated kernels' shuffles, votes and lane masks assume 32). */
  static final int WARP_THREADS = 32;
  /**
   * The shared array of a GPU-DFOR tile's decode ({@link #dforTile}): its declaration is in the
   * PTX of every kernel that decodes one.
   */
  static final String DFOR_TOTALS = "dfor_totals";
  private static final int TILE_FLAG_SHIFT = 62;
  private static final long TILE_VALUE_MASK = (1L << TILE_FLAG_SHIFT) - 1;
  private static final long FLAG_AGGREGATE = 1;
  private static final long FLAG_PREFIX = 2;

  private final PtxBuilder b;
  private final String thread;
  private final int items;
  private final int warps;
  private final String lane;
  private final String warp;

  /**
   * @param thread the .b32 register holding %tid.x
   */
  TilePrimitives(PtxBuilder b, String thread, int blockThreads, int items) {
    if (items * (blockThreads / WARP_THREADS) > WARP_THREADS) {
      // blockExclusiveSum's second level: one warp scans every (item, warp) segment's total.
      throw new IllegalArgumentException(items + " items of " + blockThreads
          + " threads make more segments than the block scan's one warp holds");
    }
    this.b = b;
    this.thread = thread;
    this.items = items;
    this.warps = blockThreads / WARP_THREADS;
    this.lane = b.b32();
    b.op("and.b32 %s, %s, %d", lane, thread, WARP_THREADS - 1);
    this.warp = b.b32();
    b.op("shr.u32 %s, %s, 5", warp, thread);
  }

  /**
   * lookback.cuh TakeTile: the next tile index from the zeroed device counter at {@code counter}
   * (.b64 global), taken by thread 0 and shared with the block (.b64 in every thread).
   */
  String takeTile(String counter) {
    b.declare(".shared .align 8 .b64 taken_tile");
    String first = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", first, thread);
    String taken = b.b64();
    b.op("@%s atom.global.add.u64 %s, [%s], 1", first, taken, counter);
    b.op("@%s st.shared.u64 [taken_tile], %s", first, taken);
    b.op("bar.sync 0");
    String tile = b.b64();
    b.op("ld.shared.u64 %s, [taken_tile]", tile);
    return tile;
  }

  /** The .b32 register holding the thread's lane. */
  String lane() {
    return lane;
  }

  /** WarpInclusiveSum of a .b64 value, in place (two 32-bit shuffles a step). */
  private void warpInclusiveSum64(String value) {
    for (int offset = 1; offset < WARP_THREADS; offset <<= 1) {
      String low = b.b32();
      String high = b.b32();
      b.op("mov.b64 {%s, %s}, %s", low, high, value);
      String otherLow = b.b32();
      String otherHigh = b.b32();
      String inRange = b.pred();
      b.op("shfl.sync.up.b32 %s|%s, %s, %d, 0, -1", otherLow, inRange, low, offset);
      b.op("shfl.sync.up.b32 %s, %s, %d, 0, -1", otherHigh, high, offset);
      String other = b.b64();
      b.op("mov.b64 %s, {%s, %s}", other, otherLow, otherHigh);
      b.op("@%s add.s64 %s, %s, %s", inRange, value, value, other);
    }
  }

  /**
   * program.cuh DforTileValues: a GPU-DFOR column's values (narrowed as LoadColumn's) for the
   * thread's items of the tile, which is one GPU-DFOR set: the set's first value plus the deltas
   * up to each row, summed by a warp scan per item and the warps' totals through shared memory.
   * Rows past the tile's end hold delta 0 (their values mean nothing, nor do NULL rows').
   *
   * @param words the column's words (global .b64)
   * @param blockStarts the column's block starts (global .b64)
   * @param tileOffset the tile's first row (.b64)
   * @param numTileItems the tile's rows (.b32)
   */
  String[] dforTile(String words, String blockStarts, String tileOffset, String numTileItems,
      int referenceWords) {
    b.declare(".shared .align 8 .b64 " + DFOR_TOTALS + "[" + items * warps + "]");
    String totalsBase = b.b32();
    b.op("mov.u32 %s, %s", totalsBase, DFOR_TOTALS);
    String lastLane = b.pred();
    b.op("setp.eq.u32 %s, %s, %d", lastLane, lane, WARP_THREADS - 1);
    // The items read their deltas without branches of their own (the row clamped to the tile's
    // last, the delta 0 past it), and the set's first value before the barrier, so that all their
    // loads wait together: each item behind its own branch, they waited one after the other (the
    // SASS kept the branches), and SSB's GPU-DFOR dimension filters took 8% longer (5,812.6
    // against 5,369.9 µs on an H200: docs/gpu-timings.md, 2026-12-04, third session).
    String carry = b.b64();
    b.op("mov.b64 %s, 0", carry);
    String[] sums = new String[items];
    for (int i = 0; i < items; i++) {
      sums[i] = b.b64();
      b.op("mov.b64 %s, 0", sums[i]);
    }
    // A tile without rows (an aggregate's pass that flushes its queues) reads nothing; the branch
    // is the block's.
    String empty = b.pred();
    b.op("setp.lt.s32 %s, %s, 1", empty, numTileItems);
    String loaded = b.label("dfor_loaded");
    b.op("@%s bra.uni %s", empty, loaded);
    b.op("mov.b64 %s, %s", carry, dforFirstValue(words, blockStarts, tileOffset, referenceWords));
    String lastIndex = b.b32();
    b.op("add.s32 %s, %s, -1", lastIndex, numTileItems);
    for (int i = 0; i < items; i++) {
      // Past the tile's end, the tile's last row's delta is read, and counts as 0.
      String index = dforIndex(i);
      String past = b.pred();
      b.op("setp.gt.s32 %s, %s, %s", past, index, lastIndex);
      b.op("min.s32 %s, %s, %s", index, index, lastIndex);
      String delta = dforDelta(words, blockStarts, tileOffset, index, referenceWords);
      b.op("selp.b64 %s, 0, %s, %s", sums[i], delta, past);
    }
    b.place(loaded);
    for (int i = 0; i < items; i++) {
      warpTotal(sums[i], i, totalsBase, lastLane);
    }
    b.op("bar.sync 0");
    String[] values = new String[items];
    for (int i = 0; i < items; i++) {
      String before = b.b64();
      b.op("mov.b64 %s, %s", before, carry);
      for (int w = 0; w < warps; w++) {
        String total = b.b64();
        b.op("ld.shared.u64 %s, [%s+%d]", total, DFOR_TOTALS, 8 * (i * warps + w));
        String earlier = b.pred();
        b.op("setp.gt.u32 %s, %s, %d", earlier, warp, w);
        b.op("@%s add.s64 %s, %s, %s", earlier, before, before, total);
        b.op("add.s64 %s, %s, %s", carry, carry, total);
      }
      String value = b.b64();
      b.op("add.s64 %s, %s, %s", value, before, sums[i]);
      if (referenceWords == 1) {
        String low = b.b32();
        b.op("cvt.u32.u64 %s, %s", low, value);
        b.op("cvt.s64.s32 %s, %s", value, low);
      }
      values[i] = value;
    }
    b.op("bar.sync 0"); // DFOR_TOTALS is reused by the next GPU-DFOR column
    return values;
  }

  /** Item {@code i}'s index in the tile (.b32). */
  private String dforIndex(int i) {
    String index = b.b32();
    b.op("add.s32 %s, %s, %d", index, thread, i * warps * WARP_THREADS);
    return index;
  }

  /** The delta of the tile's row {@code index} (.b32), a GPU-FOR value (.b64). */
  private String dforDelta(String words, String blockStarts, String tileOffset, String index,
      int referenceWords) {
    String index64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", index64, index);
    String row = b.b64();
    b.op("add.s64 %s, %s, %s", row, tileOffset, index64);
    return ColumnLoads.forValue(b, words, blockStarts, row, referenceWords);
  }

  /** The GPU-DFOR set's first value (.b64), stored just before its first block. */
  private String dforFirstValue(String words, String blockStarts, String tileOffset,
      int referenceWords) {
    String firstBlock = b.b64();
    b.op("shr.s64 %s, %s, 7", firstBlock, tileOffset);
    String startAddress = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", startAddress, firstBlock, blockStarts);
    String start = b.b32();
    b.op("ld.global.nc.s32 %s, [%s]", start, startAddress);
    b.op("sub.s32 %s, %s, %d", start, start, referenceWords);
    String start64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", start64, start);
    String firstAddress = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", firstAddress, start64, words);
    return ColumnLoads.readSigned(b, firstAddress, referenceWords);
  }

  /**
   * Item {@code i}'s deltas summed over its warp, in place, and the warp's total (its last lane's
   * sum) into the tile's shared totals.
   */
  private void warpTotal(String sum, int i, String totalsBase, String lastLane) {
    warpInclusiveSum64(sum);
    String slot = b.b32();
    b.op("add.s32 %s, %s, %d", slot, warp, i * warps);
    b.op("mad.lo.u32 %s, %s, 8, %s", slot, slot, totalsBase);
    b.op("@%s st.shared.u64 [%s], %s", lastLane, slot, sum);
  }

  /** scan.cuh WarpInclusiveSum of a .b32 value, in place. */
  private void warpInclusiveSum(String value) {
    for (int offset = 1; offset < WARP_THREADS; offset <<= 1) {
      String other = b.b32();
      String inRange = b.pred();
      // c = 0: lanes below `offset` get their own value back and inRange false.
      b.op("shfl.sync.up.b32 %s|%s, %s, %d, 0, -1", other, inRange, value, offset);
      b.op("@%s add.s32 %s, %s, %s", inRange, value, value, other);
    }
  }

  /**
   * scan.cuh BlockExclusiveSum over the striped tile (item i of thread t is tile row
   * t + i * blockThreads): each item's exclusive prefix in the tile, and the tile's total (both
   * .b32, in every thread). Flags of rows past the tile's end must be 0.
   */
  String[] blockExclusiveSum(String[] flags) {
    int segments = items * warps;
    b.declare(".shared .align 4 .b32 scan_segments[" + segments + "]");
    b.declare(".shared .align 4 .b32 scan_total");
    String[] exclusive = new String[items + 1];
    String segmentBase = b.b32();
    b.op("mov.u32 %s, scan_segments", segmentBase);
    String lastLane = b.pred();
    b.op("setp.eq.u32 %s, %s, %d", lastLane, lane, WARP_THREADS - 1);
    for (int i = 0; i < items; i++) {
      String inclusive = b.b32();
      b.op("mov.b32 %s, %s", inclusive, flags[i]);
      warpInclusiveSum(inclusive);
      exclusive[i] = b.b32();
      b.op("sub.s32 %s, %s, %s", exclusive[i], inclusive, flags[i]);
      String slot = segmentSlot(segmentBase, i);
      b.op("@%s st.shared.u32 [%s], %s", lastLane, slot, inclusive);
    }
    b.op("bar.sync 0");
    // Warp 0 scans the segment totals, one per lane.
    String skip = b.label("segments_done");
    String notWarp0 = b.pred();
    b.op("setp.ge.u32 %s, %s, %d", notWarp0, thread, WARP_THREADS);
    b.op("@%s bra %s", notWarp0, skip);
    String isSegment = b.pred();
    b.op("setp.lt.u32 %s, %s, %d", isSegment, lane, segments);
    String laneSlot = b.b32();
    b.op("mad.lo.u32 %s, %s, 4, %s", laneSlot, lane, segmentBase);
    String segmentTotal = b.b32();
    b.op("mov.b32 %s, 0", segmentTotal);
    b.op("@%s ld.shared.u32 %s, [%s]", isSegment, segmentTotal, laneSlot);
    String inclusive = b.b32();
    b.op("mov.b32 %s, %s", inclusive, segmentTotal);
    warpInclusiveSum(inclusive);
    String offset = b.b32();
    b.op("sub.s32 %s, %s, %s", offset, inclusive, segmentTotal);
    b.op("@%s st.shared.u32 [%s], %s", isSegment, laneSlot, offset);
    b.op("@%s st.shared.u32 [scan_total], %s", lastLane, inclusive);
    b.place(skip);
    b.op("bar.sync 0");
    for (int i = 0; i < items; i++) {
      String segmentOffset = b.b32();
      b.op("ld.shared.u32 %s, [%s]", segmentOffset, segmentSlot(segmentBase, i));
      b.op("add.s32 %s, %s, %s", exclusive[i], exclusive[i], segmentOffset);
    }
    exclusive[items] = b.b32();
    b.op("ld.shared.u32 %s, [scan_total]", exclusive[items]);
    b.op("bar.sync 0");
    return exclusive;
  }

  /** The shared address of segment (item, warp): scan_segments[item * warps + warp]. */
  private String segmentSlot(String segmentBase, int item) {
    String index = b.b32();
    b.op("add.s32 %s, %s, %d", index, warp, item * warps);
    String slot = b.b32();
    b.op("mad.lo.u32 %s, %s, 4, %s", slot, index, segmentBase);
    return slot;
  }

  /**
   * lookback.cuh BlockTilePrefix: the sum of the totals of the tiles before {@code tile}, in every
   * thread (.b64). Publishes this tile's aggregate, then walks back ({@link #walkBack}).
   *
   * @param tileStatus the .b64 global address of the status words (zeroed before the launch)
   * @param tile the .b64 tile index
   * @param total the .b64 tile total, the same in every thread
   */
  String tilePrefix(String tileStatus, String tile, String total) {
    return lookBack(tileStatus, tile, total, false);
  }

  /**
   * The first half of the look-back: thread 0 publishes the tile's total, as its aggregate, or as
   * its inclusive prefix where it is the first tile. The later tiles' walks read it; the earlier
   * it is published, the less they wait.
   */
  void publishAggregate(String tileStatus, String tile, String total) {
    String firstThread = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", firstThread, thread);
    String firstTile = b.pred();
    b.op("setp.eq.s64 %s, %s, 0", firstTile, tile);
    String aggregate = status(FLAG_AGGREGATE, total);
    String prefix = status(FLAG_PREFIX, total);
    String word = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", word, prefix, aggregate, firstTile);
    String own = statusAddress(tileStatus, tile);
    b.op("@%s st.relaxed.gpu.global.u64 [%s], %s", firstThread, own, word);
  }

  /**
   * The second half of the look-back, after {@link #publishAggregate}: warp 0 walks back over 32
   * predecessors at a time until one knows its prefix, then publishes this tile's inclusive
   * prefix. Returns the sum of the earlier tiles' totals, in every thread (.b64).
   */
  String walkBack(String tileStatus, String tile, String total) {
    return lookBack(tileStatus, tile, total, true);
  }

  /** The look-back by warp 0; publishes the tile's aggregate first unless {@code published}. */
  private String lookBack(String tileStatus, String tile, String total, boolean published) {
    b.declare(".shared .align 8 .b64 lookback_prefix");
    String skip = b.label("lookback_done");
    String notWarp0 = b.pred();
    b.op("setp.ge.u32 %s, %s, %d", notWarp0, thread, WARP_THREADS);
    b.op("@%s bra %s", notWarp0, skip);
    String firstLane = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", firstLane, lane);
    String exclusive = b.b64();
    b.op("mov.b64 %s, 0", exclusive);
    String own = statusAddress(tileStatus, tile);
    String firstTile = b.pred();
    b.op("setp.eq.s64 %s, %s, 0", firstTile, tile);
    String walk = b.label("lookback_walk");
    String publish = b.label("lookback_publish");
    String end = b.label("lookback_store");
    b.op("@!%s bra %s", firstTile, walk);
    // The first tile's prefix is 0; its status is its total.
    b.op("bra.uni %s", published ? end : publish);
    b.place(walk);
    if (!published) {
      storeStatus(firstLane, own, FLAG_AGGREGATE, total);
    }
    String windowEnd = b.b64();
    b.op("add.s64 %s, %s, -1", windowEnd, tile);
    String lane64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", lane64, lane);
    String window = b.label("lookback_window");
    String wait = b.label("lookback_wait");
    b.place(window);
    String predecessor = b.b64();
    b.op("sub.s64 %s, %s, %s", predecessor, windowEnd, lane64);
    String exists = b.pred();
    b.op("setp.ge.s64 %s, %s, 0", exists, predecessor);
    String address = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", address, predecessor, tileStatus);
    String word = b.b64();
    b.place(wait);
    // Tiles before tile 0 read as an inclusive prefix of 0.
    b.op("mov.b64 %s, %d", word, FLAG_PREFIX << TILE_FLAG_SHIFT);
    b.op("@%s ld.relaxed.gpu.global.u64 %s, [%s]", exists, word, address);
    String flag = b.b64();
    b.op("shr.u64 %s, %s, %d", flag, word, TILE_FLAG_SHIFT);
    String invalid = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", invalid, flag);
    String anyInvalid = b.pred();
    b.op("vote.sync.any.pred %s, %s, -1", anyInvalid, invalid);
    b.op("@%s bra %s", anyInvalid, wait);
    String isPrefix = b.pred();
    b.op("setp.eq.u64 %s, %s, %d", isPrefix, flag, FLAG_PREFIX);
    String prefixLanes = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", prefixLanes, isPrefix);
    // The nearest predecessor with a PREFIX is the lowest such lane (__ffs - 1); it and the
    // lanes nearer to this tile contribute.
    String lastLane = b.b32();
    String reversed = b.b32();
    b.op("brev.b32 %s, %s", reversed, prefixLanes);
    b.op("bfind.shiftamt.u32 %s, %s", lastLane, reversed);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, prefixLanes);
    b.op("@%s mov.b32 %s, %d", none, lastLane, WARP_THREADS - 1);
    String contributes = b.pred();
    b.op("setp.le.u32 %s, %s, %s", contributes, lane, lastLane);
    String contribution = b.b64();
    b.op("and.b64 %s, %s, %d", contribution, word, TILE_VALUE_MASK);
    b.op("@!%s mov.b64 %s, 0", contributes, contribution);
    for (int offset = WARP_THREADS / 2; offset > 0; offset >>= 1) {
      String other = shuffleXor64(b, contribution, offset);
      b.op("add.s64 %s, %s, %s", contribution, contribution, other);
    }
    b.op("add.s64 %s, %s, %s", exclusive, exclusive, contribution);
    String found = b.pred();
    b.op("not.pred %s, %s", found, none);
    String done = b.label("lookback_found");
    b.op("@%s bra %s", found, done);
    b.op("sub.s64 %s, %s, %d", windowEnd, windowEnd, WARP_THREADS);
    b.op("bra.uni %s", window);
    b.place(done);
    String inclusive = b.b64();
    b.op("add.s64 %s, %s, %s", inclusive, exclusive, total);
    storeStatus(firstLane, own, FLAG_PREFIX, inclusive);
    if (!published) {
      b.op("bra.uni %s", end);
      b.place(publish);
      storeStatus(firstLane, own, FLAG_PREFIX, total);
    }
    b.place(end);
    b.op("@%s st.shared.u64 [lookback_prefix], %s", firstLane, exclusive);
    b.place(skip);
    b.op("bar.sync 0");
    String prefix = b.b64();
    b.op("ld.shared.u64 %s, [lookback_prefix]", prefix);
    return prefix;
  }

  /** The .b64 global address of {@code tile}'s status word. */
  private String statusAddress(String tileStatus, String tile) {
    String own = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", own, tile, tileStatus);
    return own;
  }

  /**
   * Where {@code when} holds, stores the status word of {@code flag} and {@code value} at
   * {@code own}.
   */
  private void storeStatus(String when, String own, long flag, String value) {
    b.op("@%s st.relaxed.gpu.global.u64 [%s], %s", when, own, status(flag, value));
  }

  /** A status word: the flag in the top 2 bits, the value in the low 62. */
  private String status(long flag, String value) {
    String word = b.b64();
    b.op("and.b64 %s, %s, %d", word, value, TILE_VALUE_MASK);
    b.op("or.b64 %s, %s, %d", word, word, flag << TILE_FLAG_SHIFT);
    return word;
  }

  /** A new .b32: the lowest lane set in the lane mask {@code mask} (all ones when none is). */
  static String lowestLane(PtxBuilder b, String mask) {
    String lowest = b.b32();
    b.op("neg.s32 %s, %s", lowest, mask);
    b.op("and.b32 %s, %s, %s", lowest, lowest, mask);
    String lane = b.b32();
    b.op("bfind.u32 %s, %s", lane, lowest);
    return lane;
  }

  /** The .b64 {@code x} of the lane {@code offset} away (shfl.sync.bfly, as two 32-bit halves). */
  static String shuffleXor64(PtxBuilder b, String x, int offset) {
    String low = b.b32();
    String high = b.b32();
    b.op("mov.b64 {%s, %s}, %s", low, high, x);
    String otherLow = b.b32();
    String otherHigh = b.b32();
    b.op("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", otherLow, low, offset);
    b.op("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", otherHigh, high, offset);
    String other = b.b64();
    b.op("mov.b64 %s, {%s, %s}", other, otherLow, otherHigh);
    return other;
  }
}
