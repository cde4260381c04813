package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.util.function.Predicate;

/**
 * A global aggregate's accumulators in a generated kernel's registers: each thread adds every row
 * it aggregates into its own counts, exact 128-bit sums and minimum or maximum, across all the
 * tiles it takes; at the end of the kernel a warp sums its lanes' accumulators with shuffles,
 * thread 0 sums its block's warps' through shared memory and merges them into group 0's global
 * accumulators with one atomic each (the carry of a sum's low word into its high word as
 * hash_aggregate.cuh's AtomicAdd128 does). The result is what
 * hash_aggregate.cuh's per-row path gives: counts and int128 sums are exact whatever the order,
 * and a minimum or maximum of integers is the same whichever row came first.
 *
 * <p>Only integral inputs: a sum of DOUBLE (whole numbers, converted to int128 per row) and the
 * Spark order of floating-point MIN/MAX stay in hash_aggregate.cuh ({@link #admits}).
 */
final class RegisterAccumulators {
  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final ProgramEmitter body;
  private final int warps;
  /** Per function: the count, sum's low word or minimum/maximum; the sum's high word; seen. */
  private final String[] value;
  private final String[] high;
  private final String[] seen;

  /** @param blockThreads the kernel's threads a block, a multiple of 32 */
  RegisterAccumulators(PtxBuilder b, AggregateSpec spec, ProgramEmitter body, int blockThreads) {
    if (blockThreads % TilePrimitives.WARP_THREADS != 0) {
      throw new IllegalArgumentException(blockThreads + " threads a block is not whole warps");
    }
    this.b = b;
    this.spec = spec;
    this.body = body;
    this.warps = blockThreads / TilePrimitives.WARP_THREADS;
    int n = spec.functions().size();
    this.value = new String[n];
    this.high = new String[n];
    this.seen = new String[n];
  }

  /** Whether {@code spec} is a global aggregate whose functions this class computes. */
  static boolean admits(AggregateSpec spec) {
    return spec.keyCount() == 0 && integralFunctions(spec);
  }

  /**
   * Whether every function is a count, or a sum, minimum or maximum of integral (or decimal)
   * inputs: what the generated accumulators compute (64-bit integer atomics and shuffles).
   */
  static boolean integralFunctions(AggregateSpec spec) {
    return everyInput(spec, input -> !input.isString() && input.id() != TypeId.FLOAT
        && input.id() != TypeId.DOUBLE);
  }

  /** Whether {@code accepted} holds for the input type of every function but the counts. */
  static boolean everyInput(AggregateSpec spec, Predicate<ColumnType> accepted) {
    for (AggregateFunction f : spec.functions()) {
      if (f.kind() != Kind.COUNT_ROWS && f.kind() != Kind.COUNT
          && !accepted.test(spec.inputTypes().get(f.input()))) {
        return false;
      }
    }
    return true;
  }

  private Kind kind(int f) {
    return spec.functions().get(f).kind();
  }

  /** Before the tile loop: every accumulator at its identity. */
  void begin() {
    b.comment("the thread's accumulators");
    for (int f = 0; f < value.length; f++) {
      value[f] = b.b64();
      long identity = kind(f) == Kind.MIN ? Long.MAX_VALUE
          : kind(f) == Kind.MAX ? Long.MIN_VALUE : 0;
      b.op("mov.b64 %s, %d", value[f], identity);
      if (isSum(f)) {
        high[f] = b.b64();
        b.op("mov.b64 %s, 0", high[f]);
      }
      seen[f] = b.b32();
      b.op("mov.b32 %s, 0", seen[f]);
    }
  }

  private boolean isSum(int f) {
    return kind(f) == Kind.SUM || kind(f) == Kind.SUM_DECIMAL;
  }

