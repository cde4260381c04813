package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import java.util.Arrays;
import java.util.function.IntFunction;

/**
 * One item of a hash aggregation's update, written into the generated kernel: hash_aggregate.cuh's
 * {@code AggregateItem} (find or insert the row's group, through the direct map when there may be
 * one; the warp-level reduction when the warp's rows share a group, else each row on its own; the
 * per-block table before the global accumulators), specialized to this aggregation. The keys' and
 * functions' types and the functions' kinds are known here, so the code holds only what they
 * need: no loop over the plan's functions, no select of the input, no branch on a type, no NULL
 * test of a value that cannot be NULL. Where it differs from the interpreter kernel (the thread
 * that inserts a group also sets its accumulators, so the host initializes nothing for these
 * kernels; lookups shared by a warp's rows with the same keys; relaxed slot reads; integer
 * MIN/MAX without the read first, or with it issued among the row's other atomics; a sum's carry
 * after them), {@link GroupLookup} and {@link GroupAccumulation} say so.
 *
 * <p>The plan's layout, the hash, the table's protocol and every accumulator's arithmetic are
 * hash_aggregate.cuh's; each method names the function it mirrors, and a change there must be
 * made here too (the CUDA aggregate suites run both kernels against the host reference).
 */
final class GroupedAggregateEmitter {
  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final ProgramEmitter body;
  private final String localSymbol;
  private final PlanWords plan;
  private final GroupLookup lookup;
  private final GroupAccumulation accumulation;
  /** The per-block table found by key, or null where it is found by group. */
  private final LocalKeyTable keyTable;
  /**
   * The per-block table's address and entries, set once before the tile loop ({@link #begin}).
   * Set per item, they were a read of the cluster's CTA id, a shared-window add and a read of the
   * plan in every item (about 6 of HashAggregateBench's 166 instructions an item at 100 groups).
   */
  private LocalKeyTable.View table;
  /** Whether an item may take a plain copy ({@link #takesPlainItems}). */
  private final boolean plainCopies;
  /** The per-block table's entries where the kernel has them as a constant, or -1 (the plan's). */
  private final int tableEntries;
  /**
   * Where the kernel accumulates runs and may take plain copies: whether a warp's next item tries
   * the shortcuts (used where {@link #takesPlainItems}). Null otherwise.
   */
  private ShortcutMode shortcuts;
  /** Whether an item took a plain copy. */
  private boolean tookPlainCopy;

  /**
   * {@code plainCopies}: whether items of runs may take a plain copy for warps whose items find
   * no shortcut ({@link ShortcutMode}): only in a kernel of a block a multiprocessor, where it
   * was measured, and whose register ask (64) the copy stays within or the generator writes the
   * kernel again without it ({@link GeneratedKernel#leaner}). {@code tableEntries}: the per-block
   * table's entries as a constant (AggregateUpdateGenerator.hasConstantEntries: the launch gives
   * every kernel of this code the same), or -1 where the kernel reads them from the plan.
   */
  GroupedAggregateEmitter(PtxBuilder b, AggregateSpec spec, ProgramEmitter body,
      String localSymbol, KernelFeatures features, boolean plainCopies, int tableEntries) {
    this.b = b;
    this.plainCopies = plainCopies;
    this.tableEntries = tableEntries;
    this.spec = spec;
    this.body = body;
    this.localSymbol = localSymbol;
    this.plan = new PlanWords(b, body, spec);
    this.keyTable =
        LocalKeyTable.holds(spec) ? new LocalKeyTable(b, spec, localSymbol + "_claims") : null;
    this.lookup = new GroupLookup(b, spec, body, plan, keyTable);
    this.accumulation = new GroupAccumulation(b, spec, plan, features);
  }

  /**
   * At the kernel's start, after LocalTable's reset and before the barrier after it: the per-block
   * table's keys, where it is found by key ({@link LocalKeyTable#reset}).
   */
  void reset() {
    if (keyTable != null) {
      keyTable.reset(localTable());
    }
  }

