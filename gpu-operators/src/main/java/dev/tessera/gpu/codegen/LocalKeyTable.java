package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import java.util.ArrayList;
import java.util.List;

/**
 * Not in hash_aggregate.cuh: the per-block table found by the row's keys, for a generated kernel
 * whose key is one fixed-width column ({@link #MAX_KEYS}), or, where the kernel fills a
 * multiprocessor, two ({@link #MAX_WHOLE_MULTIPROCESSOR_KEYS}) or one string ({@link
 * #holdsShortStrings}). The interpreter kernel finds an entry by its
 * group, so every row first looks its group up in the global table (a chain of L2 round trips);
 * here an entry also holds its keys, in shared memory after LocalTable's arrays, and a
 * row whose keys the block has seen finds entry and group there, without the global table.
 *
 * <p>Layout, after LocalTable's bytes rounded up to 8 ({@code CudaHashAggregate.localTableBytes}):
 * {@code values[K][E]} (.b64, a key's stored form: {@link #NULL_KEY} for a NULL fixed-width key,
 * 0 for a NULL string), then {@code nulls[E]} (.b32, bit k set when key k is NULL; written and
 * read only for a string key that can be NULL). {@link #bytes} is their size, which the host adds
 * to the launch's shared memory.
 *
 * <p>An entry's group word (LocalTable's {@code keys[E]}) goes from EMPTY to BUSY (the claiming
 * lane's compare-and-swap), and, once the claiming lane has stored the keys and found the group in
 * the global table, to the group, released (a fence, then the store). Its keys are {@link
 * #RESET_KEY} and its null word 0 from the launch's start ({@link #reset}) until the claiming
 * lane stores them. Nothing is written to an entry again during the launch. A lane reads a
 * slot's group word and keys together, relaxed (the first slot's alone, the next ones two at a
 * time where none before is the lane's, {@link #PROBE_ROUNDS}); where they seem to hold its
 * keys and a key is RESET_KEY, or 0 and nullable (a stale null word would pass), it reads the
 * group word again, acquiring, and the keys after it, so a hit never rests on keys read stale.
 * A lane that finds a BUSY entry, or loses the race for an empty one, or finds the slots it looks
 * at held by other keys, takes the global table and accumulators: the table can only skip work.
 * The merge at the block's end (LocalTable's own) reads the group words after a barrier, as
 * before. The block also counts the entries claimed ({@link #hasRoom}), a hint for prefetching
 * only.
 *
 * <p>Fixed-width keys that can be NULL are held by value (GroupLookup.tableForms): a NULL key is
 * the value {@link #NULL_KEY} and the null words are neither written nor read, so a lane compares
 * values only; one whose 64-bit key is NULL_KEY itself takes the global table. Only a string key
 * that can be NULL has its null bit in the entry's null word.
 */