  /** One aggregated row (the program's results {@code values}, by instruction). */
  void accumulate(Val[] values, int[] outputs) {
    for (int f = 0; f < value.length; f++) {
      AggregateFunction fn = spec.functions().get(f);
      if (fn.kind() == Kind.COUNT_ROWS) {
        b.op("add.s64 %s, %s, 1", value[f], value[f]);
        continue;
      }
      Val v = values[outputs[fn.input()]];
      // Where the input may be NULL, each step is predicated on its validity.
      String when = v.valid() == null ? "" : "@" + v.valid() + " ";
      switch (fn.kind()) {
        case COUNT -> b.op("%sadd.s64 %s, %s, 1", when, value[f], value[f]);
        case SUM, SUM_DECIMAL -> {
          String sign = b.b64();
          b.op("shr.s64 %s, %s, 63", sign, v.value());
          b.op("%sadd.cc.u64 %s, %s, %s", when, value[f], value[f], v.value());
          b.op("%saddc.u64 %s, %s, %s", when, high[f], high[f], sign);
        }
        case MIN -> b.op("%smin.s64 %s, %s, %s", when, value[f], value[f], v.value());
        case MAX -> b.op("%smax.s64 %s, %s, %s", when, value[f], value[f], v.value());
        default -> throw new IllegalStateException("admits() let " + fn + " through");
      }
      b.op("%smov.b32 %s, 1", when, seen[f]);
    }
  }

  /**
   * After the tile loop (every thread of the block): each warp's accumulators summed by shuffles,
   * then the block's warps' by thread 0, which merges them into group 0's global accumulators.
   * One merge a block, not a warp: every block of a launch ends on the same few words, and their
   * atomics wait for each other (SSB Q1.1's launches: 792 blocks of 4 warps).
   */
  void flush() {
    b.comment("the warp's accumulators");
    for (int offset = 16; offset >= 1; offset >>= 1) {
      for (int f = 0; f < value.length; f++) {
        String other = TilePrimitives.shuffleXor64(b, value[f], offset);
        String otherHigh = isSum(f) ? TilePrimitives.shuffleXor64(b, high[f], offset) : null;
        String otherSeen = b.b32();
        b.op("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", otherSeen, seen[f], offset);
        combine(f, other, otherHigh, otherSeen);
      }
    }
    b.comment("the block's warps' accumulators, summed and merged by thread 0");
    int n = value.length;
    b.declare(".shared .align 8 .b64 accumulator_values[" + warps * n + "]");
    b.declare(".shared .align 8 .b64 accumulator_highs[" + warps * n + "]");
    b.declare(".shared .align 4 .b32 accumulator_seen[" + warps * n + "]");
    String thread = b.b32();
    b.op("mov.u32 %s, %%tid.x", thread);
    String lane = b.b32();
    b.op("and.b32 %s, %s, %d", lane, thread, TilePrimitives.WARP_THREADS - 1);
    String notFirstLane = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", notFirstLane, lane);
    String stored = b.label("accumulators_stored");
    b.op("@%s bra %s", notFirstLane, stored);
    String slot = b.b32();
    b.op("shr.u32 %s, %s, 5", slot, thread); // the warp
    b.op("mul.lo.u32 %s, %s, %d", slot, slot, n);
    for (int f = 0; f < n; f++) {
      String at = b.b32();
      b.op("mov.u32 %s, accumulator_values", at);
      b.op("mad.lo.u32 %s, %s, 8, %s", at, slot, at);
      b.op("st.shared.u64 [%s+%d], %s", at, 8 * f, value[f]);
      if (isSum(f)) {
        b.op("mov.u32 %s, accumulator_highs", at);
        b.op("mad.lo.u32 %s, %s, 8, %s", at, slot, at);
        b.op("st.shared.u64 [%s+%d], %s", at, 8 * f, high[f]);
      }
      b.op("mov.u32 %s, accumulator_seen", at);
      b.op("mad.lo.u32 %s, %s, 4, %s", at, slot, at);
      b.op("st.shared.u32 [%s+%d], %s", at, 4 * f, seen[f]);
    }
    b.place(stored);
    b.op("bar.sync 0");
    String done = b.label("merged");
    String notFirst = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", notFirst, thread);
    b.op("@%s bra %s", notFirst, done);
    for (int w = 1; w < warps; w++) {
      for (int f = 0; f < n; f++) {
        int k = w * n + f;
        String other = b.b64();
        b.op("ld.shared.u64 %s, [accumulator_values+%d]", other, 8 * k);
        String otherHigh = null;
        if (isSum(f)) {
          otherHigh = b.b64();
          b.op("ld.shared.u64 %s, [accumulator_highs+%d]", otherHigh, 8 * k);
        }
        String otherSeen = b.b32();
        b.op("ld.shared.u32 %s, [accumulator_seen+%d]", otherSeen, 4 * k);
        combine(f, other, otherHigh, otherSeen);
      }
    }
    String plan = body.global(body.loadParam("u64", "plan"));
    for (int f = 0; f < n; f++) {
      merge(f, plan);
    }
    b.place(done);
  }

