package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * A warp's queue, in shared memory, of the rows its filter kept, waiting for the aggregation's
 * update; for a kernel whose update is long (its groups found in the global table: several keys,
 * or a string key) behind a filter. Without it a warp runs the update for an item when any of its
 * 32 rows is kept: with one row in 30 kept (SSB's Q3.1: two thirds of the warps' items hold a
 * kept row) nearly every warp runs the lookup, its string hashing and compares, for one or two
 * lanes. With it, the kept rows' aggregation inputs wait here until 32 of them have come, and the
 * warp runs the update once for all of them, every lane busy. The rows' order changes, which no
 * aggregate function here depends on (sums are exact, MIN and MAX and counts commute). SSB at
 * SF10 on an H200 (ncu, 128 launches): Q2.1 6.69 to 4.90 ms, Q3.1 11.88 to 8.15, Q4.1 9.27 to
 * 7.08. A kernel that slices its groups among blocks queues the rows of its block's slice
 * (AggregateUpdateGenerator.slicedTableEntries), a block a multiprocessor of up to 1,024
 * threads.
 *
 * <p>A warp's part is a ring of {@link #SLOTS} slots. A kept row takes the next position from the
 * warp's tail (a shared counter of the rows ever queued) and stores itself there, where the
 * program defined its values; once the lanes meet, each reads the tail, and the head (rows taken
 * out) and count sit in registers, the same in every lane. A position's slot is it modulo SLOTS.
 * Per slot: each input column's canonical value, one region of {@code SLOTS} values per column the
 * update reads: {@code .b64} regions first, then {@code .b32} ones for a column of at most 4 bytes
 * (its canonical value is the sign extension of its low word, so that word is all it keeps); then
 * each string column's length ({@code .b32}), then a word of null flags (bit i: the i-th queued
 * column is valid; written only where one can be NULL). Lanes of a slot region read and write
 * consecutive words.
 */
final class KeptRowQueue {
  /** A ring of 64: the 31 rows the update may leave waiting, and a whole warp's next 32. */
  static final int SLOTS = 64;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final String symbol;
  private final int warps;
  private final Layout layout;
  /** Per input column, whether it can be NULL: known at {@link #push}. */
  private boolean[] nullable;
  private boolean anyNullable;

  private String warpBase;
  /** The warp's count of rows ever queued (.shared .u32), its address. */
  private String tail;
  /** Rows taken out of the queue so far, and rows in it (registers, the same in every lane). */
  private String head;
  private String count;

  /**
   * Whether the kernel of {@code spec} with a filter queues its kept rows: where its groups are
   * found in the global table ({@link LocalKeyTable#holds} false, with keys), whose lookup is what
   * a sparsely kept warp runs for a lane or two; and whose queues, in blocks of {@code
   * blockThreads}, fit {@link #MAX_BLOCK_BYTES}.
   */
  static boolean admits(AggregateSpec spec, int blockThreads) {
    return spec.keyCount() > 0 && !LocalKeyTable.holds(spec)
        && blockBytes(spec, blockThreads) <= MAX_BLOCK_BYTES;
  }

  /**
   * The most shared memory a block's queues take: 16 KiB, as much as the per-block table, holds
   * the 4 warps' queues of 7 columns of 8 bytes, none of them strings. SSB's Q2-Q4 take 6-9 KiB.
   */
  static final int MAX_BLOCK_BYTES = 16 << 10;

  /** Shared-memory bytes of the queues of a block of {@code blockThreads}. */
  static int blockBytes(AggregateSpec spec, int blockThreads) {
    return blockThreads / TilePrimitives.WARP_THREADS * Layout.of(spec).warpBytes();
  }

  /** All the shared memory the queues of a block of {@code blockThreads} declare, tails too. */
  static int sharedBytes(AggregateSpec spec, int blockThreads) {
    return blockBytes(spec, blockThreads)
        + blockThreads / TilePrimitives.WARP_THREADS * Integer.BYTES;
  }

