package dev.tessera.gpu.codegen;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.Predicate;

/**
 * A warp's stack, in shared memory, of the rows that passed the filter's conjuncts before its
 * first probe ({@link ProgramEmitter.Split}), each with the values the rest of its program reads;
 * they wait here for the probe and what follows it. Without the stack a warp runs the probe for an
 * item wherever any of its 32 rows reaches it: SSB's Q1.1 passes 13% of its rows to the date's
 * probe, so nearly every warp probes for every item, with about 4 lanes busy, and then runs the
 * kept rows' decode and sum for about one. With it, the warp runs the rest for 32 rows at once,
 * and the cheap conjuncts' columns are the only ones a thread decodes for every row. Where the
 * filter is a chain of probes (SSB's Q2-Q4: the first keeps one row in 5 to 25) the split comes
 * after the first probe, and the later probes, their keys' decodes, the group's lookup and the
 * kept-row queue's push ({@link KeptRowQueue}) run for 32 rows at once.
 *
 * <p>SSB SF10 on an H200 (ncu, 32 launches a query, against the kernels before): Q1.1 953.5 to
 * 803.9 µs (-15.7%, 60 to 55 registers), Q1.2 and Q1.3 1,445.0 to 1,379.4 (-4.5%: they pass 5.5%
 * of their rows to the probe); Q2.1 2,194.0 to 2,050.8 (-6.5%, 48 to 52 registers), Q3.1 3,627.7
 * to 3,119.7 (-14.0%), Q4.1 2,892.8 to 2,492.6 (-13.8%).
 *
 * <p>An item's lanes push together: a ballot gives each passing lane its place above the stack's
 * top (how many passing lanes are below it), and the top, a register the same in every lane,
 * grows by the ballot's count. After the items that push (a tile's, where each item has its own
 * copy of the code; else each one) the warp pops 32 rows from the top while 32 are there, and, in
 * the kernel's last pass, what is left. Rows leave in another order than they came, which no
 * aggregate function depends on (sums are exact; counts, MIN and MAX commute; the first error is
 * the least row's, whatever the order it is reported in; the kept-row queue reorders rows too).
 *
 * <p>Per slot: the row (.u32), then per carried value its .b64 (.b32 where it is a sign-extended
 * 32-bit value: {@link PtxBuilder#narrow}) and a string's length (.b32), then a word of NULL
 * flags where a value can be NULL. Each is a region of the block's slots, a warp's {@link #slots}
 * one after the other, so that the lanes of a push or a pop touch consecutive words.
 */
final class PrefilteredRows {
  private final PtxBuilder b;
  private final String symbol;
  private final int warps;
  private final int slots;
  private final BitSet carried;
  private final int count;
  /** Per carried instruction, how its value is kept: set by the first {@link #push}. */
  private Layout layout;
  /** The warp's first slot in the block's regions (.b32). */
  private String warpSlot;
  /** Rows on the warp's stack (.b32, the same in every lane). */
  private String top;

  /**
   * How a carried value is kept: {@code narrow}, its .b32 (sign-extended again when taken);
   * {@code string}, with a length; {@code nullable}, with a flag. The same for every item.
   */
  private record Kept(boolean narrow, boolean string, boolean nullable) {}

  private record Layout(Kept[] kept, boolean anyNullable) {}

  /**
   * @param symbol the prefix of the stack's shared arrays
   * @param blockThreads the block's threads (fixed at generation: the arrays' size)
   * @param pushes how many items push between two pops: the stack holds the 31 rows a pop may
   *     leave and 32 for each push
   * @param carried the instructions whose values a row carries (by instruction, out of {@code
   *     count})
   */
  PrefilteredRows(PtxBuilder b, String symbol, int blockThreads, int pushes, BitSet carried,
      int count) {
    this.b = b;
    this.symbol = symbol;
    this.warps = blockThreads / TilePrimitives.WARP_THREADS;
    this.slots = (pushes + 1) * TilePrimitives.WARP_THREADS;
    this.carried = (BitSet) carried.clone();
    this.count = count;
  }

  /** At the kernel's start: the warp's stack, empty. */
  void begin(String thread) {
    warpSlot = b.b32();
    b.op("shr.u32 %s, %s, 5", warpSlot, thread);
    b.op("mul.lo.u32 %s, %s, %d", warpSlot, warpSlot, slots);
    top = b.b32();
    b.op("mov.u32 %s, 0", top);
  }