  /**
   * At the kernel's start, before the tile loop: the registers that live through the launch, a
   * lane's last group and its per-block entry. Only where a lane's next group is likely its last
   * and the registers are few: one fixed-width key ({@link GroupLookup#begin}, with the table
   * found by key) or none (one group). With string keys (SSB's) most kernels have hundreds of
   * groups; the registers would cost them occupancy and rarely save a lookup.
   */
  void begin() {
    table = localTable();
    if (keyTable != null) {
      keyTable.hold(table);
    }
    accumulation.hold(table);
    lookup.begin(); // one fixed-width key: the lookup remembers the group and its entry
    if (spec.keyCount() == 0) {
      accumulation.remember();
    }
    if (RunAccumulators.admits(spec)) {
      accumulation.beginRuns();
      if (plainCopies) {
        shortcuts = new ShortcutMode(b);
      }
    }
  }

  /**
   * A new .pred: whether the per-block table found by key has room for more groups ({@link
   * LocalKeyTable#hasRoom}); null (no test) where the table is found by group.
   */
  String tableHasRoom() {
    return keyTable == null ? null : keyTable.hasRoom(table);
  }

  /** After the tile loop, before the block's last barrier: what the lanes still hold, merged. */
  void end() {
    if (!accumulation.accumulatesRuns()) {
      return;
    }
    accumulation.end(table);
  }

  /**
   * The per-block table: its shared address and its entries (.b32 and .b64). Held as a shared
   * address, not a generic one: each conversion between the two is a read of the shared
   * window's base (S2R SR_SWINLO), which ptxas put in every item, three times an item of
   * HashAggregateBench's 100-group kernel. The entries are a constant where the kernel has them
   * ({@link #tableEntries}, AggregateUpdateGenerator.hasConstantEntries), else the plan's.
   */
  private LocalKeyTable.View localTable() {
    String local = b.b64();
    b.op("mov.u64 %s, %s", local, localSymbol);
    String entries64;
    if (tableEntries >= 0) {
      entries64 = b.b64();
      b.op("mov.u64 %s, %d", entries64, tableEntries);
    } else {
      entries64 = plan.word(AggregatePlan.headerField(AggregatePlan.H_LOCAL_ENTRIES));
    }
    String entries = b.b32();
    b.op("cvt.u32.u64 %s, %s", entries, entries64);
    return new LocalKeyTable.View(local, entries, entries64);
  }

  /**
   * The update of one item, where every lane of the warp is (the warp-level step needs the whole
   * warp): {@code active} (.b32, 0 or 1) says whether the lane's row is aggregated; the program's
   * results are {@code values}, its outputs (the keys, then the functions' inputs) {@code outputs}.
   */
  void item(String active, Val[] values, int[] outputs) {
    item(active, i -> canonical(i, values[outputs[i]]), nullable(values, outputs));
  }

  /** Per input column of the aggregation (the program's outputs), whether it can be NULL. */
  static boolean[] nullable(Val[] values, int[] outputs) {
    boolean[] nullable = new boolean[outputs.length];
    for (int i = 0; i < outputs.length; i++) {
      nullable[i] = values[outputs[i]].valid() != null;
    }
    return nullable;
  }