  /**
   * Where a slot's parts lie in a warp's part, per input column of the spec (offsets of the
   * {@code SLOTS}-entry regions; 0 for a column the update does not read or that is no string).
   *
   * @param columns the input columns the update reads (keys and functions' inputs), in order
   * @param narrow per column read, whether its region holds {@code .b32} words ({@link #narrow})
   * @param flagBit per column read, its bit in a slot's null flags
   * @param flagsOffset the null flags' region (there whether or not a column can be NULL)
   * @param warpBytes bytes of one warp's part
   */
  private record Layout(List<Integer> columns, int[] valueOffset, boolean[] narrow,
      int[] lengthOffset, int[] flagBit, int flagsOffset, int warpBytes) {
    static Layout of(AggregateSpec spec) {
      int inputs = spec.inputTypes().size();
      boolean[] read = new boolean[inputs];
      for (int k = 0; k < spec.keyCount(); k++) {
        read[k] = true;
      }
      for (AggregateFunction f : spec.functions()) {
        if (f.kind() != AggregateFunction.Kind.COUNT_ROWS) {
          read[f.input()] = true;
        }
      }
      List<Integer> columns = new ArrayList<>();
      int[] valueOffset = new int[inputs];
      int[] lengthOffset = new int[inputs];
      boolean[] narrow = new boolean[inputs];
      int[] flagBit = new int[inputs];
      for (int i = 0; i < inputs; i++) {
        if (read[i]) {
          flagBit[i] = 1 << columns.size();
          columns.add(i);
          narrow[i] = narrow(spec.inputTypes().get(i));
        }
      }
      int at = 0;
      for (boolean words : new boolean[] {false, true}) { // the 8-byte regions first: aligned
        for (int i : columns) {
          if (narrow[i] == words) {
            valueOffset[i] = at;
            at += SLOTS * (words ? Integer.BYTES : Long.BYTES);
          }
        }
      }
      for (int i : columns) {
        if (spec.inputTypes().get(i).isString()) {
          lengthOffset[i] = at;
          at += SLOTS * Integer.BYTES;
        }
      }
      return new Layout(List.copyOf(columns), valueOffset, narrow, lengthOffset, flagBit, at,
          at + SLOTS * Integer.BYTES);
    }

    /**
     * Whether a column of {@code type} queues a {@code .b32} word: a fixed-width type of at most
     * 4 bytes, whose canonical value ({@link GroupedAggregateEmitter#canonical}) is the sign
     * extension of its low word.
     */
    static boolean narrow(ColumnType type) {
      return !type.isString() && type.id().width() <= Integer.BYTES;
    }
  }

  /**
   * @param symbol the name of the queue's shared array
   * @param blockThreads the block's threads (fixed at generation: the array's size)
   */
  KeptRowQueue(PtxBuilder b, AggregateSpec spec, String symbol, int blockThreads) {
    this.b = b;
    this.spec = spec;
    this.symbol = symbol;
    this.warps = blockThreads / TilePrimitives.WARP_THREADS;
    this.layout = Layout.of(spec);
    if (layout.columns().size() > Integer.SIZE) {
      throw new IllegalArgumentException("a queued row's null flags hold 32 columns, not "
          + layout.columns().size());
    }
  }

  /** At the kernel's start: the warp's part, an empty ring, in arrays of their own. */
  void begin(String thread) {
    b.declare(".shared .align 8 .b8 " + symbol + "[" + warps * layout.warpBytes() + "]");
    b.declare(".shared .align 4 .b32 " + symbol + "_tail[" + warps + "]");
    String warp = b.b32();
    b.op("shr.u32 %s, %s, 5", warp, thread);
    warpBase = b.b32();
    b.op("mov.u32 %s, %s", warpBase, symbol);
    b.op("mad.lo.u32 %s, %s, %d, %s", warpBase, warp, layout.warpBytes(), warpBase);
    tail = b.b32();
    b.op("mov.u32 %s, %s_tail", tail, symbol);
    b.op("mad.lo.u32 %s, %s, 4, %s", tail, warp, tail);
    emptyRing();
  }

