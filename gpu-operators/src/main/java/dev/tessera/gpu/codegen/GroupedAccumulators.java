package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import java.util.List;

/**
 * A grouped aggregate's accumulation written into the generated kernel, for functions of
 * integral inputs ({@link RegisterAccumulators#integralFunctions}): hash_aggregate.cuh's
 * AggregateItem with each function's kind and type known, so with no loop over the plan's
 * functions, no switch on kinds and types, and no call around it. The kernel finds the row's
 * group with one small prelude call ({@code tessera_agg_find_group}: the direct map, else the
 * hash table); then, as AggregateItem does:
 * <ul>
 *   <li>when every active lane of the warp has the same group, the warp reduces its rows with
 *       shuffles and the leader lane merges the result once per function (AccumulateWarp);
 *   <li>otherwise each active row is accumulated on its own (AccumulateRow);
 * </ul>
 * into the group's entry of the per-block table in shared memory (LocalTable.Find: a few
 * slots from the group's hash, claimed by compare-and-swap), or the group's global
 * accumulators when the block's table has no room for it. The per-block table is reset and
 * merged into the global accumulators by the prelude, as for the interpreter kernel, so the
 * results are the same: counts and int128 sums exact whatever the order, integer minimum and
 * maximum the same whichever row came first.
 */
final class GroupedAccumulators {
  /** Functions at most: their inputs live across the group lookup's call. */
  static final int MAX_FUNCTIONS = 4;
  // hash_aggregate.cuh: kLocalProbes, kEmpty and LocalTable.Find's multiplier.
  private static final int LOCAL_PROBES = 4;
  private static final int EMPTY = -1;
  private static final long LOCAL_HASH = 0x9e3779b1L;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final ProgramEmitter body;
  private final int functions;
  // The plan (global) and the per-block table: entries - 1, and its arrays' shared addresses.
  private String plan;
  private String entries;
  private String mask;
  private String values;
  private String highs;
  private String keys;
  private String seen;

  GroupedAccumulators(PtxBuilder b, AggregateSpec spec, ProgramEmitter body) {
    this.b = b;
    this.spec = spec;
    this.body = body;
    this.functions = spec.functions().size();
  }

  /** Whether {@code spec} is a grouped aggregate whose functions this class accumulates. */
  static boolean admits(AggregateSpec spec) {
    return spec.keyCount() > 0 && spec.functions().size() <= MAX_FUNCTIONS
        && RegisterAccumulators.integralFunctions(spec);
  }

  private Kind kind(int f) {
    return spec.functions().get(f).kind();
  }

  private boolean counts(int f) {
    return kind(f) == Kind.COUNT_ROWS || kind(f) == Kind.COUNT;
  }

  /**
   * Before the tile loop: the per-block table's layout (LocalTable.In: values[F][E], highs[F][E],
   * keys[E], seen[F][E]) from its shared symbol {@code local} and the plan's entry count.
   */
  void begin(String local) {
    b.comment("the per-block table's arrays");
    plan = body.global(body.loadParam("u64", "plan"));
    entries = b.b32();
    b.op("ld.global.nc.u32 %s, [%s+%d]", entries, plan,
        AggregatePlan.headerField(AggregatePlan.H_LOCAL_ENTRIES));
    mask = b.b32();
    b.op("add.s32 %s, %s, -1", mask, entries);
    values = b.b32();
    b.op("mov.u32 %s, %s", values, local);
    highs = b.b32();
    b.op("mad.lo.u32 %s, %s, %d, %s", highs, entries, 8 * functions, values);
    keys = b.b32();
    b.op("mad.lo.u32 %s, %s, %d, %s", keys, entries, 8 * functions, highs);
    seen = b.b32();
    b.op("mad.lo.u32 %s, %s, 4, %s", seen, entries, keys);
  }

