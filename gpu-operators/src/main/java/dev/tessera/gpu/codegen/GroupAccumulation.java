package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.AccumulatorArithmetic.identity;
import static dev.tessera.gpu.codegen.AccumulatorArithmetic.isFloating;

import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codegen.AccumulatorArithmetic.Accumulators;
import dev.tessera.gpu.column.TypeId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.Supplier;

/**
 * A row's functions accumulated into its group in a generated aggregate kernel (part of {@link
 * GroupedAggregateEmitter}): hash_aggregate.cuh's {@code AggregateItem} after the group is known,
 * with {@code AccumulateWarp}, {@code AccumulateRow} and the per-block table's {@code Find},
 * specialized to each function's kind and input type, written as PTX. The accumulators'
 * arithmetic is {@link AccumulatorArithmetic}'s.
 */
final class GroupAccumulation {
  /** An entry of the per-block table that holds no group (hash_aggregate.cuh kEmpty). */
  private static final int EMPTY = GroupLookup.EMPTY;
  /** hash_aggregate.cuh kLocalProbes: slots of the per-block table a row looks at. */
  static final int LOCAL_PROBES = 4;
  /**
   * hash_aggregate.cuh kLocalHashMultiplier: LocalTable::Find's spread of group indexes
   * (HashAggregateAbiTest checks it and kLocalProbes).
   */
  private static final long LOCAL_HASH = 0x9e3779b1L;
  /**
   * The most functions whose update waits for a result that a row's copy issues before any of
   * those waits ({@link #rowsInTableOrGlobal}).
   */
  private static final int DEFERRED_WAITS = 3;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final PlanWords plan;
  private final KernelFeatures features;
  private final AccumulatorArithmetic arithmetic;
  /** Where the per-block table's sections lie. */
  private final LocalTableLayout layout;
  /** For the item being written: the per-block table (shared address) and its entries. */
  private LocalKeyTable.View table;
  /** The item's inputs, per function (null for COUNT_ROWS). */
  private AggregateValue[] inputs;
  /**
   * Where {@link #remember} was called: the lane's last group found in the per-block table (.b32,
   * -1 before any) and its entry. An entry holds its group for the whole launch, so the lane
   * finds it again without the slots' reads ({@link #localFind}). Null otherwise.
   */
  private String rememberedGroup;
  private String rememberedEntry;
  /** Where the kernel accumulates runs ({@link #beginRuns}): the lane's run. Null otherwise. */
  private RunAccumulators run;

  GroupAccumulation(PtxBuilder b, AggregateSpec spec, PlanWords plan, KernelFeatures features,
      LocalTableLayout layout) {
    this.b = b;
    this.spec = spec;
    this.plan = plan;
    this.features = features;
    this.layout = layout;
    this.arithmetic = new AccumulatorArithmetic(b, spec);
  }

  /**
   * The functions' {@code inputs} (null for COUNT_ROWS) of the lanes whose rows are aggregated
   * ({@code act}) into their groups ({@code group}); every lane of the warp runs it. {@code table}
   * is the per-block table. {@code entry} is the row's entry (.b32, -1 where the table does not
   * hold its group) where the lookup found it by key ({@link LocalKeyTable}, whose lanes that
   * claimed their entry called {@link #markSeenAtClaim(LocalKeyTable.View, boolean[], String)}),
   * null where the entry is found here, by group. {@code warpTest}: whether the item tests for a
   * warp of one group (false: each row on its own, an item that takes no shortcut, {@link
   * ShortcutMode}).
   */
  void accumulate(LocalKeyTable.View table, String act, String group, AggregateValue[] inputs,
      String entry, boolean warpTest) {
    checkLeftOutSeen(inputs);
    this.table = table;
    this.inputs = inputs;
    accumulateItem(act, group, entry, warpTest, true);
  }

  /**
   * {@link #accumulate} of rows that share one group (a warp's rows whose key is NULL), never into
   * the lanes' runs: the runs keep their groups, and whether the warp's last item went into them
   * ({@link #lastItemInRuns}) stays as it was. A lone row takes its own atomics; several, the
   * warp's reduction and its leader's.
   */
  void accumulateApart(LocalKeyTable.View table, String act, String group,
      AggregateValue[] inputs, String entry) {
    checkLeftOutSeen(inputs);
    this.table = table;
    this.inputs = inputs;
    accumulateItem(act, group, entry, true, false);
  }

  /**
   * A lean table ({@link LocalTableLayout#lean}) leaves out the seen flag of a function whose
   * input is a column that cannot be NULL, which the merge then takes as set: the item's value
   * of it must have no valid predicate. One that has is a generator bug, which would merge a
   * group whose every value is NULL as seen, a wrong result, so the kernel is not written.
   */
  private void checkLeftOutSeen(AggregateValue[] inputs) {
    BitSet neverNull = layout.neverNull();
    for (int f = neverNull.nextSetBit(0); f >= 0; f = neverNull.nextSetBit(f + 1)) {
      if (inputs[f] != null && inputs[f].valid() != null) {
        throw new IllegalStateException("function " + f + "'s input may be NULL, but the lean "
            + "per-block table has no seen flag for it");
      }
    }
  }