final class LocalKeyTable {
  /**
   * Keys of at most this many columns are held in the table. More hold more registers while a
   * lane reads its slots' keys: with two INT keys, StarJoinBench's fused kernel went from 56 to
   * 64 registers and from 1.03 to 1.16 ms (sparse: 1.76 to 2.11 ms; H100).
   */
  static final int MAX_KEYS = 1;
  /**
   * Fixed-width keys of at most this many columns are held in the table of a kernel that fills a
   * multiprocessor (AggregateUpdateGenerator.fillsMultiprocessor), which for more than one key
   * probes no join table: HashAggregateBench's "two keys" (GROUP BY k, k % 3) at 1 to 10^5
   * groups 10-71% faster than finding entries by group, with WHERE v > 0 20-56% faster up to
   * 1,000 groups, 10^4 2% and 10^5 29% slower. Both were measured while k % 3 could be NULL (90-96
   * registers); as a key that cannot be NULL (64 registers) they are a further 42-51% faster up
   * to 1,000 groups, and with the filter 27% (10^4) and 20% (10^5). StarJoinBench's fused kernel,
   * which probes three tables and aggregates one row in 125, was 2.3× (dense) and 4.6× (sparse)
   * slower (H200, ncu), so a kernel that probes keeps the table by group.
   */
  static final int MAX_WHOLE_MULTIPROCESSOR_KEYS = 2;
  /**
   * The slots a lane looks at, from the one {@link #firstSlot} names, in rounds read together
   * ({@link #find}): each number is where a round ends. The first slot alone (below 10^4 groups
   * most lanes find their keys there, or claim it), then two at a time, where the round before
   * held other keys: eleven in all. Keys the slot hash spreads as at random (two keys; one that
   * is not a run of integers) fill half of 1,898 entries at 1,000 groups with 27% of their rows
   * past their first slot and 0.5-0.7% of the groups past four, whose rows took the global
   * table: a lane of one item in three there. HashAggregateBench at 1,000 groups against four
   * slots (one, then three): "two columns" 658 -> 507 us, "two nullable columns" 923 -> 743; 1
   * to 100 groups within -5% to +2%, 10^4 and 10^5 +2% to +4% (H200, ncu). More slots after a
   * round of three took the two-key kernels to 80-84 registers; other round shapes made
   * ptxas wait at the item's branch to its plain copy for the next item's loads (one group 18-20%
   * slower), which dev/sass-waits finds in the cubin.
   */
  private static final int[] PROBE_ROUNDS = {1, 3, 5, 7, 9, 11};
  /** Slots a lane looks at, from the one {@link #firstSlot} names. */
  private static final int PROBES = PROBE_ROUNDS[PROBE_ROUNDS.length - 1];
  /**
   * The odd multiplier of the slot's hash (2^64 divided by the golden ratio, Fibonacci hashing).
   */
  static final long SLOT_MULTIPLIER = 0x9e3779b97f4a7c15L;
  /**
   * An entry's key values from the block's start until its claimer stores them: a value no
   * sign-extended narrower integer has and few LONG keys do, so that few hits need {@link
   * #find}'s second read. Without that read HashAggregateBench's long keys took 2.7% (10
   * groups) to 5.3% (1,000) less (H200, ncu); with 0 here, the key 0 of its 10 groups sent a
   * lane of nearly every warp to the second read, and 10 groups took 3.6% more.
   */
  private static final long RESET_KEY = Long.MIN_VALUE;
  /** {@link #RESET_KEY} as a PTX literal. */
  private static final String RESET_KEY_PTX = "0x" + Long.toHexString(RESET_KEY);
  /**
   * Where the table holds NULL keys by value (GroupLookup.tableForms): a NULL key's value in the
   * table, which no sign-extended narrower integer is and {@link #RESET_KEY} is not. A row whose
   * key is this value itself, not NULL, does not look in the table.
   */
  static final long NULL_KEY = Long.MIN_VALUE + 1;
  private static final int EMPTY = GroupLookup.EMPTY;
  private static final int BUSY = GroupLookup.BUSY;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  /** The block's count of entries claimed so far (.shared .u32): its symbol. */
  private final String claims;

  /** Where the sections of the table before its keys lie. */
  private final LocalTableLayout layout;

  /**
   * {@code claims}: the name of the block's count of claimed entries, declared here; {@code
   * layout}: where the table's sections before the keys lie.
   */
  LocalKeyTable(PtxBuilder b, AggregateSpec spec, String claims, LocalTableLayout layout) {
    this.b = b;
    this.spec = spec;
    this.claims = claims;
    this.layout = layout;
    b.declare(".shared .align 4 .u32 " + claims);
  }

  /** Whether every kernel of {@code spec} finds per-block entries by its fixed-width key. */
  static boolean holds(AggregateSpec spec) {
    return fixedWidthKeys(spec, MAX_KEYS);
  }

  /**
   * Whether the kernel of {@code spec} finds per-block entries by its fixed-width keys: every
   * kernel ({@link #holds}), or one that fills a multiprocessor ({@code wholeMultiprocessor}) of
   * up to {@link #MAX_WHOLE_MULTIPROCESSOR_KEYS}.
   */
  static boolean holdsFixedWidth(AggregateSpec spec, boolean wholeMultiprocessor) {
    return holds(spec) || wholeMultiprocessor && holdsWhereFilling(spec);
  }