  /**
   * One item, every lane of the warp: {@code active} (b32) whether the row is aggregated,
   * {@code group} its group (b32, from tessera_agg_find_group), {@code inputs} each function's
   * input (null for COUNT_ROWS).
   */
  void accumulate(String active, String group, List<Val> inputs) {
    b.comment("the item's accumulation");
    // The lanes leave the group lookup at different times (one may insert a group others wait
    // for): the warp meets again before its votes and shuffles.
    b.op("bar.warp.sync -1");
    String end = b.label("accumulated");
    String activeP = b.pred();
    b.op("setp.ne.s32 %s, %s, 0", activeP, active);
    String activeLanes = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", activeLanes, activeP);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, activeLanes);
    b.op("@%s bra.uni %s", none, end);
    // The leader: the lowest active lane; the warp is uniform when every active lane has its
    // group.
    String lowest = b.b32();
    b.op("neg.s32 %s, %s", lowest, activeLanes);
    b.op("and.b32 %s, %s, %s", lowest, lowest, activeLanes);
    String leader = b.b32();
    b.op("bfind.u32 %s, %s", leader, lowest);
    String leaderGroup = b.b32();
    b.op("shfl.sync.idx.b32 %s, %s, %s, 31, -1", leaderGroup, group, leader);
    String same = b.pred();
    b.op("setp.eq.s32 %s, %s, %s", same, group, leaderGroup);
    b.op("or.pred %s, %s, !%s", same, same, activeP);
    String uniform = b.pred();
    b.op("vote.sync.all.pred %s, %s, -1", uniform, same);
    String rowwise = b.label("rowwise");
    b.op("@!%s bra.uni %s", uniform, rowwise);

    // The warp's rows at once (AccumulateWarp).
    String[] low = new String[functions];
    String[] high = new String[functions];
    String[] any = new String[functions];
    for (int f = 0; f < functions; f++) {
      reduce(f, activeP, activeLanes, inputs.get(f), low, high, any);
    }
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String notLeader = b.pred();
    b.op("setp.ne.u32 %s, %s, %s", notLeader, lane, leader);
    b.op("@%s bra %s", notLeader, end);
    String entry = find(leaderGroup);
    for (int f = 0; f < functions; f++) {
      merge(f, entry, leaderGroup, low[f], high[f], any[f]);
    }
    b.op("bra %s", end);

    // Each active row on its own (AccumulateRow).
    b.place(rowwise);
    b.op("@!%s bra %s", activeP, end);
    String rowEntry = find(group);
    for (int f = 0; f < functions; f++) {
      Val v = inputs.get(f);
      String valid = v == null || v.valid() == null ? null : v.valid();
      String one = b.b64();
      b.op("mov.b64 %s, 1", one);
      if (counts(f)) {
        merge(f, rowEntry, group, one, null, valid);
      } else {
        String sign = null;
        if (kind(f) == Kind.SUM || kind(f) == Kind.SUM_DECIMAL) {
          sign = b.b64();
          b.op("shr.s64 %s, %s, 63", sign, v.value());
        }
        merge(f, rowEntry, group, v.value(), sign, valid);
      }
    }
    b.place(end);
  }