  /**
   * Per function, whether the row that inserts a group (in the global table) or claims its
   * per-block entry sets the group's seen flag there, so that no row need set it again: where
   * the function has an input and it cannot be NULL ({@code nullableInput}, by function), so
   * that row has a value for it ({@link AccumulatorArithmetic#markSeen} relies on it).
   */
  static boolean[] seenAtFirstRow(AggregateSpec spec, IntPredicate nullableInput) {
    boolean[] set = new boolean[spec.functions().size()];
    for (int f = 0; f < set.length; f++) {
      set[f] = spec.functions().get(f).kind() != Kind.COUNT_ROWS && !nullableInput.test(f);
    }
    return set;
  }

  /**
   * Where the per-block table ({@code table}) is found by key, for a lane that claimed entry
   * {@code entry} (the caller branches around it for the others): the entry's seen flags of the
   * functions of {@code setAtClaim} set, those whose input cannot be NULL, so the claiming row
   * has a value ({@link AccumulatorArithmetic#markSeen}).
   */
  void markSeenAtClaim(LocalKeyTable.View table, boolean[] setAtClaim, String entry) {
    this.table = table;
    setSeen(setAtClaim, entry);
  }

  /**
   * At the kernel's start, before the tile loop, where {@link RunAccumulators#admits} the
   * aggregation (its entries found by key): where every active lane of a warp has the same group
   * (one group, or keys clustered in the data), each lane adds its row to a run in registers,
   * merged when a later such item is of another group and at {@link #end}, instead of the warp's
   * reduction and its leader's atomics. A warp whose rows have several groups updates per row as
   * before: a run there, merged at nearly every row when keys come in random order, made 10
   * groups 15-19% slower (3d44884, reverted).
   */
  void beginRuns() {
    run = new RunAccumulators(b, spec, arithmetic, spec.keyCount() == 1);
    run.begin();
  }

  /** Whether the kernel accumulates runs ({@link #beginRuns}). */
  boolean accumulatesRuns() {
    return run != null;
  }

  /**
   * Where the kernel accumulates runs: whether the warp's last item with aggregated rows added
   * them to runs (.pred, the same in every lane): whether a shortcut served it.
   */
  String lastItemInRuns() {
    return run.lastItemInRuns;
  }

  /**
   * Where the kernel accumulates runs: whether every lane whose row is aggregated ({@code act})
   * recalled its last group ({@code looks} false: GroupLookup.recall put it in {@code group}) and
   * holds a run of that group. A new .pred, the same in every lane of the warp (every lane must
   * be here); where it holds, {@link #addToRuns} is the item's whole update. Tested only where the
   * warp's last item with rows added them to runs; elsewhere it branches to {@code elsewhere}
   * first: where keys come in random order the test fails at nearly every item, and cost 10 to
   * 100 groups 4-5% (HashAggregateBench, H200).
   */
  String allInRuns(String act, String looks, String group, String elsewhere) {
    b.op("@!%s bra.uni %s", run.lastItemInRuns, elsewhere);
    String inRun = run.isOf(group);
    String recalled = b.pred();
    b.op("not.pred %s, %s", recalled, looks);
    b.op("and.pred %s, %s, %s", inRun, inRun, recalled);
    String idle = b.pred();
    b.op("not.pred %s, %s", idle, act);
    b.op("or.pred %s, %s, %s", inRun, inRun, idle);
    String all = b.pred();
    b.op("vote.sync.all.pred %s, %s, -1", all, inRun);
    return all;
  }

  /**
   * Where {@link #allInRuns} holds: the rows of {@code act} (entry {@code entry}, the recalled
   * one) added to their lanes' runs, as {@link #runItem} adds a row of the run's group.
   */
  void addToRuns(String act, String entry, AggregateValue[] inputs) {
    b.comment("every aggregated row of the warp is of its lane's run: into the run, no lookup");
    run.takeEntry(act, entry);
    run.add(act, inputs);
  }

  /**
   * After the tile loop, before the block's last barrier (every lane): where the kernel
   * accumulates runs, the lane's last run merged into {@code table}'s entries or the global
   * accumulators; the inputs' nullability is the last item's (every item's is the same).
   */
  void end(LocalKeyTable.View table) {
    if (run == null) {
      return;
    }
    this.table = table;
    mergeRun(run.held);
  }

  /**
   * An item whose active rows ({@code act}) share the group {@code group} (its entry {@code
   * entry}): a lane whose run is of another group merges it and starts one of this group; then
   * the row is added to the run.
   */
  private void runItem(String act, String group, String entry) {
    b.comment("the row into the lane's run (RunAccumulators)");
    b.op("setp.eq.u32 %s, 0, 0", run.lastItemInRuns);
    String same = run.isOf(group);
    String change = b.pred();
    b.op("not.pred %s, %s", change, same);
    b.op("and.pred %s, %s, %s", change, change, act);
    String merge = b.pred();
    b.op("and.pred %s, %s, %s", merge, change, run.held);
    mergeRun(merge);
    run.start(change, group, entry, inputs);
    run.takeEntry(act, entry);
    run.add(act, inputs);
  }