  /**
   * {@link #begin(String)} with the queues at {@code base} (.b32 shared address, 8-aligned), the
   * {@link #sharedBytes} there: where the kernel's static shared memory (48 KiB at most) could
   * not hold them, in its dynamic shared memory.
   */
  void beginAt(String thread, String base) {
    String warp = b.b32();
    b.op("shr.u32 %s, %s, 5", warp, thread);
    warpBase = b.b32();
    b.op("mad.lo.u32 %s, %s, %d, %s", warpBase, warp, layout.warpBytes(), base);
    tail = b.b32();
    b.op("add.u32 %s, %s, %d", tail, base, warps * layout.warpBytes());
    b.op("mad.lo.u32 %s, %s, 4, %s", tail, warp, tail);
    emptyRing();
  }

  /** The warp's tail at 0, then its head and count in registers. */
  private void emptyRing() {
    b.op("st.shared.u32 [%s], 0", tail);
    b.op("bar.warp.sync -1");
    head = b.b32();
    b.op("mov.u32 %s, 0", head);
    count = b.b32();
    b.op("mov.u32 %s, 0", count);
  }

  /**
   * Queues the row of a lane that aggregates it, its input columns from {@code values} at {@code
   * outputs} in canonical form (by {@code update}); where the program's results are defined,
   * before the lanes meet again ({@link #arrived}): stored after, they would hold registers
   * from one item to the next, through the update (83 registers instead of 66 in a kernel of
   * SSB's Q3.1's shape). Once per kernel.
   */
  void push(Val[] values, int[] outputs, GroupedAggregateEmitter update) {
    if (nullable != null) {
      throw new IllegalStateException("a kernel's rows are queued at one place");
    }
    nullable = GroupedAggregateEmitter.nullable(values, outputs);
    for (int i : layout.columns()) {
      anyNullable |= nullable[i];
    }
    b.comment("the kept row into the warp's queue (KeptRowQueue)");
    // The queue's tail counts every row queued; a slot is a position modulo SLOTS. One atomic a
    // lane: with a kept row in 30, few lanes meet on the word. One for the lanes here together
    // (activemask, the lowest lane's atomic, a shuffle) took 74 registers for Q3.1's shape, one
    // block a multiprocessor fewer than 72.
    String slot = b.b32();
    b.op("atom.shared.add.u32 %s, [%s], 1", slot, tail);
    Addresses at = addresses(slot);
    String flags = anyNullable ? b.b32() : null;
    if (flags != null) {
      b.op("mov.u32 %s, 0", flags);
    }
    for (int i : layout.columns()) {
      AggregateValue v = update.canonical(i, values[outputs[i]]);
      if (layout.narrow()[i]) {
        String low = b.b32();
        b.op("cvt.u32.u64 %s, %s", low, v.value());
        b.op("st.shared.b32 [%s+%d], %s", at.halves, layout.valueOffset()[i], low);
      } else {
        b.op("st.shared.b64 [%s+%d], %s", at.words, layout.valueOffset()[i], v.value());
      }
      if (v.isString()) {
        b.op("st.shared.b32 [%s+%d], %s", at.halves, layout.lengthOffset()[i], v.length());
      }
      if (nullable[i]) {
        String bit = b.b32();
        b.op("selp.b32 %s, %d, 0, %s", bit, layout.flagBit()[i], v.valid());
        b.op("or.b32 %s, %s, %s", flags, flags, bit);
      }
    }
    if (flags != null) {
      b.op("st.shared.b32 [%s+%d], %s", at.halves, layout.flagsOffset(), flags);
    }
  }

  /**
   * Where every lane of the warp is again, after each had its chance to {@link #push}: the rows
   * the queue holds now.
   */
  void arrived() {
    // The lanes' atomics and stores before any lane reads the tail or the slots.
    b.op("bar.warp.sync -1");
    String queued = b.b32();
    b.op("ld.shared.u32 %s, [%s]", queued, tail);
    b.op("sub.u32 %s, %s, %s", count, queued, head);
  }