  /** Function f's accumulators and another thread's ({@code otherHigh}: a sum's high word). */
  private void combine(int f, String other, String otherHigh, String otherSeen) {
    switch (kind(f)) {
      case COUNT_ROWS, COUNT -> b.op("add.s64 %s, %s, %s", value[f], value[f], other);
      case SUM, SUM_DECIMAL -> {
        b.op("add.cc.u64 %s, %s, %s", value[f], value[f], other);
        b.op("addc.u64 %s, %s, %s", high[f], high[f], otherHigh);
      }
      case MIN -> b.op("min.s64 %s, %s, %s", value[f], value[f], other);
      case MAX -> b.op("max.s64 %s, %s, %s", value[f], value[f], other);
      default -> throw new IllegalStateException("admits() let " + kind(f) + " through");
    }
    b.op("or.b32 %s, %s, %s", seen[f], seen[f], otherSeen);
  }

  /** Thread 0: function f's accumulators into group 0's (hash_aggregate.cuh Merge). */
  private void merge(int f, String plan) {
    String skip = b.label("merged" + f);
    String none = b.pred();
    if (kind(f) == Kind.COUNT_ROWS || kind(f) == Kind.COUNT) {
      b.op("setp.eq.s64 %s, %s, 0", none, value[f]);
    } else {
      b.op("setp.eq.u32 %s, %s, 0", none, seen[f]);
    }
    b.op("@%s bra %s", none, skip);
    String valueAt = body.field(plan, AggregatePlan.functionField(0, f, AggregatePlan.F_VALUE));
    String old = b.b64();
    switch (kind(f)) {
      case COUNT_ROWS, COUNT -> b.op("atom.global.add.u64 %s, [%s], %s", old, valueAt, value[f]);
      case SUM, SUM_DECIMAL -> {
        if (AccumulatorArithmetic.wraps(spec, f)) {
          b.op("red.global.add.u64 [%s], %s", valueAt, value[f]);
        } else {
          String highAt = body.field(plan, AggregatePlan.functionField(0, f, AggregatePlan.F_HIGH));
          Int128Atomics.add(b, ".global", valueAt, highAt, value[f], high[f]);
        }
      }
      case MIN -> b.op("atom.global.min.s64 %s, [%s], %s", old, valueAt, value[f]);
      case MAX -> b.op("atom.global.max.s64 %s, [%s], %s", old, valueAt, value[f]);
      default -> throw new IllegalStateException("admits() let " + kind(f) + " through");
    }
    if (kind(f) != Kind.COUNT_ROWS && kind(f) != Kind.COUNT) {
      String seenAt = body.field(plan, AggregatePlan.functionField(0, f, AggregatePlan.F_SEEN));
      b.op("st.global.u32 [%s], 1", seenAt);
    }
    b.place(skip);
  }
}