  /**
   * Function f over the warp's active lanes, in every lane: {@code low} (count, sum's low word
   * or minimum/maximum), {@code high} (a sum's high word) and {@code any} (a predicate: some
   * lane had a valid input; null for counts, whose merge skips a zero count).
   */
  private void reduce(int f, String activeP, String activeLanes, Val v, String[] low,
      String[] high, String[] any) {
    Kind kind = kind(f);
    String valid = activeP;
    if (v != null && v.valid() != null) {
      valid = b.pred();
      b.op("and.pred %s, %s, %s", valid, activeP, v.valid());
    }
    if (counts(f)) {
      String lanes = activeLanes;
      if (kind == Kind.COUNT) {
        lanes = b.b32();
        b.op("vote.sync.ballot.b32 %s, %s, -1", lanes, valid);
      }
      String count = b.b32();
      b.op("popc.b32 %s, %s", count, lanes);
      low[f] = b.b64();
      b.op("cvt.u64.u32 %s, %s", low[f], count);
      return;
    }
    any[f] = b.pred();
    b.op("vote.sync.any.pred %s, %s, -1", any[f], valid);
    String x = b.b64();
    long identity = kind == Kind.MIN ? Long.MAX_VALUE : kind == Kind.MAX ? Long.MIN_VALUE : 0;
    b.op("selp.b64 %s, %s, %d, %s", x, v.value(), identity, valid);
    String h = null;
    if (kind == Kind.SUM || kind == Kind.SUM_DECIMAL) {
      h = b.b64();
      b.op("shr.s64 %s, %s, 63", h, x);
    }
    for (int offset = 16; offset >= 1; offset >>= 1) {
      String other = TilePrimitives.shuffleXor64(b, x, offset);
      switch (kind) {
        case SUM, SUM_DECIMAL -> {
          String otherHigh = TilePrimitives.shuffleXor64(b, h, offset);
          b.op("add.cc.u64 %s, %s, %s", x, x, other);
          b.op("addc.u64 %s, %s, %s", h, h, otherHigh);
        }
        case MIN -> b.op("min.s64 %s, %s, %s", x, x, other);
        case MAX -> b.op("max.s64 %s, %s, %s", x, x, other);
        default -> throw new IllegalStateException("admits() let " + kind + " through");
      }
    }
    low[f] = x;
    high[f] = h;
  }

  /**
   * LocalTable.Find: the entry of the per-block table holding {@code group} (b32), claiming an
   * empty one of the few slots looked at; -1 when they hold other groups (or there is no table).
   */
  private String find(String group) {
    String entry = b.b32();
    b.op("mov.b32 %s, -1", entry);
    String done = b.label("found");
    String noTable = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", noTable, entries);
    b.op("@%s bra %s", noTable, done);
    String slot = b.b32();
    b.op("mul.lo.u32 %s, %s, %d", slot, group, LOCAL_HASH);
    b.op("shr.u32 %s, %s, 7", slot, slot);
    String hit = b.label("hit");
    for (int probe = 0; probe < LOCAL_PROBES; probe++) {
      String next = b.label("probe");
      b.op("and.b32 %s, %s, %s", slot, slot, mask);
      String address = b.b32();
      b.op("mad.lo.u32 %s, %s, 4, %s", address, slot, keys);
      String held = b.b32();
      b.op("ld.volatile.shared.u32 %s, [%s]", held, address);
      String p = b.pred();
      b.op("setp.eq.s32 %s, %s, %s", p, held, group);
      b.op("@%s bra %s", p, hit);
      b.op("setp.ne.s32 %s, %s, %d", p, held, EMPTY);
      b.op("@%s bra %s", p, next);
      String before = b.b32();
      b.op("atom.shared.cas.b32 %s, [%s], %d, %s", before, address, EMPTY, group);
      b.op("setp.eq.s32 %s, %s, %d", p, before, EMPTY);
      b.op("@%s bra %s", p, hit);
      b.op("setp.eq.s32 %s, %s, %s", p, before, group);
      b.op("@%s bra %s", p, hit);
      b.place(next);
      b.op("add.s32 %s, %s, 1", slot, slot);
    }
    b.op("bra %s", done);
    b.place(hit);
    b.op("mov.b32 %s, %s", entry, slot);
    b.place(done);
    return entry;
  }