  /**
   * Where {@code when} holds: the lane's run merged into its entry's accumulators (shared
   * addresses) or, where the table does not hold its group, the group's global ones.
   */
  private void mergeRun(String when) {
    String done = b.label("run_merged");
    String global = b.label("run_global");
    b.op("@!%s bra %s", when, done);
    String inTable = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", inTable, run.entry);
    b.op("@!%s bra %s", inTable, global);
    for (int f = 0; f < run.value.length; f++) {
      mergeRunFunction(f, tableAccumulators(f, run.entry, ".shared"));
    }
    b.op("bra %s", done);
    b.place(global);
    for (int f = 0; f < run.value.length; f++) {
      mergeRunFunction(f, globalAccumulators(f, run.group, ".global"));
    }
    b.place(done);
  }

  /** Function f's run into its accumulators {@code at}, if the run has anything for it. */
  private void mergeRunFunction(int f, Accumulators at) {
    Kind kind = kind(f);
    String skip = b.label("run_function" + f);
    String none = b.pred();
    if (isCount(kind)) {
      b.op("setp.eq.s64 %s, %s, 0", none, run.value[f]);
      b.op("@%s bra %s", none, skip);
      String count = b.b32();
      b.op("cvt.u32.u64 %s, %s", count, run.value[f]); // a run is part of one launch: < 2^31
      arithmetic.addCount(at, count);
      b.place(skip);
      return;
    }
    if (run.tracksSeen(f, inputs)) { // else the run has a value for it wherever it is held
      b.op("@!%s bra %s", run.seen[f], skip);
    }
    boolean nullable = inputs[f].valid() != null;
    arithmetic.markSeen(at, new AggregateValue(run.value[f], nullable ? run.seen[f] : null, null));
    if (isSum(kind)) {
      arithmetic.addSum(f, at, run.value[f], run.high[f]);
    } else {
      arithmetic.atomicMinMax(kind, inputType(f), at, run.value[f]);
    }
    b.place(skip);
  }

  /**
   * At the kernel's start, before the tile loop: the registers for the lane's last entry, none
   * yet; without this call a lane reads the slots for every group it looks for.
   */
  void remember() {
    rememberedGroup = b.b32();
    rememberedEntry = b.b32();
    b.op("mov.u32 %s, -1", rememberedGroup);
    b.op("mov.u32 %s, -1", rememberedEntry);
  }

  /** An accumulator's value before any row: MIN/MAX's identity, 0 for the others. */
  static long initialValue(AggregateSpec spec, int f) {
    Kind kind = spec.functions().get(f).kind();
    if (kind != Kind.MIN && kind != Kind.MAX) {
      return 0;
    }
    return identity(kind, spec.inputTypes().get(spec.functions().get(f).input()).id());
  }

  /**
   * hash_aggregate.cuh AggregateItem after the group: the warp's rows at once when they share one
   * group (AccumulateWarp), else each active row on its own (AccumulateRow). Without {@code
   * warpTest} (a kernel with keys only), each row on its own. Without {@code intoRuns} ({@link
   * #accumulateApart}), nothing goes into or changes the runs, and a lone row is on its own.
   */
  private void accumulateItem(String act, String group, String foundEntry, boolean warpTest,
      boolean intoRuns) {
    boolean runs = intoRuns && run != null;
    String done = b.label("item_accumulated");
    String rows = b.label("item_rows");
    if (!warpTest && spec.keyCount() > 0) {
      accumulateRows(act, group, foundEntry, rows, done, runs);
      return;
    }
    String activeLanes = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", activeLanes, act);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, activeLanes);
    b.op("@%s bra.uni %s", none, done);
    if (!intoRuns && spec.keyCount() > 0) {
      // Rows apart from the runs (a warp's NULL keys' rows): one alone, the usual case, takes
      // its row's atomics, not the warp's reductions.
      String count = b.b32();
      b.op("popc.b32 %s, %s", count, activeLanes);
      String alone = b.pred();
      b.op("setp.eq.u32 %s, %s, 1", alone, count);
      b.op("@%s bra.uni %s", alone, rows);
    }
    String leader = TilePrimitives.lowestLane(b, activeLanes);
    String leaderGroup = b.b32();
    b.op("shfl.sync.idx.b32 %s, %s, %s, 31, -1", leaderGroup, group, leader);
    if (spec.keyCount() > 0) { // without keys every row is in group 0
      String same = b.pred();
      b.op("setp.eq.u32 %s, %s, %s", same, group, leaderGroup);
      String inactive = b.pred();
      b.op("not.pred %s, %s", inactive, act);
      b.op("or.pred %s, %s, %s", same, same, inactive);
      String all = b.pred();
      b.op("vote.sync.all.pred %s, %s, -1", all, same);
      b.op("@!%s bra.uni %s", all, rows);
    }

    if (runs) {
      b.comment("the warp's rows share a group: each lane's row into its run");
      runItem(act, leaderGroup, foundEntry);
    } else {
      warpItem(act, leader, leaderGroup, foundEntry);
    }
    b.op("bra.uni %s", done);
    if (spec.keyCount() == 0) {
      b.place(rows);
      b.place(done);
      return;
    }
    accumulateRows(act, group, foundEntry, rows, done, runs);
  }

