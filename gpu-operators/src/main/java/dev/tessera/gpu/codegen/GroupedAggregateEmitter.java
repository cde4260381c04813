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
  /**
   * Whether the per-block table is found by fixed-width keys (the aggregation's, or the code
   * index of keys found by their codes): only then may the kernel accumulate runs.
   */
  private final boolean fixedWidthTable;
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
   * Where the table is found by key: the per-block entry of the lane's NULL key's group (.b32, -1
   * until a lookup found it there) and that group ({@link #nullKeyRows}).
   */
  private String nullEntry;
  private String nullGroup;

  /**
   * {@code wholeMultiprocessor}: whether the kernel runs one block a multiprocessor
   * (AggregateUpdateGenerator.fillsMultiprocessor), where the block's table of a string key
   * holds its short strings (LocalKeyTable.holdsShortStrings). {@code coded}: where the keys are
   * found by their codes ({@link CodeGroups}), which; else null. {@code plainCopies}: whether
   * items of runs may take a plain copy for warps whose items find no shortcut ({@link
   * ShortcutMode}): only in a kernel of a block a multiprocessor, where it was measured, and
   * whose register ask (64) the copy stays within or the generator writes the kernel again
   * without it ({@link GeneratedKernel#leaner}). {@code tableEntries}: the per-block table's
   * entries as a constant (AggregateUpdateGenerator.constantEntries: the launch gives every
   * kernel of this code the same), or -1 where the kernel reads them from the plan. {@code
   * layout}: where the table's sections lie.
   */
  GroupedAggregateEmitter(PtxBuilder b, AggregateSpec spec, ProgramEmitter body,
      String localSymbol, KernelFeatures features, boolean wholeMultiprocessor,
      CodeGroups.Keys coded, boolean plainCopies, int tableEntries, LocalTableLayout layout) {
    this.b = b;
    this.plainCopies = plainCopies;
    this.tableEntries = tableEntries;
    this.spec = spec;
    this.body = body;
    this.localSymbol = localSymbol;
    this.plan = new PlanWords(b, body, spec);
    AggregateSpec tableKeys = LocalKeyTable.tableKeys(spec, wholeMultiprocessor, coded != null);
    this.keyTable =
        tableKeys == null ? null
            : new LocalKeyTable(b, tableKeys, localSymbol + "_claims", layout);
    this.lookup = new GroupLookup(b, spec, body, plan, keyTable, coded);
    this.fixedWidthTable = keyTable != null
        && (coded != null || LocalKeyTable.holdsFixedWidth(spec, wholeMultiprocessor));
    this.accumulation = new GroupAccumulation(b, spec, plan, features, layout);
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
      nullEntry = b.b32();
      nullGroup = b.b32();
      b.op("mov.u32 %s, -1", nullEntry);
      b.op("mov.u32 %s, 0", nullGroup);
    }
    accumulation.hold(table);
    lookup.begin(); // one fixed-width key (or a short string): the lookup remembers its group
    if (spec.keyCount() == 0) {
      accumulation.remember();
    }
    if (fixedWidthTable && RunAccumulators.admits(spec)) {
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
   * ({@link #tableEntries}, AggregateUpdateGenerator.constantEntries), else the plan's.
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
    String nullRows = null;
    AggregateValue[] nullKeys = keys;
    if (splitsNullKeys(keys, nullable)) {
      nullRows = b.pred();
      keys = rowsWithKeys(act, keys, nullRows);
    }
    Runnable atClaim = () -> accumulation.markSeenAtClaim(table, seenAtInsert, entry);
    if (!accumulation.accumulatesRuns()) {
      if (keys.length > 0) {
        lookup.findGroup(act, keys, seenAtInsert, group, table, entry, atClaim);
      }
      accumulate(act, group, column, entry, true);
      if (nullRows != null) {
        nullKeyRows(nullRows, nullKeys, column, seenAtInsert);
      }
      return;
    }
    // Fixed-width keys (or dictionary strings' code index): the table is found by key. Where
    // every aggregated row of the warp is of its lane's run (one group, or keys clustered in the
    // data: every item after a lane's first), the rows go into the runs and the item skips the
    // lookup's and the warp path's tests and shuffles.
    AggregateValue[] tableKeys = lookup.tableKeys(keys);
    GroupLookup.TableForms forms = lookup.tableForms(tableKeys);
    boolean modes = takesPlainItems(tableKeys);
    String plain = modes ? b.label("item_plain") : null;
    String updated = b.label("item_updated");
    if (modes) {
      shortcuts.branchToPlain(plain);
    }
    GroupLookup.Recalled recalled = lookup.recall(act, forms, group, entry);
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
          lookup.lookAll(act, forms, entry), atClaim);
      String rows = nullRows != null ? nullRowsJoin(act, nullRows, group, entry) : act;
      accumulate(rows, group, column, entry, false);
    }
    b.place(updated);
    if (nullRows != null) {
      nullKeyRows(nullRows, nullKeys, column, seenAtInsert);
    }
  }

  /**
   * In a plain item (each row on its own, ShortcutMode): the rows of {@code nullRows} whose lane
   * remembers the NULL group's per-block entry join the item's rows ({@code act}) with that group
   * and entry, and leave {@code nullRows}, so that {@link #nullKeyRows} runs only for NULL rows
   * whose lane has not found the entry yet (a pass of its own was some 24 of a plain item's 192
   * instructions at 100 groups): HashAggregateBench's nullable keys 3-4% faster at 10 to 1,000
   * groups (H200, ncu). Returns the rows the item then accumulates.
   */
  private String nullRowsJoin(String act, String nullRows, String group, String entry) {
    String joined = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", joined, nullEntry);
    b.op("and.pred %s, %s, %s", joined, joined, nullRows);
    b.op("@%s mov.u32 %s, %s", joined, group, nullGroup);
    b.op("@%s mov.u32 %s, %s", joined, entry, nullEntry);
    String rows = b.pred();
    b.op("or.pred %s, %s, %s", rows, act, joined);
    String stays = b.pred();
    b.op("not.pred %s, %s", stays, joined);
    b.op("and.pred %s, %s, %s", nullRows, nullRows, stays);
    return rows;
  }

  /**
   * Whether the item's rows whose key is NULL are updated apart from the others ({@link
   * #rowsWithKeys}, {@link #nullKeyRows}): where the per-block table is found by one key (its
   * NULL rows are one group, whose entry a lane remembers), that key can be NULL and no
   * function's input can ({@code nullable}, by input column). Where an input can be NULL too, the
   * kernel of HashAggregateBench's functions took 110 registers with the split, its form without
   * the plain copy 96 (64 without the split).
   */
  private boolean splitsNullKeys(AggregateValue[] keys, boolean[] nullable) {
    return keyTable != null && keys.length == 1 && !keys[0].isString() && keys[0].valid() != null
        && spec.functions().stream()
            .noneMatch(f -> f.kind() != Kind.COUNT_ROWS && nullable[f.input()]);
  }

  /**
   * The rows of {@code act} whose keys are all non-NULL keep {@code act} (the rest into {@code
   * nullRows}, a .pred), and the keys without their validity: for those rows the lookup, the
   * lane's last group, the runs and the shortcuts are the non-NULL kernel's, where a NULL key's
   * rows broke a warp's run at every item that held one (HashAggregateBench "nullable keys", one
   * key in 100 NULL: 28% of a warp's items). The per-block table still holds the NULL group, as
   * LocalKeyTable.NULL_KEY, so a row whose key is that value takes the global table ({@link
   * GroupLookup#holdsNullKeys}).
   */
  private AggregateValue[] rowsWithKeys(String act, AggregateValue[] keys, String nullRows) {
    b.comment("rows whose keys are not NULL: the item; rows with a NULL key after it");
    String valid = b.pred();
    b.op("setp.eq.u32 %s, 0, 0", valid);
    boolean[] nullable = new boolean[keys.length];
    AggregateValue[] present = new AggregateValue[keys.length];
    for (int k = 0; k < keys.length; k++) {
      nullable[k] = keys[k].valid() != null;
      if (nullable[k]) {
        b.op("and.pred %s, %s, %s", valid, valid, keys[k].valid());
      }
      present[k] = new AggregateValue(keys[k].value(), null, keys[k].length());
    }
    b.op("not.pred %s, %s", nullRows, valid);
    b.op("and.pred %s, %s, %s", nullRows, nullRows, act);
    b.op("and.pred %s, %s, %s", act, act, valid);
    lookup.holdsNullKeys(nullable);
    return present;
  }

  /**
   * The item's rows whose key is NULL ({@code nullRows}), after the others, where the warp has
   * any. They are one group: a lane looks its entry up once (the lane's last group left as it
   * was) and remembers it ({@link #nullEntry}), and the rows go to their accumulators as one
   * warp's rows of one group ({@link GroupAccumulation#accumulateApart}: a lone row its own
   * atomics), not into the lanes' runs, which keep their groups for the next item. One key in
   * 100 NULL, HashAggregateBench's nullable keys took 13% less at one group and 12% at 10, 1-4%
   * at 100 and 1,000 (H200, ncu), where their warps' every item looked up and left the runs.
   */
  private void nullKeyRows(String nullRows, AggregateValue[] keys,
      IntFunction<AggregateValue> column, boolean[] seenAtInsert) {
    b.comment("the item's rows whose key is NULL: one group, apart from the runs");
    String any = b.pred();
    b.op("vote.sync.any.pred %s, %s, -1", any, nullRows);
    String done = b.label("null_rows_done");
    b.op("@!%s bra.uni %s", any, done);
    String known = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", known, nullEntry);
    String looks = b.pred();
    b.op("not.pred %s, %s", looks, known);
    b.op("and.pred %s, %s, %s", looks, looks, nullRows);
    String group = b.b32();
    b.op("mov.u32 %s, %s", group, nullGroup);
    String entry = b.b32();
    b.op("mov.u32 %s, %s", entry, nullEntry);
    String anyLooks = b.pred();
    b.op("vote.sync.any.pred %s, %s, -1", anyLooks, looks);
    String found = b.label("null_group_known");
    b.op("@!%s bra.uni %s", anyLooks, found);
    String looked = b.b32();
    String lookedEntry = b.b32();
    b.op("mov.u32 %s, 0", looked);
    lookup.findGroup(looks, keys, seenAtInsert, looked, table, lookedEntry,
        lookup.lookAll(looks, lookup.tableForms(keys), lookedEntry),
        () -> accumulation.markSeenAtClaim(table, seenAtInsert, lookedEntry));
    b.op("@%s mov.u32 %s, %s", looks, group, looked);
    b.op("@%s mov.u32 %s, %s", looks, entry, lookedEntry);
    // Remembered only where the table holds the group: a lane sent to the global table (a BUSY
    // entry, a lost race) looks again at its next NULL key.
    String remember = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", remember, lookedEntry);
    b.op("and.pred %s, %s, %s", remember, remember, looks);
    b.op("@%s mov.u32 %s, %s", remember, nullEntry, lookedEntry);
    b.op("@%s mov.u32 %s, %s", remember, nullGroup, looked);
    b.place(found);
    accumulation.accumulateApart(table, nullRows, group, inputs(column), entry);
    b.place(done);
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
   * plainCopies}), and not for keys that can be NULL: with their null flags the kernel spilled
   * at the 64 registers of a block of 1,024 threads. A key that can be NULL comes here without
   * them (its NULL rows go apart, {@link #nullKeyRows}), and the copy fits: HashAggregateBench's
   * nullable keys 11% faster at 10 to 1,000 groups, 2% slower at one (H200, ncu).
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
   * its type's width. A 4-byte integer the builder knows sign-extended ({@link PtxBuilder#narrow})
   * is so already: the two shifts that would do it again cost ptxas (CUDA 12.0's) a register it
   * did not have, GROUP BY a LONG and an INT spilled 8 bytes at 64 registers.
   */
  AggregateValue canonical(int column, Val v) {
    ColumnType type = spec.inputTypes().get(column);
    String value = b.b64();
    b.op("mov.b64 %s, %s", value, v.value());
    if (type.isString()) {
      String length = b.b32();
      b.op("mov.b32 %s, %s", length, v.length());
      return new AggregateValue(value, v.valid(), length, v.code());
    }
    int width = type.id().width();
    boolean signExtended = width == 4 && b.narrow(v.value()) != null;
    if (width < 8 && !signExtended) {
      b.op("shl.b64 %s, %s, %d", value, value, 64 - 8 * width);
      b.op("shr.s64 %s, %s, %d", value, value, 64 - 8 * width);
    }
    return new AggregateValue(value, v.valid(), null);
  }
}
