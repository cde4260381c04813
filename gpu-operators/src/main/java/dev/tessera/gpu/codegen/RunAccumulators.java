package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.TypeId;

/**
 * A lane's run in a generated aggregate kernel: its rows of one group from the items where every
 * active lane of the warp has that group, accumulated in registers (a count, an exact 128-bit
 * sum, a minimum or maximum, and whether any row had a value, per function) and merged into the
 * group's accumulators only when such an item is of another group and at the end of the launch
 * ({@link GroupAccumulation} writes the merge and decides where runs are taken). With one group,
 * or keys clustered in the data, a lane's rows then cost register arithmetic instead of the
 * warp's reductions and its leader's atomics on shared memory.
 *
 * <p>Only where the per-block table is found by key ({@link LocalKeyTable}: one fixed-width key)
 * and every function's input is integral or a DOUBLE ({@link #registerInputs}), with at most
 * {@value #MAX_WORDS} 64-bit accumulator words: the registers live through the whole launch.
 */
final class RunAccumulators {
  /** The most 64-bit accumulator words a kernel holds per lane (a sum takes two, others one). */
  static final int MAX_WORDS = 6;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final AccumulatorArithmetic arithmetic;
  /** Whether the lane holds a run (.pred), its group (.b32) and per-block entry (.b32, or -1). */
  final String held;
  final String group;
  final String entry;
  /**
   * Whether the warp's last item with aggregated rows added them to runs (.pred, the same in every
   * lane): only then does the next item test whether its rows are all of their lanes' runs.
   */
  final String lastItemInRuns;
  /** Per function: the count, the sum's low word or the minimum/maximum (.b64). */
  final String[] value;
  /** Per function: the sum's high word (.b64; null for other kinds). */
  final String[] high;
  /**
   * Per function: whether a row of the run had a value (.pred; null for COUNT_ROWS), where
   * {@link #tracksSeen}.
   */
  final String[] seen;
  /** Whether {@link #seen} is kept only for functions whose input can be NULL. */
  private final boolean seenOnlyWhereNullable;

  /**
   * The run's registers; {@code seenOnlyWhereNullable}: whether a function whose input cannot be
   * NULL goes without its {@link #seen} flag ({@link #tracksSeen}).
   */
  RunAccumulators(PtxBuilder b, AggregateSpec spec, AccumulatorArithmetic arithmetic,
      boolean seenOnlyWhereNullable) {
    this.b = b;
    this.spec = spec;
    this.arithmetic = arithmetic;
    this.seenOnlyWhereNullable = seenOnlyWhereNullable;
    int n = spec.functions().size();
    this.held = b.pred();
    this.group = b.b32();
    this.entry = b.b32();
    this.lastItemInRuns = b.pred();
    this.value = new String[n];
    this.high = new String[n];
    this.seen = new String[n];
    for (int f = 0; f < n; f++) {
      value[f] = b.b64();
      if (isSum(f)) {
        high[f] = b.b64();
      }
      if (kind(f) != Kind.COUNT_ROWS) {
        seen[f] = b.pred();
      }
    }
  }

  /**
   * Whether a kernel for {@code spec} whose per-block table is found by fixed-width keys
   * accumulates runs.
   */
  static boolean admits(AggregateSpec spec) {
    if (!registerInputs(spec)) {
      return false;
    }
    int words = 0;
    for (var f : spec.functions()) {
      words += GroupAccumulation.isSum(f.kind()) ? 2 : 1;
    }
    return words <= MAX_WORDS;
  }

  /**
   * Whether every function's input is integral ({@link RegisterAccumulators#integralFunctions})
   * or a DOUBLE: a DOUBLE's sum is exact in 128 bits (its inputs are whole numbers, {@link
   * AccumulatorArithmetic#int128}) and its minimum and maximum are compared in Spark's order
   * ({@link AccumulatorArithmetic#better}), as the warp path and the rows do. Without runs one
   * group's DOUBLE SUM, MIN and MAX took 1,441 us for HashAggregateBench's 33.5 M rows (11 times
   * its floor; H200, ncu): every warp's leader merged into the one entry.
   */
  static boolean registerInputs(AggregateSpec spec) {
    return RegisterAccumulators.everyInput(spec,
        input -> !input.isString() && input.id() != TypeId.FLOAT);
  }

  private Kind kind(int f) {
    return spec.functions().get(f).kind();
  }

  private TypeId inputType(int f) {
    return spec.inputTypes().get(spec.functions().get(f).input()).id();
  }

  private boolean isSum(int f) {
    return GroupAccumulation.isSum(kind(f));
  }

  /** At the kernel's start: no run. */
  void begin() {
    b.comment("the lane's run: none yet");
    b.op("setp.ne.u32 %s, 0, 0", held);
    b.op("setp.ne.u32 %s, 0, 0", lastItemInRuns);
    b.op("mov.u32 %s, -1", group);
    b.op("mov.u32 %s, -1", entry);
  }

  /** A new .pred: whether the lane holds a run of {@code group} (.b32). */
  String isOf(String group) {
    String same = b.pred();
    b.op("setp.eq.u32 %s, %s, %s", same, group, this.group);
    b.op("and.pred %s, %s, %s", same, same, held);
    return same;
  }