  /**
   * {@link #item(String, Val[], int[])} with the aggregation's input columns from {@code column}
   * (input column i in its canonical form, emitted where it is asked for: the keys before the
   * lookup, the functions' inputs after it), {@code nullable} saying which can be NULL.
   */
  void item(String active, IntFunction<AggregateValue> column, boolean[] nullable) {
    b.comment("the row's group and its accumulation (hash_aggregate.cuh AggregateItem, inline)");
    String act = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", act, active);
    String group = b.b32();
    b.op("mov.u32 %s, 0", group);
    String entry = keyTable == null ? null : b.b32();
    AggregateValue[] keys = new AggregateValue[spec.keyCount()];
    for (int k = 0; k < keys.length; k++) {
      keys[k] = column.apply(k);
    }
    boolean[] seenAtInsert = GroupAccumulation.seenAtFirstRow(spec,
        f -> nullable[spec.functions().get(f).input()]);
    Runnable atClaim = () -> accumulation.markSeenAtClaim(table, seenAtInsert, entry);
    if (!accumulation.accumulatesRuns()) {
      if (keys.length > 0) {
        lookup.findGroup(act, keys, seenAtInsert, group, table, entry, atClaim);
      }
      accumulate(act, group, column, entry, true);
      return;
    }
    // One fixed-width key: the table is found by key. Where every aggregated row of the warp is
    // of its lane's run (one group, or keys clustered in the data: every item after a lane's
    // first), the rows go into the runs and the item skips the lookup's and the warp path's
    // tests and shuffles.
    GroupLookup.StoredKey[] stored = lookup.storedForms(keys);
    boolean modes = takesPlainItems(keys);
    String plain = modes ? b.label("item_plain") : null;
    String updated = b.label("item_updated");
    if (modes) {
      shortcuts.branchToPlain(plain);
    }
    GroupLookup.Recalled recalled = lookup.recall(act, keys, stored, group, entry);
    String looking = b.label("item_looks");
    b.op("@!%s bra.uni %s", accumulation.allInRuns(act, recalled.looks(), group, looking),
        looking);
    accumulation.addToRuns(act, entry, inputs(column));
    if (modes) {
      shortcuts.found();
    }
    b.op("bra.uni %s", updated);
    b.place(looking);
    lookup.findGroup(act, keys, seenAtInsert, group, table, entry, recalled, atClaim);
    accumulate(act, group, column, entry, true);
    if (modes) {
      shortcuts.shortcutItem(accumulation.lastItemInRuns());
      b.op("bra.uni %s", updated);
      b.comment("an item without shortcuts (ShortcutMode): every row looked up on its own");
      b.place(plain);
      shortcuts.plainItem();
      lookup.findGroup(act, keys, seenAtInsert, group, table, entry,
          lookup.lookAll(act, stored, entry), atClaim);
      accumulate(act, group, column, entry, false);
    }
    b.place(updated);
  }

  /**
   * The item's rows, after their lookup, into their groups' accumulators ({@link
   * GroupAccumulation#accumulate}), with the functions' inputs emitted here: widened before the
   * lookup, they would hold registers through it.
   */
  private void accumulate(String act, String group, IntFunction<AggregateValue> column,
      String entry, boolean warpTest) {
    accumulation.accumulate(table, act, group, inputs(column), entry, warpTest);
  }

  /**
   * Whether the item's warps take plain items where the shortcuts fail ({@link ShortcutMode}): a
   * second copy of the lookup and the rows' update. Only where the kernel allows it ({@code
   * plainCopies}), and not where a key can be NULL: with its null flags the kernel spills at the
   * 64 registers of a block of 1,024 threads, and compiled again with more it runs fewer threads
   * (HashAggregateBench "nullable keys", H200: 94 registers, one group 10% and 10^5 groups 3%
   * slower, 10 to 1,000 groups 9-11% faster).
   */
  private boolean takesPlainItems(AggregateValue[] keys) {
    boolean takes = plainCopies && Arrays.stream(keys).allMatch(k -> k.valid() == null);
    tookPlainCopy |= takes;
    return takes;
  }

  /** Whether an item took a plain copy ({@link #takesPlainItems}). */
  boolean tookPlainCopy() {
    return tookPlainCopy;
  }

  /** The functions' inputs from {@code column} (null for COUNT_ROWS), emitted here. */
  private AggregateValue[] inputs(IntFunction<AggregateValue> column) {
    AggregateValue[] inputs = new AggregateValue[spec.functions().size()];
    for (int f = 0; f < inputs.length; f++) {
      AggregateFunction fn = spec.functions().get(f);
      if (fn.kind() != Kind.COUNT_ROWS) {
        inputs[f] = column.apply(fn.input());
      }
    }
    return inputs;
  }

  /**
   * hash_aggregate.cuh Canonical: input column {@code column}'s value {@code v} sign-extended from
   * its type's width.
   */
  AggregateValue canonical(int column, Val v) {
    ColumnType type = spec.inputTypes().get(column);
    String value = b.b64();
    b.op("mov.b64 %s, %s", value, v.value());
    if (type.isString()) {
      String length = b.b32();
      b.op("mov.b32 %s, %s", length, v.length());
      return new AggregateValue(value, v.valid(), length);
    }
    int width = type.id().width();
    if (width < 8) {
      b.op("shl.b64 %s, %s, %d", value, value, 64 - 8 * width);
      b.op("shr.s64 %s, %s, %d", value, value, 64 - 8 * width);
    }
    return new AggregateValue(value, v.valid(), null);
  }
}