  /** {@code rows} placed, then each active row of the item on its own, then {@code done}. */
  private void accumulateRows(String act, String group, String foundEntry, String rows,
      String done, boolean runs) {
    b.place(rows);
    b.comment("each active row on its own");
    if (runs) {
      b.op("setp.ne.u32 %s, 0, 0", run.lastItemInRuns);
    }
    b.op("@!%s bra %s", act, done);
    if (foundEntry != null) {
      rowsInTableOrGlobal(foundEntry, group, done);
      return;
    }
    String rowEntry = b.b32();
    localFind(group, rowEntry);
    for (int f = 0; f < inputs.length; f++) {
      int function = f;
      rowFunction(f, inputs[f], () -> eitherAccumulators(function, rowEntry, group), null);
    }
    b.place(done);
  }

  /**
   * hash_aggregate.cuh AccumulateWarp: the active rows ({@code act}) of the warp, which share the
   * group {@code group} (its entry {@code foundEntry} where the lookup found it by key, else null),
   * reduced, then merged once by the lane {@code leader}.
   */
  private void warpItem(String act, String leader, String group, String foundEntry) {
    b.comment("the warp's rows share a group: reduced, then merged once by the leader");
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String isLeader = b.pred();
    b.op("setp.eq.u32 %s, %s, %s", isLeader, lane, leader);
    String entry = foundEntry;
    if (entry == null) {
      entry = b.b32();
      b.op("mov.u32 %s, -1", entry);
      String found = b.label("leader_entry");
      b.op("@!%s bra %s", isLeader, found);
      localFind(group, entry);
      b.place(found);
    }
    for (int f = 0; f < inputs.length; f++) {
      warpFunction(f, act, inputs[f], isLeader, entry, group);
    }
  }

  /**
   * The row path where the entry was found by key: the functions written twice, once for rows
   * whose entry the table holds (shared addresses, so {@link SharedAtomics}) and once for the
   * others (global addresses), then {@code done} placed. Where the table is found by key, nearly
   * all of a warp's rows take the same copy (all with up to 256 groups, few from 10^4). Where it is
   * found by group, one copy on generic addresses is kept: two copies made StarJoinBench's fused
   * kernel 18% slower (ncu, dense: 1,100 against 930 µs), while HashAggregateBench's keyed kernel
   * gained 13% at 10 groups (614 against 709 µs) and 4% at 100.
   *
   * <p>In each copy, what waits for an atomic's or a read's result (a sum's carry, an integer
   * MIN/MAX's compare) comes after every function's atomics and reads are issued, so that a row
   * waits for the slowest of them rather than for each in turn. In the global copy:
   * HashAggregateBench's long keys (most rows in the global accumulators from 10^4 groups on,
   * ncu) 2,719 → 2,454 µs at 10^4 groups and 2,353 → 2,187 µs at 10^5. In the shared copy (a
   * wrapping sum's lower half returns its old value there, {@link SharedAtomics}): the row's
   * three shared round trips (the sum's atomic, the MIN's and the MAX's reads) overlap, where
   * each waited for the one before: long keys at 10 / 100 / 1,000 groups 2-3% faster, "two
   * columns" at 100 5-6%, 10^5 groups +1% (H200, ncu). Only with at most {@value #DEFERRED_WAITS}
   * such functions: each wait holds its values until the last function's atomic is issued (a
   * sum's old low word, addend and high part: six registers), and wider aggregations (averages of
   * several columns, decimal sums) spilled; and in the shared copy only where no function's input
   * can be NULL (two nullable keys and a nullable value: 64 → 96-102 registers, in-jar compiler).
   */
  private void rowsInTableOrGlobal(String entry, String group, String done) {
    bySpace(entry, b.label("rows_global"), done, space -> {
      boolean defer = waitingFunctions(space) <= DEFERRED_WAITS
          && (space.equals(".global") || noNullableInputs());
      List<Runnable> waits = defer ? new ArrayList<>() : null;
      for (int f = 0; f < inputs.length; f++) {
        int function = f;
        rowFunction(f, inputs[f], () -> accumulators(function, entry, group, space), waits);
      }
      if (waits != null) {
        waits.forEach(Runnable::run);
      }
    });
  }