  /**
   * Where {@code start} holds: a new run of {@code group}'s rows (its entry {@code entry}), every
   * accumulator at its identity; {@code inputs} as {@link #add} takes them.
   */
  void start(String start, String group, String entry, AggregateValue[] inputs) {
    b.op("@%s mov.u32 %s, %s", start, this.group, group);
    b.op("@%s mov.u32 %s, %s", start, this.entry, entry);
    for (int f = 0; f < value.length; f++) {
      b.op("@%s mov.b64 %s, %d", start, value[f], GroupAccumulation.initialValue(spec, f));
      if (high[f] != null) {
        b.op("@%s mov.b64 %s, 0", start, high[f]);
      }
      if (tracksSeen(f, inputs)) {
        b.op("@%s setp.ne.u32 %s, 0, 0", start, seen[f]);
      }
    }
    b.op("or.pred %s, %s, %s", held, held, start);
  }

  /**
   * Whether the run keeps function f's {@link #seen} flag, given the functions' {@code inputs}
   * (as {@link #add} takes them). Where it does not, the function's input cannot be NULL, so a
   * lane that {@link #held} a run has seen a value (a run starts with a row, which {@link #add}
   * adds), and the flag is never written or read. Only in kernels of one key ({@link
   * GroupAccumulation#beginRuns}): there the flags of HashAggregateBench's SUM, MIN and MAX lived
   * through the launch beside the run's and the last group's, and ptxas kept the nullable-key
   * kernel's other predicates in bits of a general register (about 8 instructions an item);
   * without them (H200, ncu) long keys took 205 → 175 µs at one group, 1-2% less at 10 to 1,000
   * groups, nullable keys 282 → 249 µs at one group and 4% less at 10 to 1,000. In kernels of two
   * keys the in-jar compiler then spilled 8 bytes at 64 registers (GROUP BY a LONG and an INT or
   * two LONGs), which cost their plain copy (ShortcutMode): two columns 16-21% slower at 1 to 100
   * groups.
   */
  boolean tracksSeen(int f, AggregateValue[] inputs) {
    return seen[f] != null && (!seenOnlyWhereNullable || inputs[f].valid() != null);
  }

  /**
   * Where {@code act} holds, the run being of the item's group: the item's entry of it ({@code
   * entry}, -1 where the table does not hold it) taken as the run's where the run has none yet.
   * An entry holds its group until the launch ends, so an entry found for the group at any item
   * is the run's. Without it a run begun at a row sent to the global table (its block's entry
   * busy, or a lost race) stays there: with one group, a lane's only run lasts the launch, and
   * every lane whose first row found the entry busy merged into the group's global words at the
   * end.
   */
  void takeEntry(String act, String entry) {
    b.op("@%s max.s32 %s, %s, %s", act, this.entry, this.entry, entry);
  }

  /**
   * Where {@code act} holds: the row's {@code inputs} (per function, null for COUNT_ROWS) added
   * to the run (RegisterAccumulators.accumulate's arithmetic).
   */
  void add(String act, AggregateValue[] inputs) {
    for (int f = 0; f < value.length; f++) {
      if (kind(f) == Kind.COUNT_ROWS) {
        b.op("@%s add.s64 %s, %s, 1", act, value[f], value[f]);
        continue;
      }
      String when = act;
      if (inputs[f].valid() != null) {
        when = b.pred();
        b.op("and.pred %s, %s, %s", when, act, inputs[f].valid());
      }
      String v = inputs[f].value();
      boolean dbl = inputType(f) == TypeId.DOUBLE;
      switch (kind(f)) {
        case COUNT -> b.op("@%s add.s64 %s, %s, 1", when, value[f], value[f]);
        case SUM, SUM_DECIMAL -> {
          // The input as an int128: a DOUBLE's whole number converted, an integer sign-extended.
          String lowWord = v;
          String highWord;
          if (dbl) {
            String[] whole = arithmetic.int128(TypeId.DOUBLE, v);
            lowWord = whole[0];
            highWord = whole[1];
          } else {
            highWord = b.b64();
            b.op("shr.s64 %s, %s, 63", highWord, v);
          }
          b.op("@%s add.cc.u64 %s, %s, %s", when, value[f], value[f], lowWord);
          b.op("@%s addc.u64 %s, %s, %s", when, high[f], high[f], highWord);
        }
        case MIN, MAX -> {
          if (dbl) {
            String better = arithmetic.better(kind(f), TypeId.DOUBLE, v, value[f]);
            b.op("and.pred %s, %s, %s", better, better, when);
            b.op("@%s mov.b64 %s, %s", better, value[f], v);
          } else {
            b.op("@%s %s.s64 %s, %s, %s", when, kind(f) == Kind.MIN ? "min" : "max", value[f],
                value[f], v);
          }
        }
        default -> throw new IllegalStateException("admits() let " + kind(f) + " through");
      }
      if (tracksSeen(f, inputs)) {
        b.op("or.pred %s, %s, %s", seen[f], seen[f], when);
      }
    }
  }
}