  /**
   * Whether a kernel of {@code spec} that fills a multiprocessor would find per-block entries by
   * its fixed-width keys (AggregateUpdateGenerator.fillsMultiprocessor asks, to fill one for
   * them where the kernel probes no join table).
   */
  static boolean holdsWhereFilling(AggregateSpec spec) {
    return fixedWidthKeys(spec, MAX_WHOLE_MULTIPROCESSOR_KEYS);
  }

  private static boolean fixedWidthKeys(AggregateSpec spec, int most) {
    int keys = spec.keyCount();
    return keys > 0 && keys <= most && spec.keyTypes().stream().noneMatch(t -> t.isString());
  }

  /** Shared-memory bytes of the keys of a table of {@code entries} entries of these keys. */
  static int bytes(AggregateSpec keys, int entries) {
    return entries * (Long.BYTES * keys.keyCount() + Integer.BYTES);
  }

  /**
   * Whether a kernel of {@code spec} that fills a multiprocessor finds per-block entries by key
   * for its rows whose one key is a string of at most {@link #SHORT_STRING_BYTES} bytes (or
   * NULL), by that string's short form ({@link #shortStringSpec}); longer strings find their
   * group in the global table, then their entry by that group ({@link #LONG_STRING_GROUP}).
   */
  static boolean holdsShortStrings(AggregateSpec spec) {
    return spec.keyCount() == 1 && spec.keyTypes().get(0).isString();
  }

  /**
   * The most bytes of a string key's short form: its bytes in the low 7 bytes of a word (0 past
   * its end), its length in the top byte, one LONG that is the string and nothing else.
   */
  static final int SHORT_STRING_BYTES = 7;

  /**
   * Or'ed into a longer string's group, its key in the table ({@link #holdsShortStrings}): bit
   * 62, which no short form (its top byte at most 7) and not {@link #RESET_KEY} has (nor a
   * device address, below 2^57: GroupLookup tags a lane's last long string's with it).
   */
  static final long LONG_STRING_GROUP = 1L << 62;

  /** {@code spec} with its string key as the LONG of its short form, for the table's keys. */
  static AggregateSpec shortStringSpec(AggregateSpec spec) {
    List<ColumnType> types = new ArrayList<>(spec.inputTypes());
    types.set(0, ColumnType.LONG);
    return new AggregateSpec(types, spec.keyCount(), spec.functions(), spec.ansi());
  }

  /**
   * The keys the per-block table of a kernel of {@code spec} holds, as the spec of a table of
   * them: {@code spec} itself where it holds its fixed-width keys ({@link #holdsFixedWidth});
   * where the keys are found by their codes ({@code coded}, {@link CodeGroups}), their code index
   * ({@link CodeGroups#tableSpec}); where the kernel fills a multiprocessor ({@code
   * wholeMultiprocessor}) and {@link #holdsShortStrings}, the string's short form ({@link
   * #shortStringSpec}); else null (the table is found by group).
   */
  static AggregateSpec tableKeys(AggregateSpec spec, boolean wholeMultiprocessor,
      boolean coded) {
    if (holdsFixedWidth(spec, wholeMultiprocessor)) {
      return spec;
    }
    if (coded) {
      return CodeGroups.tableSpec(spec);
    }
    return wholeMultiprocessor && holdsShortStrings(spec) ? shortStringSpec(spec) : null;
  }

  /**
   * Shared-memory bytes of the keys of the table of {@code entries} entries of a kernel of
   * {@code spec} ({@link #tableKeys}), 0 where it is found by group.
   */
  static int bytes(AggregateSpec spec, int entries, boolean wholeMultiprocessor,
      boolean coded) {
    AggregateSpec keys = tableKeys(spec, wholeMultiprocessor, coded);
    return keys == null ? 0 : bytes(keys, entries);
  }