  /** The .pred of a warp whose queue holds a whole warp's rows. */
  String full() {
    String full = b.pred();
    b.op("setp.ge.u32 %s, %s, %d", full, count, TilePrimitives.WARP_THREADS);
    return full;
  }

  /** The .pred of a warp whose queue holds any row. */
  String pending() {
    String any = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", any, count);
    return any;
  }

  /** What a lane takes from the queue: whether it took a row, and the row's columns. */
  record Taken(String active, IntFunction<AggregateValue> column) {}

  /**
   * The queue's first rows, one a lane (up to 32; lanes past them take none): {@code active}
   * (.b32, 0 or 1) and the columns, each read from shared memory where the update asks for it.
   * Then {@link #release}.
   */
  Taken take() {
    if (nullable == null) {
      throw new IllegalStateException("rows are taken from the queue before any is pushed: the"
          + " slots' layout (which columns can be NULL) is known at the push");
    }
    b.comment("a warp's worth of kept rows out of the queue (KeptRowQueue)");
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String has = b.pred();
    b.op("setp.lt.u32 %s, %s, %s", has, lane, count);
    String active = b.b32();
    b.op("selp.u32 %s, 1, 0, %s", active, has);
    String slot = b.b32();
    b.op("add.u32 %s, %s, %s", slot, head, lane);
    Addresses at = addresses(slot);
    String flags = null;
    if (anyNullable) {
      flags = b.b32();
      b.op("ld.shared.b32 %s, [%s+%d]", flags, at.halves, layout.flagsOffset());
    }
    String rowFlags = flags;
    IntFunction<AggregateValue> column = i -> {
      String value = b.b64();
      if (layout.narrow()[i]) {
        String low = b.b32();
        b.op("ld.shared.b32 %s, [%s+%d]", low, at.halves, layout.valueOffset()[i]);
        b.op("cvt.s64.s32 %s, %s", value, low);
      } else {
        b.op("ld.shared.b64 %s, [%s+%d]", value, at.words, layout.valueOffset()[i]);
      }
      String length = null;
      if (spec.inputTypes().get(i).isString()) {
        length = b.b32();
        b.op("ld.shared.b32 %s, [%s+%d]", length, at.halves, layout.lengthOffset()[i]);
      }
      String valid = null;
      if (nullable[i]) {
        String bit = b.b32();
        b.op("and.b32 %s, %s, %d", bit, rowFlags, layout.flagBit()[i]);
        valid = b.pred();
        b.op("setp.ne.u32 %s, %s, 0", valid, bit);
      }
      return new AggregateValue(value, valid, length);
    };
    return new Taken(active, column);
  }

  /** After the update of what {@link #take} took: those rows leave the queue. */
  void release() {
    // Every lane's reads of the slots before the next push writes them again.
    b.op("bar.warp.sync -1");
    String taken = b.b32();
    b.op("min.u32 %s, %s, %d", taken, count, TilePrimitives.WARP_THREADS);
    b.op("add.u32 %s, %s, %s", head, head, taken);
    b.op("sub.u32 %s, %s, %s", count, count, taken);
  }

  /** Per input column, whether it can be NULL (after {@link #push}). */
  boolean[] nullable() {
    return nullable.clone();
  }

  /** A slot's addresses: of its .b64 words and of its .b32 words (slot taken modulo SLOTS). */
  private record Addresses(String words, String halves) {}

  private Addresses addresses(String slot) {
    String ring = b.b32();
    b.op("and.b32 %s, %s, %d", ring, slot, SLOTS - 1);
    String words = b.b32();
    b.op("mad.lo.u32 %s, %s, 8, %s", words, ring, warpBase);
    String halves = b.b32();
    b.op("mad.lo.u32 %s, %s, 4, %s", halves, ring, warpBase);
    return new Addresses(words, halves);
  }
}