  /**
   * Every lane of the warp, where each has decided {@code passes} (.pred) for its row {@code row}
   * (.b64, within int32), {@code values} holding the carried values of a lane that passes: those
   * lanes' rows onto the stack.
   */
  void push(String passes, String row, Val[] values) {
    Layout now = layoutOf(values);
    if (layout == null) {
      layout = now;
      declare();
    } else if (!Arrays.equals(layout.kept(), now.kept())) {
      throw new IllegalStateException("an item carries its values otherwise than the first");
    }
    b.comment("the rows that reach the probe onto the warp's stack (PrefilteredRows)");
    String ballot = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", ballot, passes);
    String below = b.b32();
    b.op("mov.u32 %s, %%lanemask_lt", below);
    b.op("and.b32 %s, %s, %s", below, below, ballot);
    b.op("popc.b32 %s, %s", below, below);
    String slot = b.b32();
    b.op("add.u32 %s, %s, %s", slot, top, below);
    Slot at = slot(slot);
    String row32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", row32, row);
    b.op("@%s st.shared.u32 [%s], %s", passes, at.address("rows", 4), row32);
    String flags = layout.anyNullable() ? b.b32() : null;
    if (flags != null) {
      b.op("mov.u32 %s, 0", flags);
    }
    int k = 0;
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1), k++) {
      Kept kept = layout.kept()[k];
      Val v = values[i];
      if (kept.narrow()) {
        b.op("@%s st.shared.b32 [%s], %s", passes, at.address("v" + i, 4), b.narrow(v.value()));
      } else {
        b.op("@%s st.shared.b64 [%s], %s", passes, at.address("v" + i, 8), v.value());
      }
      if (kept.string()) {
        b.op("@%s st.shared.b32 [%s], %s", passes, at.address("l" + i, 4), v.length());
      }
      if (kept.nullable()) {
        String bit = b.b32();
        b.op("selp.b32 %s, %d, 0, %s", bit, 1 << k, v.valid());
        b.op("or.b32 %s, %s, %s", flags, flags, bit);
      }
    }
    if (flags != null) {
      b.op("@%s st.shared.b32 [%s], %s", passes, at.address("flags", 4), flags);
    }
    String pushed = b.b32();
    b.op("popc.b32 %s, %s", pushed, ballot);
    b.op("add.u32 %s, %s, %s", top, top, pushed);
  }

  /**
   * Where a lane skips the code that computes its row's {@code values} and {@code row} (an item
   * outside the tile) but joins the warp's {@link #push} after it: writes each register that
   * push reads and {@code madeInSkipped} accepts (made in the skipped code), so that none is
   * read without being written. ptxas would otherwise keep each of them live from the kernel's
   * start through every loop (they might hold what the last item left), which took 10 of SSB
   * Q1.1's kernel's registers.
   */
  void writeSkipped(String row, Val[] values, Predicate<String> madeInSkipped) {
    List<String> read = new ArrayList<>();
    read.add(row);
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1)) {
      Val v = values[i];
      String narrow = b.narrow(v.value());
      read.add(narrow != null ? narrow : v.value());
      if (v.length() != null) {
        read.add(v.length());
      }
      if (v.valid() != null) {
        read.add(v.valid());
      }
    }
    for (String r : read) {
      if (madeInSkipped.test(r)) {
        b.clear(r);
      }
    }
  }

  /**
   * The .pred of a warp that pops rows now: 32 are there, or, where {@code last} (.pred) holds,
   * any. Every lane's pushes are visible to the others after it.
   */
  String pops(String last) {
    b.op("bar.warp.sync -1");
    String whole = b.pred();
    b.op("setp.ge.u32 %s, %s, %d", whole, top, TilePrimitives.WARP_THREADS);
    String any = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", any, top);
    b.op("and.pred %s, %s, %s", any, any, last);
    b.op("or.pred %s, %s, %s", whole, whole, any);
    return whole;
  }

  /** What a lane took off the stack: its row (.b64) and the carried values, by instruction. */
  record Taken(String row, Val[] values) {}

  /**
   * Where {@link #pops}: the top rows off the stack, one a lane (up to 32); a lane past them
   * branches to {@code none}, one that took a row goes on with it. Before anything pushes again,
   * {@link #pops} syncs the warp, so the slots are read before they are written.
   */
  Taken pop(String none) {
    if (layout == null) {
      throw new IllegalStateException("rows are popped before any is pushed: the slots' layout"
          + " is known at the push");
    }
    b.comment("up to 32 rows off the warp's stack (PrefilteredRows)");
    String taken = b.b32();
    b.op("min.u32 %s, %s, %d", taken, top, TilePrimitives.WARP_THREADS);
    b.op("sub.u32 %s, %s, %s", top, top, taken);
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String idle = b.pred();
    b.op("setp.ge.u32 %s, %s, %s", idle, lane, taken);
    b.op("@%s bra %s", idle, none);
    String slot = b.b32();
    b.op("add.u32 %s, %s, %s", slot, top, lane);
    Slot at = slot(slot);
    String row32 = b.b32();
    b.op("ld.shared.u32 %s, [%s]", row32, at.address("rows", 4));
    String row = b.b64();
    b.op("cvt.u64.u32 %s, %s", row, row32);
    String flags = null;
    if (layout.anyNullable()) {
      flags = b.b32();
      b.op("ld.shared.b32 %s, [%s]", flags, at.address("flags", 4));
    }
    Val[] values = new Val[count];
    int k = 0;
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1), k++) {
      Kept kept = layout.kept()[k];
      String value;
      if (kept.narrow()) {
        String narrow = b.b32();
        b.op("ld.shared.b32 %s, [%s]", narrow, at.address("v" + i, 4));
        value = b.signExtend(narrow);
      } else {
        value = b.b64();
        b.op("ld.shared.b64 %s, [%s]", value, at.address("v" + i, 8));
      }
      String length = null;
      if (kept.string()) {
        length = b.b32();
        b.op("ld.shared.b32 %s, [%s]", length, at.address("l" + i, 4));
      }
      String valid = null;
      if (kept.nullable()) {
        String bit = b.b32();
        b.op("and.b32 %s, %s, %d", bit, flags, 1 << k);
        valid = b.pred();
        b.op("setp.ne.u32 %s, %s, 0", valid, bit);
      }
      values[i] = new Val(value, valid, null, length);
    }
    return new Taken(row, values);
  }

  private Layout layoutOf(Val[] values) {
    Kept[] kept = new Kept[carried.cardinality()];
    boolean anyNullable = false;
    int k = 0;
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1), k++) {
      Val v = values[i];
      if (v == null) {
        throw new IllegalStateException("instruction " + i + " is carried but has no value");
      }
      if (v.error() != null) {
        // Split admits filters whose instructions raise none (ProgramEmitter.keepOnly).
        throw new IllegalStateException("instruction " + i + " carries an error code");
      }
      kept[k] = new Kept(b.narrow(v.value()) != null, v.length() != null, v.valid() != null);
      anyNullable |= v.valid() != null;
    }
    if (k > Integer.SIZE) {
      throw new IllegalArgumentException("a row's NULL flags hold 32 values, not " + k);
    }
    return new Layout(kept, anyNullable);
  }

  /** The block's arrays: each region's slots for every warp. */
  private void declare() {
    int blockSlots = warps * slots;
    b.declare(".shared .align 4 .b32 " + symbol + "_rows[" + blockSlots + "]");
    int k = 0;
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1), k++) {
      Kept kept = layout.kept()[k];
      b.declare(kept.narrow()
          ? ".shared .align 4 .b32 " + symbol + "_v" + i + "[" + blockSlots + "]"
          : ".shared .align 8 .b64 " + symbol + "_v" + i + "[" + blockSlots + "]");
      if (kept.string()) {
        b.declare(".shared .align 4 .b32 " + symbol + "_l" + i + "[" + blockSlots + "]");
      }
    }
    if (layout.anyNullable()) {
      b.declare(".shared .align 4 .b32 " + symbol + "_flags[" + blockSlots + "]");
    }
  }

  /** A slot of the warp's stack: its index in the block's regions. */
  private Slot slot(String slot) {
    String index = b.b32();
    b.op("add.u32 %s, %s, %s", index, warpSlot, slot);
    return new Slot(index);
  }

  private final class Slot {
    private final String index;

    Slot(String index) {
      this.index = index;
    }

    /** The shared address of this slot in region {@code region} of {@code bytes} an entry. */
    String address(String region, int bytes) {
      String at = b.b32();
      b.op("mov.u32 %s, %s_%s", at, symbol, region);
      b.op("mad.lo.u32 %s, %s, %d, %s", at, index, bytes, at);
      return at;
    }
  }
}