  /**
   * LocalTable.Find: into {@code entry} the per-block entry holding {@code group}, claiming an
   * empty one if need be; -1 when the slots looked at hold other groups (or there is no table).
   *
   * <p>Not in hash_aggregate.cuh: the slots looked at are read together, then walked in order
   * (where the header reads each after the one before: with more groups than entries, every row
   * reads all of them). A slot read holding another group holds it for good; one read empty is
   * claimed by compare-and-swap, whose result decides. And the lane that claims an entry sets its
   * seen flags of the inputs that cannot be NULL (its row has a value for each), so that no row
   * reads them ({@link AccumulatorArithmetic#markSeen}); the merge reads them after the block's
   * last barrier. Where the kernel remembers ({@link #remember}), the lane takes its last entry
   * again without reading slots when its group is the last one's (an entry holds its group until
   * the launch ends).
   */
  private void localFind(String group, String entry) {
    String done = b.label("local_found");
    b.op("mov.u32 %s, -1", entry);
    String claimed = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", claimed);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, table.entries());
    b.op("@%s bra %s", none, done);
    if (rememberedGroup != null) {
      String again = b.pred();
      b.op("setp.eq.u32 %s, %s, %s", again, group, rememberedGroup);
      b.op("@%s mov.u32 %s, %s", again, entry, rememberedEntry);
      b.op("@%s bra %s", again, done);
    }
    String base = table.local();
    String keysBase = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", keysBase, table.entries64(), layout.groupWordsPerEntry());
    b.op("add.s64 %s, %s, %s", keysBase, keysBase, base);
    String lastEntry = b.b32();
    b.op("sub.u32 %s, %s, 1", lastEntry, table.entries());
    String first = b.b32();
    b.op("mul.lo.u32 %s, %s, %d", first, group, LOCAL_HASH);
    b.op("shr.u32 %s, %s, 7", first, first);
    String[] slot = new String[LOCAL_PROBES];
    String[] at = new String[LOCAL_PROBES];
    String[] held = new String[LOCAL_PROBES];
    for (int probe = 0; probe < LOCAL_PROBES; probe++) {
      slot[probe] = b.b32();
      b.op("add.u32 %s, %s, %d", slot[probe], first, probe);
      b.op("and.b32 %s, %s, %s", slot[probe], slot[probe], lastEntry);
      at[probe] = b.b64();
      b.op("mul.wide.u32 %s, %s, 4", at[probe], slot[probe]);
      b.op("add.s64 %s, %s, %s", at[probe], at[probe], keysBase);
      held[probe] = b.b32();
      b.op("ld.volatile.shared.s32 %s, [%s]", held[probe], at[probe]);
    }
    String p = b.pred();
    String q = b.pred();
    for (int probe = 0; probe < LOCAL_PROBES; probe++) {
      String next = b.label("local_probe");
      b.op("setp.eq.s32 %s, %s, %s", p, held[probe], group);
      b.op("@%s mov.u32 %s, %s", p, entry, slot[probe]);
      b.op("@%s bra %s", p, done);
      b.op("setp.ne.s32 %s, %s, %d", p, held[probe], EMPTY);
      b.op("@%s bra %s", p, next);
      String before = b.b32();
      b.op("atom.shared.cas.b32 %s, [%s], %d, %s", before, at[probe], EMPTY, group);
      b.op("setp.eq.s32 %s, %s, %d", p, before, EMPTY);
      b.op("mov.pred %s, %s", claimed, p);
      b.op("setp.eq.s32 %s, %s, %s", q, before, group);
      b.op("or.pred %s, %s, %s", p, p, q);
      b.op("@%s mov.u32 %s, %s", p, entry, slot[probe]);
      b.op("@%s bra %s", p, done);
      b.place(next);
    }
    b.place(done);
    if (rememberedGroup != null) {
      String inTable = b.pred();
      b.op("setp.ge.s32 %s, %s, 0", inTable, entry);
      b.op("@%s mov.u32 %s, %s", inTable, rememberedGroup, group);
      b.op("@%s mov.u32 %s, %s", inTable, rememberedEntry, entry);
    }
    markSeenWhereClaimed(seenAtFirstRow(spec, f -> inputs[f].valid() != null), claimed, entry);
  }

  /**
   * For the lanes of {@code claimed}, which claimed entry {@code entry}: its seen flags of the
   * functions of {@code setAtClaim} set (those whose input cannot be NULL: the claiming row has a
   * value for each; {@link AccumulatorArithmetic#markSeen}).
   */
  private void markSeenWhereClaimed(boolean[] setAtClaim, String claimed, String entry) {
    String skip = b.label("seen_set");
    b.op("@!%s bra %s", claimed, skip);
    setSeen(setAtClaim, entry);
    b.place(skip);
  }

  /** Entry {@code entry}'s seen flags of the functions of {@code set} set. */
  private void setSeen(boolean[] set, String entry) {
    for (int f = 0; f < set.length; f++) {
      if (set[f] && layout.hasSeen(f)) {
        b.op("st.shared.u32 [%s], 1", tableAccumulators(f, entry, ".shared").seen());
      }
    }
  }

  /**
   * The generic addresses of function f's accumulators: the per-block table's entry when
   * {@code entry} >= 0, else group {@code group}'s global ones. For the row path where the entry
   * is found by group, whose lanes may take either: one copy of the update with generic atomics
   * (see {@link #rowsInTableOrGlobal}).
   */
  private Accumulators eitherAccumulators(int f, String entry, String group) {
    String inTable = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", inTable, entry);
    Accumulators table = tableAccumulators(f, entry, "");
    Accumulators global = globalAccumulators(f, group, "");
    String[] generic = new String[3];
    String[] tables = {table.value(), table.high(), table.seen()};
    String[] globals = {global.value(), global.high(), global.seen()};
    for (int i = 0; i < 3; i++) {
      if (tables[i] == null) {
        continue; // a word the compact layout has not for this function: none of its updates
      }
      generic[i] = b.b64();
      b.op("selp.b64 %s, %s, %s, %s", generic[i], tables[i], globals[i], inTable);
    }
    return new Accumulators(generic[0], generic[1], generic[2], "", inTable);
  }

  /**
   * {@code update} written twice: for function f's accumulators in the per-block table's entry
   * {@code entry} when it is one (>= 0), else for group {@code group}'s global ones. Each copy
   * addresses its own state space, where one copy on generic addresses would compute both
   * addresses, select one and make generic atomics. For the warp path, where one lane updates
   * (HashAggregateBench at 1 group: 0.81 ms, against 0.92 ms with generic addresses).
   */
  private void inTableOrGlobal(int f, String entry, String group,
      Consumer<Accumulators> update) {
    String global = b.label("function" + f + "_global");
    String done = b.label("function" + f + "_accumulated");
    bySpace(entry, global, done, space -> update.accept(accumulators(f, entry, group, space)));
  }