  /**
   * hash_aggregate.cuh Merge of function f's (low, high) into {@code group}'s accumulators: the
   * per-block entry {@code entry} when there is one (>= 0), else the global ones. {@code when}:
   * a predicate that must hold (null: always); counts also skip a zero {@code low}. For a sum,
   * {@code high} is the int128's high word (the carry out of the low word joins it, as
   * AtomicAdd128 does).
   */
  private void merge(int f, String entry, String group, String low, String high, String when) {
    String skip = b.label("merged" + f);
    if (when != null) {
      b.op("@!%s bra %s", when, skip);
    }
    if (counts(f)) {
      String zero = b.pred();
      b.op("setp.eq.s64 %s, %s, 0", zero, low);
      b.op("@%s bra %s", zero, skip);
    }
    // The accumulator's generic addresses: shared (the entry) or global (the group).
    String valueAt = b.b64();
    String highAt = b.b64();
    String seenAt = b.b64();
    String global = b.label("global" + f);
    String addressed = b.label("addressed" + f);
    String outside = b.pred();
    b.op("setp.lt.s32 %s, %s, 0", outside, entry);
    b.op("@%s bra %s", outside, global);
    String at = b.b32();
    b.op("mad.lo.u32 %s, %s, %s, %s", at, entries, String.valueOf(f), entry);
    sharedAddress(valueAt, values, at, 8);
    sharedAddress(highAt, highs, at, 8);
    sharedAddress(seenAt, seen, at, 4);
    b.op("bra %s", addressed);
    b.place(global);
    String group64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", group64, group);
    globalAddress(valueAt, f, AggregatePlan.F_VALUE, group64, 8);
    globalAddress(highAt, f, AggregatePlan.F_HIGH, group64, 8);
    globalAddress(seenAt, f, AggregatePlan.F_SEEN, group64, 4);
    b.place(addressed);

    String old = b.b64();
    switch (kind(f)) {
      case COUNT_ROWS, COUNT -> b.op("atom.add.u64 %s, [%s], %s", old, valueAt, low);
      case SUM, SUM_DECIMAL -> {
        b.op("atom.add.u64 %s, [%s], %s", old, valueAt, low);
        String sum = b.b64();
        b.op("add.s64 %s, %s, %s", sum, old, low);
        String carried = b.pred();
        b.op("setp.lt.u64 %s, %s, %s", carried, sum, old);
        String highAdd = b.b64();
        b.op("selp.b64 %s, 1, 0, %s", highAdd, carried);
        b.op("add.s64 %s, %s, %s", highAdd, highAdd, high);
        String zero = b.pred();
        b.op("setp.eq.s64 %s, %s, 0", zero, highAdd);
        String oldHigh = b.b64();
        b.op("@!%s atom.add.u64 %s, [%s], %s", zero, oldHigh, highAt, highAdd);
      }
      case MIN -> b.op("atom.min.s64 %s, [%s], %s", old, valueAt, low);
      case MAX -> b.op("atom.max.s64 %s, [%s], %s", old, valueAt, low);
      default -> throw new IllegalStateException("admits() let " + kind(f) + " through");
    }
    if (!counts(f)) {
      // MarkSeen: written once, read first so that the common case writes nothing.
      String seenNow = b.b32();
      b.op("ld.volatile.u32 %s, [%s]", seenNow, seenAt);
      String unseen = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", unseen, seenNow);
      b.op("@%s st.u32 [%s], 1", unseen, seenAt);
    }
    b.place(skip);
  }

  /** {@code into} = the generic address of element {@code at} of shared array {@code base}. */
  private void sharedAddress(String into, String base, String at, int width) {
    String address = b.b32();
    b.op("mad.lo.u32 %s, %s, %d, %s", address, at, width, base);
    String wide = b.b64();
    b.op("cvt.u64.u32 %s, %s", wide, address);
    b.op("cvta.shared.u64 %s, %s", into, wide);
  }

  /** {@code into} = the generic address of {@code group}'s element of function f's array. */
  private void globalAddress(String into, int f, int word, String group64, int width) {
    String array = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", array, plan,
        AggregatePlan.functionField(spec.keyCount(), f, word));
    b.op("mad.lo.s64 %s, %s, %d, %s", into, group64, width, array);
  }

  /** The inputs of the spec's functions among the program's results (null for COUNT_ROWS). */
  static List<Val> inputs(AggregateSpec spec, Val[] values, int[] outputs) {
    return spec.functions().stream()
        .map(f -> f.kind() == AggregateFunction.Kind.COUNT_ROWS ? null
            : values[outputs[f.input()]])
        .toList();
  }
}