  /**
   * The per-block table as the item sees it: its shared address, its entries (.b32 and .b64).
   */
  record View(String local, String entries, String entries64) {}

  /** The view {@link #hold} was given, and its sections' addresses (null before it). */
  private View heldView;
  private Addresses held;

  /**
   * What a lane's search found: {@code hit} (.pred), its keys held by entry {@code entry} with
   * group {@code group}; {@code claimed} (.pred), an empty entry, which holds its keys now, whose
   * group the lane must find and then {@link #publish}. Neither: {@code entry} is -1.
   */
  record Found(String hit, String claimed) {}

  /**
   * For the lanes of {@code looks}: the entry holding keys {@code keys} (their stored forms;
   * {@code nullable}: whether each can be NULL) into {@code entry} and its group into {@code
   * group}, or an empty entry claimed for them, from the slot {@link #firstSlot} names. {@code
   * entry} must be -1 on entry for the lanes of {@code looks}; it is left alone for the others.
   */
  Found find(View table, String looks, GroupLookup.StoredKey[] keys, boolean[] nullable,
      String entry, String group) {
    String hit = b.pred();
    String claimed = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", hit);
    b.op("setp.ne.s32 %s, 0, 0", claimed);
    String done = b.label("local_key_done");
    b.op("@!%s bra %s", looks, done);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, table.entries());
    b.op("@%s bra %s", none, done);
    Addresses at = addresses(table);
    String lastEntry = b.b32();
    b.op("sub.u32 %s, %s, 1", lastEntry, table.entries());
    String first = firstSlot(keys, table.entries());
    String myNulls = nullBits(keys, nullable);
    Slots slots = new Slots(at, table, first, lastEntry, keys.length, myNulls != null);
    // A round's group words and keys, relaxed, each round read together (one wait, not one a
    // slot) where the lane's keys were in none of the rounds before (PROBE_ROUNDS), so most
    // rows read one entry. No fence (it would wait for the thread's global atomics too).
    String p = b.pred();
    int round = 0;
    for (int probe = 0; probe < PROBES; probe++) {
      if (probe == 0 || probe == PROBE_ROUNDS[round - 1]) { // a round's first slot
        slots.load(probe, PROBE_ROUNDS[round++]);
      }
      String next = b.label("local_key_next");
      String busyOrEmpty = b.label("local_key_free");
      String same = b.label("local_key_same");
      b.op("setp.lt.s32 %s, %s, 0", p, slots.held[probe]);
      b.op("@%s bra %s", p, busyOrEmpty);
      branchUnlessEqual(slots.values[probe], slots.nulls[probe], keys, myNulls, next);
      // They look equal. A group word of 0 or more is the entry's last; the keys read with it
      // are either the claimer's or reset's: where they are not RESET_KEY they are the
      // claimer's, and where they are not 0 either the claimer's keys are not NULL (stored as
      // 0), so the null word is the claimer's 0 or reset's 0.
      b.op("@%s bra %s", settled(keys, nullable), same); // here, not held through the probes
      // Else they may be reset's, read before the claimer's store. Read again after an acquire
      // of the group word (its writer stored the keys, then released it).
      String again = b.b32();
      b.op("ld.acquire.cta.shared.s32 %s, [%s]", again, groupWord(at, slots.slot[probe]));
      branchUnlessEqual(loadKeys(at, table, slots.slot[probe], keys.length),
          myNulls == null ? null : loadNulls(at, slots.slot[probe]), keys, myNulls, next);
      b.place(same);
      b.op("mov.u32 %s, %s", entry, slots.slot[probe]);
      b.op("mov.u32 %s, %s", group, slots.held[probe]);
      b.op("setp.eq.s32 %s, 0, 0", hit);
      b.op("bra %s", done);
      b.place(busyOrEmpty);
      // BUSY: another lane is finding the group; take the global table rather than wait.
      b.op("setp.ne.s32 %s, %s, %d", p, slots.held[probe], EMPTY);
      b.op("@%s bra %s", p, done);
      String before = b.b32();
      b.op("atom.shared.cas.b32 %s, [%s], %d, %d", before, groupWord(at, slots.slot[probe]), EMPTY,
          BUSY);
      b.op("setp.ne.s32 %s, %s, %d", p, before, EMPTY);
      b.op("@%s bra %s", p, done); // lost the race for it
      b.op("setp.eq.s32 %s, 0, 0", claimed);
      b.op("red.shared.add.u32 [%s], 1", claims);
      b.op("mov.u32 %s, %s", entry, slots.slot[probe]);
      for (int k = 0; k < keys.length; k++) {
        b.op("st.relaxed.cta.shared.u64 [%s], %s", keyValue(at, table, k, slots.slot[probe]),
            keys[k].value());
      }
      if (myNulls != null) {
        b.op("st.relaxed.cta.shared.u32 [%s], %s", nullWord(at, slots.slot[probe]), myNulls);
      }
      b.op("bra %s", done);
      b.place(next);
    }
    b.place(done);
    return new Found(hit, claimed);
  }

  /** A lane's slots, by probe: each slot, its group word, key values and null word (or null). */
  private final class Slots {
    final String[] slot = new String[PROBES];
    final String[] held = new String[PROBES];
    final String[][] values = new String[PROBES][];
    final String[] nulls = new String[PROBES];
    private final Addresses at;
    private final View table;
    private final String first;
    private final String lastEntry;
    private final int keyCount;
    private final boolean withNulls;

    Slots(Addresses at, View table, String first, String lastEntry, int keyCount,
        boolean withNulls) {
      this.at = at;
      this.table = table;
      this.first = first;
      this.lastEntry = lastEntry;
      this.keyCount = keyCount;
      this.withNulls = withNulls;
    }

    /** Probes [from, to): their slots, then their group words, then their keys, relaxed. */
    void load(int from, int to) {
      for (int probe = from; probe < to; probe++) {
        slot[probe] = b.b32();
        b.op("add.u32 %s, %s, %d", slot[probe], first, probe);
        // Past the last entry, the last again: any count of entries, in the one instruction a
        // mask of a power of two took (wrapping to slot 0 would take two). A lane whose slots
        // pass the last entry looks at that entry more than once; each look decides the same.
        b.op("min.u32 %s, %s, %s", slot[probe], slot[probe], lastEntry);
        held[probe] = b.b32();
        b.op("ld.relaxed.cta.shared.s32 %s, [%s]", held[probe], groupWord(at, slot[probe]));
      }
      for (int probe = from; probe < to; probe++) {
        values[probe] = loadKeys(at, table, slot[probe], keyCount);
        nulls[probe] = withNulls ? loadNulls(at, slot[probe]) : null;
      }
    }
  }

  /**
   * At the kernel's start, after LocalTable's reset (which empties the group words) and before
   * the barrier after it: every entry's key values {@link #RESET_KEY} and its null word 0, so
   * that keys read before their claimer's store are these, never values left in shared memory
   * by an earlier kernel ({@link #find} relies on it). Each thread of the block takes every
   * {@code %ntid.x}-th entry. And the count of claimed entries ({@link #hasRoom}) 0.
   */
  void reset(View table) {
    Addresses at = addresses(table);
    String slot = b.b32();
    b.op("mov.u32 %s, %%tid.x", slot);
    String first = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", first, slot);
    b.op("@%s st.shared.u32 [%s], 0", first, claims);
    String step = b.b32();
    b.op("mov.u32 %s, %%ntid.x", step);
    String loop = b.label("local_key_reset");
    String done = b.label("local_key_reset_done");
    String p = b.pred();
    b.place(loop);
    b.op("setp.ge.u32 %s, %s, %s", p, slot, table.entries());
    b.op("@%s bra %s", p, done);
    for (int k = 0; k < spec.keyCount(); k++) {
      b.op("st.shared.u64 [%s], %s", keyValue(at, table, k, slot), RESET_KEY_PTX);
    }
    b.op("st.shared.u32 [%s], 0", nullWord(at, slot));
    b.op("add.u32 %s, %s, %s", slot, slot, step);
    b.op("bra %s", loop);
    b.place(done);
  }

  /**
   * A new .pred: whether the block has claimed fewer than half of the table's entries so far,
   * read relaxed (a hint: a claim may land just after). With fewer groups than that the table
   * holds nearly every row's; once it is half full, rows start to find their slots held by other
   * keys and go to the global accumulators.
   */
  String hasRoom(View table) {
    String claimed = b.b32();
    b.op("ld.relaxed.cta.shared.u32 %s, [%s]", claimed, claims);
    String half = b.b32();
    b.op("shr.u32 %s, %s, 1", half, table.entries());
    String room = b.pred();
    b.op("setp.lt.u32 %s, %s, %s", room, claimed, half);
    return room;
  }

  /**
   * A new .pred: whether a match of the lane's keys ({@code keys}, stored forms) read relaxed
   * is its claimer's: no key is {@link #RESET_KEY}, and none whose null bit the table compares
   * ({@code nullable}: a string key that can be NULL) is 0.
   */
  private String settled(GroupLookup.StoredKey[] keys, boolean[] nullable) {
    String all = b.pred();
    b.op("setp.eq.u32 %s, 0, 0", all);
    String p = b.pred();
    for (int k = 0; k < keys.length; k++) {
      b.op("setp.ne.u64 %s, %s, %s", p, keys[k].value(), RESET_KEY_PTX);
      b.op("and.pred %s, %s, %s", all, all, p);
      if (nullable[k]) {
        b.op("setp.ne.u64 %s, %s, 0", p, keys[k].value());
        b.op("and.pred %s, %s, %s", all, all, p);
      }
    }
    return all;
  }

  /**
   * The first slot a lane looks at (.b32, below {@code entries}): the top bits of the key values'
   * product with {@link #SLOT_MULTIPLIER}, scaled to the entries (a multiply-high). Only this
   * table reads it (its keys are compared, and the merge walks every entry), so it need not be
   * the global table's hash: that hash, two rounds of a 64-bit mixer (some 46 SASS
   * instructions), is then computed only by the lanes that take the global table, where the table
   * here holds their groups few are. A NULL fixed-width key is held as {@link #NULL_KEY}, not
   * 0, so it does not share 0's slots.
   */
  private String firstSlot(GroupLookup.StoredKey[] keys, String entries) {
    String mixed = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", mixed, keys[0].value(), SLOT_MULTIPLIER);
    for (int k = 1; k < keys.length; k++) {
      b.op("xor.b64 %s, %s, %s", mixed, mixed, keys[k].value());
      b.op("mul.lo.s64 %s, %s, %d", mixed, mixed, SLOT_MULTIPLIER);
    }
    String high = b.b32();
    b.op("mov.b64 {%s, %s}, %s", b.b32(), high, mixed);
    String first = b.b32();
    b.op("mul.hi.u32 %s, %s, %s", first, high, entries);
    return first;
  }

  /**
   * For the lanes that claimed their entry ({@code found.claimed()}): its group, now found,
   * stored, after the keys (release); then {@code then}'s code, for those lanes.
   */
  void publish(View table, Found found, String entry, String group, Runnable then) {
    String skip = b.label("local_key_published");
    b.op("@!%s bra %s", found.claimed(), skip);
    Addresses at = addresses(table);
    b.op("fence.acq_rel.cta");
    b.op("st.relaxed.cta.shared.s32 [%s], %s", groupWord(at, entry), group);
    then.run();
    b.place(skip);
  }

  /** New .b64 registers: the entry's key values, read relaxed (they may be being written). */
  private String[] loadKeys(Addresses at, View table, String slot, int count) {
    String[] values = new String[count];
    for (int k = 0; k < count; k++) {
      values[k] = b.b64();
      b.op("ld.relaxed.cta.shared.u64 %s, [%s]", values[k], keyValue(at, table, k, slot));
    }
    return values;
  }

  /** A new .b32: the entry's null word, read relaxed. */
  private String loadNulls(Addresses at, String slot) {
    String nulls = b.b32();
    b.op("ld.relaxed.cta.shared.u32 %s, [%s]", nulls, nullWord(at, slot));
    return nulls;
  }

  /**
   * On to {@code differ} unless {@code values} and {@code nulls} (null where no key can be NULL)
   * are the lane's keys and null bits.
   */
  private void branchUnlessEqual(String[] values, String nulls, GroupLookup.StoredKey[] keys,
      String myNulls, String differ) {
    String p = b.pred();
    for (int k = 0; k < keys.length; k++) {
      b.op("setp.ne.u64 %s, %s, %s", p, values[k], keys[k].value());
      b.op("@%s bra %s", p, differ);
    }
    if (nulls != null) {
      b.op("setp.ne.u32 %s, %s, %s", p, nulls, myNulls);
      b.op("@%s bra %s", p, differ);
    }
  }

  /** The shared addresses (.b64) of the table's group words, its key values and null words. */
  private record Addresses(String groups, String keys, String nulls) {}

  /**
   * Before the tile loop: the sections' addresses of the view the items use, computed once
   * ({@link #addresses} returns them for it) rather than in every item.
   */
  void hold(View table) {
    held = sections(table);
    heldView = table;
  }

  /** The sections' addresses of {@code table}: those {@link #hold} computed, or computed here. */
  private Addresses addresses(View table) {
    return held != null && table == heldView ? held : sections(table);
  }

  private Addresses sections(View table) {
    String base = table.local();
    String groups = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", groups, table.entries64(), layout.groupWordsPerEntry(),
        base);
    // The layout's bytes, rounded up to 8 (LocalTableLayout.tableBytes).
    String keys = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", keys, table.entries64(), layout.entryBytes());
    b.op("add.s64 %s, %s, 7", keys, keys);
    b.op("and.b64 %s, %s, -8", keys, keys);
    b.op("add.s64 %s, %s, %s", keys, keys, base);
    String nulls = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", nulls, table.entries64(), 8L * spec.keyCount(), keys);
    return new Addresses(groups, keys, nulls);
  }

  private String groupWord(Addresses at, String slot) {
    String a = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", a, slot);
    b.op("add.s64 %s, %s, %s", a, a, at.groups());
    return a;
  }

  /** values[k][slot]. */
  private String keyValue(Addresses at, View table, int k, String slot) {
    String index = b.b64();
    b.op("cvt.u64.u32 %s, %s", index, slot);
    if (k > 0) {
      b.op("mad.lo.s64 %s, %s, %d, %s", index, table.entries64(), k, index);
    }
    String a = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", a, index, at.keys());
    return a;
  }

  /** nulls[slot], after values[K][E]. */
  private String nullWord(Addresses at, String slot) {
    String a = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", a, slot);
    b.op("add.s64 %s, %s, %s", a, a, at.nulls());
    return a;
  }

  /**
   * The keys' null bits (.b32: bit k set when key k is NULL), or null where no key can be NULL
   * (then the table's null words are neither written nor read).
   */
  private String nullBits(GroupLookup.StoredKey[] keys, boolean[] nullable) {
    String bits = null;
    for (int k = 0; k < keys.length; k++) {
      if (!nullable[k]) {
        continue;
      }
      String bit = b.b32();
      if (keys[k].cannotBeNull()) { // a key that is not NULL, in a table that may hold one
        b.op("mov.b32 %s, 0", bit);
      } else {
        b.op("shl.b32 %s, %s, %d", bit, keys[k].isNull(), k);
      }
      if (bits == null) {
        bits = bit;
      } else {
        b.op("or.b32 %s, %s, %s", bits, bits, bit);
      }
    }
    return bits;
  }
}