  /**
   * {@code update} written twice, given the state space to address: ".shared" for the lanes whose
   * per-block entry {@code entry} is one (>= 0), ".global" (placed at {@code global}) for the
   * others; then {@code done} placed.
   */
  private void bySpace(String entry, String global, String done,
      Consumer<String> update) {
    String inTable = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", inTable, entry);
    b.op("@!%s bra %s", inTable, global);
    update.accept(".shared");
    b.op("bra %s", done);
    b.place(global);
    update.accept(".global");
    b.place(done);
  }

  /**
   * Function f's accumulators in {@code space}: the per-block table's entry {@code entry} for
   * ".shared", group {@code group}'s global ones for ".global".
   */
  private Accumulators accumulators(int f, String entry, String group, String space) {
    return space.equals(".shared") ? tableAccumulators(f, entry, space)
        : globalAccumulators(f, group, space);
  }

  /**
   * The per-block table's sections, computed once before the tile loop ({@link #hold}): the
   * table they are of, the highs' offset from the values (.b64) and the seen words' shared
   * address (.b64); null before.
   */
  private record Sections(LocalKeyTable.View table, String highs, String seen) {}

  private Sections sections;

  /**
   * Before the tile loop: the sections of the per-block table {@code table}, which {@link
   * #tableAccumulators} then takes from registers instead of computing them in every item.
   */
  void hold(LocalKeyTable.View table) {
    String highs = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", highs, table.entries64(), layout.highsPerEntry());
    String seen = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", seen, table.entries64(), layout.seenPerEntry(),
        table.local());
    sections = new Sections(table, highs, seen);
  }

  /**
   * Function f's accumulators in the per-block table's entry {@code entry} (>= 0), addressed in
   * {@code space} (".shared", or "" for generic addresses), in the table's {@link #layout}: word
   * f * E + e of values[F][E], word h * E + e of highs[H][E] after it (h: f's row of them),
   * word s * E + e of seen[S][E] after keys[E]; a high or seen the layout has not for f is null.
   */
  private Accumulators tableAccumulators(int f, String entry, String space) {
    String base = table.local();
    String entries64 = table.entries64();
    if (!space.equals(".shared")) { // generic
      base = b.b64();
      b.op("cvta.shared.u64 %s, %s", base, table.local());
    }
    String e = b.b64();
    b.op("cvt.s64.s32 %s, %s", e, entry);
    String word = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", word, entries64, f, e);
    String value = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", value, word, base);
    // Where f's row of highs (of seen) is f, as in LocalTable's layout, its word is f's value's.
    String high = null;
    if (layout.hasHigh(f)) {
      String highValue = value; // where the high would be with the values at its row
      if (layout.highRow(f) != f) {
        highValue = b.b64();
        b.op("mad.lo.s64 %s, %s, 8, %s", highValue, tableWord(layout.highRow(f), e), base);
      }
      high = b.b64();
      if (heldSections(space)) {
        b.op("add.s64 %s, %s, %s", high, highValue, sections.highs());
      } else {
        b.op("mad.lo.s64 %s, %s, %d, %s", high, entries64, layout.highsPerEntry(), highValue);
      }
    }
    String seen = null;
    if (layout.hasSeen(f)) {
      String seenWord = layout.seenRow(f) == f ? word : tableWord(layout.seenRow(f), e);
      seen = b.b64();
      if (heldSections(space)) {
        b.op("mad.lo.s64 %s, %s, 4, %s", seen, seenWord, sections.seen());
      } else {
        b.op("mad.lo.s64 %s, %s, %d, %s", seen, entries64, layout.seenPerEntry(), base);
        b.op("mad.lo.s64 %s, %s, 4, %s", seen, seenWord, seen);
      }
    }
    return new Accumulators(value, high, seen, space, null);
  }

  /** Whether {@link #sections} hold the current table's, for addresses in {@code space}. */
  private boolean heldSections(String space) {
    return sections != null && sections.table() == table && space.equals(".shared");
  }

  /** Word {@code row} * E + {@code e} (.b64) of a section of the table's rows. */
  private String tableWord(int row, String e) {
    String word = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", word, table.entries64(), row, e);
    return word;
  }

  /**
   * Group {@code group}'s global accumulators of function f, addressed in {@code space}
   * (".global", or "" for generic addresses: the plan's pointers as they are).
   */
  private Accumulators globalAccumulators(int f, String group, String space) {
    String g = b.b64();
    b.op("cvt.u64.u32 %s, %s", g, group);
    String[] at = new String[3];
    int[] fields = {AggregatePlan.F_VALUE, AggregatePlan.F_HIGH, AggregatePlan.F_SEEN};
    for (int i = 0; i < 3; i++) {
      int field = AggregatePlan.functionField(spec.keyCount(), f, fields[i]);
      int width = i == 2 ? 4 : 8;
      if (space.equals(".global")) {
        at[i] = plan.element(field, g, width);
        continue;
      }
      String base = plan.word(field);
      at[i] = b.b64();
      b.op("mad.lo.s64 %s, %s, %d, %s", at[i], g, width, base);
    }
    return new Accumulators(at[0], at[1], at[2], space, null);
  }

  private Kind kind(int f) {
    return spec.functions().get(f).kind();
  }

  private TypeId inputType(int f) {
    return AccumulatorArithmetic.inputType(spec, f);
  }

  static boolean isSum(Kind kind) {
    return kind == Kind.SUM || kind == Kind.SUM_DECIMAL;
  }

  private static boolean isCount(Kind kind) {
    return kind == Kind.COUNT_ROWS || kind == Kind.COUNT;
  }

  /**
   * hash_aggregate.cuh AccumulateWarp for function f: the warp's valid inputs reduced (counts by
   * popcount; integer sums, minimums and maximums by redux.sync where the device has it; the
   * others with shuffles), then merged by the leader into {@code entry} or the
   * group's global accumulators.
   */
  private void warpFunction(int f, String act, AggregateValue input, String isLeader, String entry,
      String group) {
    Kind kind = kind(f);
    b.comment("function " + f + ": " + kind + " of the warp");
    String skip = b.label("warp_function" + f);
    String valid = act;
    if (input != null && input.valid() != null) {
      valid = b.pred();
      b.op("and.pred %s, %s, %s", valid, act, input.valid());
    }
    String validLanes = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", validLanes, valid);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, validLanes);
    b.op("@%s bra.uni %s", none, skip);
    String low = b.b64();
    String high = null;
    String count = null;
    if (isCount(kind)) {
      count = b.b32();
      b.op("popc.b32 %s, %s", count, validLanes);
    } else if (features.reduxSync() && isSum(kind) && inputType(f) != TypeId.DOUBLE) {
      high = b.b64();
      String x = b.b64();
      b.op("selp.b64 %s, %s, 0, %s", x, input.value(), valid);
      reduxSum64(x, low, high);
    } else if (isSum(kind)) {
      String[] x = arithmetic.int128(inputType(f), input.value());
      high = b.b64();
      b.op("selp.b64 %s, %s, 0, %s", low, x[0], valid);
      b.op("selp.b64 %s, %s, 0, %s", high, x[1], valid);
      for (int offset = 16; offset >= 1; offset >>= 1) {
        String otherLow = TilePrimitives.shuffleXor64(b, low, offset);
        String otherHigh = TilePrimitives.shuffleXor64(b, high, offset);
        b.op("add.cc.u64 %s, %s, %s", low, low, otherLow);
        b.op("addc.u64 %s, %s, %s", high, high, otherHigh);
      }
    } else if (features.reduxSync() && !isFloating(inputType(f))) {
      String x = b.b64();
      b.op("selp.b64 %s, %s, %d, %s", x, input.value(), identity(kind, inputType(f)), valid);
      reduxMinMax64(kind, x, low);
    } else {
      b.op("selp.b64 %s, %s, %d, %s", low, input.value(), identity(kind, inputType(f)), valid);
      for (int offset = 16; offset >= 1; offset >>= 1) {
        String other = TilePrimitives.shuffleXor64(b, low, offset);
        String better = arithmetic.better(kind, inputType(f), other, low);
        b.op("@%s mov.b64 %s, %s", better, low, other);
      }
    }
    b.op("@!%s bra %s", isLeader, skip);
    String sumHigh = high;
    String countLanes = count;
    inTableOrGlobal(f, entry, group, at -> {
      if (isCount(kind)) {
        arithmetic.addCount(at, countLanes);
      } else {
        arithmetic.markSeen(at, input);
        if (isSum(kind)) {
          arithmetic.addSum(f, at, low, sumHigh);
        } else {
          arithmetic.atomicMinMax(kind, inputType(f), at, low);
        }
      }
    });
    b.place(skip);
  }

  /**
   * The warp's sum of the .s64 {@code x} (every lane's; 0 where a lane adds nothing), exactly, as
   * an int128 into {@code low} and {@code high}. redux.sync adds only 32-bit words, so each value
   * is cut into three pieces of 21, 21 and 22 bits (the last signed): 32 of a piece sum to at
   * most 27 bits, and the pieces' sums are put together again in 128 bits. Three reductions
   * instead of five rounds of four shuffles.
   */
  private void reduxSum64(String x, String low, String high) {
    String[] piece = new String[3];
    for (int i = 0; i < 3; i++) {
      String shifted = b.b64();
      b.op("shr.s64 %s, %s, %d", shifted, x, 21 * i);
      piece[i] = b.b32();
      b.op("cvt.u32.u64 %s, %s", piece[i], shifted);
      if (i < 2) {
        b.op("and.b32 %s, %s, 0x1fffff", piece[i], piece[i]);
      }
      b.op("redux.sync.add.%s %s, %s, -1", i < 2 ? "u32" : "s32", piece[i], piece[i]);
    }
    // low = s0 + (s1 << 21), at most 2^48: no carry. Then s2 << 42 in 128 bits, added.
    String s1 = b.b64();
    b.op("cvt.u64.u32 %s, %s", low, piece[0]);
    b.op("cvt.u64.u32 %s, %s", s1, piece[1]);
    b.op("shl.b64 %s, %s, 21", s1, s1);
    b.op("add.s64 %s, %s, %s", low, low, s1);
    String s2 = b.b64();
    b.op("cvt.s64.s32 %s, %s", s2, piece[2]);
    String s2Low = b.b64();
    b.op("shl.b64 %s, %s, 42", s2Low, s2);
    b.op("shr.s64 %s, %s, 22", high, s2);
    b.op("add.cc.u64 %s, %s, %s", low, low, s2Low);
    b.op("addc.u64 %s, %s, 0", high, high);
  }

  /**
   * The warp's MIN or MAX of the .s64 {@code x} (every lane's; the identity where a lane has no
   * value) into {@code result}: redux.sync of the high words (signed), then of the low words
   * (unsigned) of the lanes whose high word is the result's.
   */
  private void reduxMinMax64(Kind kind, String x, String result) {
    String op = kind == Kind.MIN ? "min" : "max";
    String lowWord = b.b32();
    String highWord = b.b32();
    b.op("mov.b64 {%s, %s}, %s", lowWord, highWord, x);
    String bestHigh = b.b32();
    b.op("redux.sync.%s.s32 %s, %s, -1", op, bestHigh, highWord);
    String tied = b.pred();
    b.op("setp.eq.s32 %s, %s, %s", tied, highWord, bestHigh);
    String candidate = b.b32();
    b.op("selp.b32 %s, %s, %s, %s", candidate, lowWord,
        kind == Kind.MIN ? "0xffffffff" : "0", tied);
    String bestLow = b.b32();
    b.op("redux.sync.%s.u32 %s, %s, -1", op, bestLow, candidate);
    b.op("mov.b64 %s, {%s, %s}", result, bestLow, bestHigh);
  }

  /**
   * hash_aggregate.cuh Accumulate for function f: one row's input into the accumulators that
   * {@code accumulators} addresses (called past the input's NULL test, so a NULL input computes
   * no address). Where {@code waits} is a list (the global accumulators of
   * {@link #rowsInTableOrGlobal}), a function whose update waits for a result issues its atomic
   * or read here and adds what waits to {@code waits}, for the caller to write after every
   * function's; where null, each function's update is written whole.
   */
  private void rowFunction(int f, AggregateValue input,
      Supplier<Accumulators> accumulators, List<Runnable> waits) {
    Kind kind = kind(f);
    b.comment("function " + f + ": " + kind + " of the row");
    String skip = b.label("row_function" + f);
    if (kind != Kind.COUNT_ROWS && input.valid() != null) {
      b.op("@!%s bra %s", input.valid(), skip);
    }
    Accumulators at = accumulators.get();
    if (kind != Kind.COUNT_ROWS) {
      arithmetic.markSeen(at, input);
    }
    String valid = kind == Kind.COUNT_ROWS ? null : input.valid();
    switch (kind) {
      case COUNT_ROWS, COUNT -> arithmetic.addCount(at, "1");
      case SUM, SUM_DECIMAL -> {
        if (waits != null && waitsForResult(f, at.space())) {
          waits.add(where(valid, arithmetic.issueSum(f, at, input.value())));
        } else if (arithmetic.wraps(f)) {
          arithmetic.addWrappingSum(at, input.value());
        } else {
          String[] x = arithmetic.int128(inputType(f), input.value());
          arithmetic.addSum(at, x[0], x[1]);
        }
      }
      case MIN, MAX -> {
        if (waits != null && waitsForResult(f, at.space())) {
          waits.add(where(valid, arithmetic.readFirstMinMax(kind, at, input.value())));
        } else {
          arithmetic.atomicMinMax(kind, inputType(f), at, input.value());
        }
      }
      default -> throw new IllegalStateException("no accumulation for " + kind);
    }
    b.place(skip);
  }

  /**
   * Whether function f's update in {@code space} (".shared" or ".global") waits for a result: a
   * sum (the carry; a wrapping sum's in shared memory only, {@link SharedAtomics#issueWrapping64})
   * or an integer MIN/MAX (the compare after the read, {@link
   * AccumulatorArithmetic#readFirstMinMax}).
   */
  private boolean waitsForResult(int f, String space) {
    Kind kind = kind(f);
    boolean minMax = kind == Kind.MIN || kind == Kind.MAX;
    boolean carryWaits = !arithmetic.wraps(f) || space.equals(".shared");
    return isSum(kind) && carryWaits || minMax && !isFloating(inputType(f));
  }

  /** Whether no function's input can be NULL (COUNT(*) has none). */
  private boolean noNullableInputs() {
    return Arrays.stream(inputs).allMatch(input -> input == null || input.valid() == null);
  }

  /** The functions that {@link #waitsForResult} in {@code space}. */
  private int waitingFunctions(String space) {
    int waiting = 0;
    for (int f = 0; f < spec.functions().size(); f++) {
      if (waitsForResult(f, space)) {
        waiting++;
      }
    }
    return waiting;
  }

  /** {@code wait}, written to run only where {@code valid} holds (always where it is null). */
  private Runnable where(String valid, Runnable wait) {
    if (valid == null) {
      return wait;
    }
    return () -> {
      String skip = b.label("wait_skipped");
      b.op("@!%s bra %s", valid, skip);
      wait.run();
      b.place(skip);
    };
  }
}
