package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import java.util.List;

/**
 * Not in hash_aggregate.cuh: the per-block table found by the row's keys, for a generated kernel
 * whose keys fit one 64-bit word ({@link #holds}: one fixed-width key, or several whose widths add
 * up to at most 8 bytes, packed into one word by {@link #packed}). The interpreter kernel finds an
 * entry by its group, so every row first looks its group up in the global table (a chain of L2
 * round trips); here an entry also holds its keys, in shared memory after LocalTable's arrays, and
 * a row whose keys the block has seen finds entry and group there, without the global table.
 *
 * <p>Layout, after LocalTable's bytes rounded up to 8 ({@code CudaHashAggregate.localTableBytes}):
 * {@code values[E]} (.b64, the keys' word: each key's stored form, 0 when NULL, in its width),
 * then {@code nulls[E]} (.b32, bit k set when key k is NULL). {@link #bytes} is their size, which
 * the host adds to the launch's shared memory.
 *
 * <p>An entry's group word (LocalTable's {@code keys[E]}) goes from EMPTY to BUSY (the claiming
 * lane's compare-and-swap), and, once the claiming lane has stored the keys and found the group in
 * the global table, to the group, released (a fence, then the store). Nothing is written to an
 * entry again during the launch. A lane reads its slots' group words and keys together, relaxed;
 * where they seem to hold its keys, it reads the group word again, acquiring, and the keys after
 * it, so a hit never rests on keys read stale. A lane that finds a BUSY entry, or loses the
 * race for an empty one, or finds the slots it looks at held by other keys, takes the global
 * table and accumulators: the table can only skip work. The merge at the block's end (LocalTable's
 * own) reads the group words after a barrier, as before.
 */
final class LocalKeyTable {
  /**
   * The bytes of keys the table holds, as one word. Held as a word each, two INT keys took
   * StarJoinBench's fused kernel from 56 to 64 registers and from 1.03 to 1.16 ms (sparse: 1.76
   * to 2.11 ms; H100), so several keys are packed into one word instead.
   */
  private static final int WORD_BYTES = Long.BYTES;
  /** Slots a lane looks at, from the one its keys' hash names. */
  private static final int PROBES = GroupAccumulation.LOCAL_PROBES;
  private static final int EMPTY = GroupLookup.EMPTY;
  private static final int BUSY = GroupLookup.BUSY;

  private final PtxBuilder b;
  private final AggregateSpec spec;

  LocalKeyTable(PtxBuilder b, AggregateSpec spec) {
    this.b = b;
    this.spec = spec;
  }

  /**
   * Whether the kernel of {@code spec} finds per-block entries by key: its keys are fixed-width
   * and one, or several whose widths add up to one word.
   */
  static boolean holds(AggregateSpec spec) {
    List<ColumnType> keys = spec.keyTypes();
    if (keys.isEmpty() || keys.stream().anyMatch(ColumnType::isString)) {
      return false;
    }
    return keys.size() == 1
        || keys.stream().mapToInt(t -> t.id().width()).sum() <= WORD_BYTES;
  }

  /** Shared-memory bytes of the keys of a table of {@code entries} entries (0 where not held). */
  static int bytes(AggregateSpec spec, int entries) {
    return holds(spec) ? entries * (WORD_BYTES + Integer.BYTES) : 0;
  }

  /**
   * The keys' stored forms ({@code stored}; {@code nullable}: whether each can be NULL) as the
   * table holds them: the one key as it is, or several packed into one word, key k's value in its
   * width's low bytes shifted by the widths before it, and its null flag in bit k of the null
   * word. Each stored value is its low bytes sign-extended (0 when NULL), so two rows' words and
   * null words are equal exactly where all their keys are.
   */
  static GroupLookup.StoredKey packed(PtxBuilder b, AggregateSpec spec,
      GroupLookup.StoredKey[] stored, boolean[] nullable) {
    if (stored.length == 1) {
      return stored[0];
    }
    String word = b.b64();
    b.op("mov.b64 %s, 0", word);
    String nulls = null;
    int shift = 0;
    for (int k = 0; k < stored.length; k++) {
      int bits = 8 * spec.keyTypes().get(k).id().width();
      String part = b.b64();
      b.op("and.b64 %s, %s, %d", part, stored[k].value(), (1L << bits) - 1);
      if (shift > 0) {
        b.op("shl.b64 %s, %s, %d", part, part, shift);
      }
      b.op("or.b64 %s, %s, %s", word, word, part);
      shift += bits;
      if (nullable[k]) {
        String bit = b.b32();
        b.op("shl.b32 %s, %s, %d", bit, stored[k].isNull(), k);
        if (nulls == null) {
          nulls = bit;
        } else {
          b.op("or.b32 %s, %s, %s", nulls, nulls, bit);
        }
      }
    }
    return new GroupLookup.StoredKey(nulls == null ? "0" : nulls, word);
  }

  /**
   * The per-block table as the item sees it: its generic address, its entries (.b32 and .b64).
   */
  record View(String local, String entries, String entries64) {}

  /**
   * What a lane's search found: {@code hit} (.pred), its keys held by entry {@code entry} with
   * group {@code group}; {@code claimed} (.pred), an empty entry, which holds its keys now, whose
   * group the lane must find and then {@link #publish}. Neither: {@code entry} is -1.
   */
  record Found(String hit, String claimed) {}

  /**
   * For the lanes of {@code looks}: the entry holding the keys {@code key} (their word and null
   * bits, {@link #packed}; {@code nullable}: whether any key can be NULL) into {@code entry} and
   * its group into {@code group}, or an empty entry claimed for them, by the keys' hash {@code
   * hash} (.b64). {@code entry} must be -1 on entry for the lanes of {@code looks}; it is left
   * alone for the others.
   */
  Found find(View table, String looks, GroupLookup.StoredKey key, boolean nullable,
      String hash, String entry, String group) {
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
    String first = b.b32();
    b.op("mov.b64 {%s, %s}, %s", b.b32(), first, hash); // the high word: the global slot is low
    String[] slot = new String[PROBES];
    String[] held = new String[PROBES];
    for (int probe = 0; probe < PROBES; probe++) {
      slot[probe] = b.b32();
      b.op("add.u32 %s, %s, %d", slot[probe], first, probe);
      b.op("and.b32 %s, %s, %s", slot[probe], slot[probe], lastEntry);
      held[probe] = b.b32();
      b.op("ld.relaxed.cta.shared.s32 %s, [%s]", held[probe], groupWord(at, slot[probe]));
    }
    // Every slot's keys too, relaxed, with the group words: one wait for shared memory, not one
    // per slot, and no fence (which would wait for the thread's global atomics as well).
    String myNulls = nullable ? key.isNull() : null;
    String[] values = new String[PROBES];
    String[] nulls = new String[PROBES];
    for (int probe = 0; probe < PROBES; probe++) {
      values[probe] = loadKey(at, slot[probe]);
      nulls[probe] = myNulls == null ? null : loadNulls(at, slot[probe]);
    }
    String p = b.pred();
    for (int probe = 0; probe < PROBES; probe++) {
      String next = b.label("local_key_next");
      String busyOrEmpty = b.label("local_key_free");
      b.op("setp.lt.s32 %s, %s, 0", p, held[probe]);
      b.op("@%s bra %s", p, busyOrEmpty);
      branchUnlessEqual(values[probe], nulls[probe], key, myNulls, next);
      // They look equal; but keys read before the group word's store was seen may be stale. Read
      // again after an acquire of the group word (its writer stored the keys, then released it).
      String again = b.b32();
      b.op("ld.acquire.cta.shared.s32 %s, [%s]", again, groupWord(at, slot[probe]));
      branchUnlessEqual(loadKey(at, slot[probe]),
          myNulls == null ? null : loadNulls(at, slot[probe]), key, myNulls, next);
      b.op("mov.u32 %s, %s", entry, slot[probe]);
      b.op("mov.u32 %s, %s", group, held[probe]);
      b.op("setp.eq.s32 %s, 0, 0", hit);
      b.op("bra %s", done);
      b.place(busyOrEmpty);
      // BUSY: another lane is finding the group; take the global table rather than wait.
      b.op("setp.ne.s32 %s, %s, %d", p, held[probe], EMPTY);
      b.op("@%s bra %s", p, done);
      String before = b.b32();
      b.op("atom.shared.cas.b32 %s, [%s], %d, %d", before, groupWord(at, slot[probe]), EMPTY,
          BUSY);
      b.op("setp.ne.s32 %s, %s, %d", p, before, EMPTY);
      b.op("@%s bra %s", p, done); // lost the race for it
      b.op("setp.eq.s32 %s, 0, 0", claimed);
      b.op("mov.u32 %s, %s", entry, slot[probe]);
      b.op("st.relaxed.cta.shared.u64 [%s], %s", keyWord(at, slot[probe]), key.value());
      if (myNulls != null) {
        b.op("st.relaxed.cta.shared.u32 [%s], %s", nullWord(at, slot[probe]), myNulls);
      }
      b.op("bra %s", done);
      b.place(next);
    }
    b.place(done);
    return new Found(hit, claimed);
  }

  /**
   * For the lanes that claimed their entry ({@code found.claimed()}): its group, now found,
   * stored, after the keys (release).
   */
  void publish(View table, Found found, String entry, String group) {
    String skip = b.label("local_key_published");
    b.op("@!%s bra %s", found.claimed(), skip);
    Addresses at = addresses(table);
    b.op("fence.acq_rel.cta");
    b.op("st.relaxed.cta.shared.s32 [%s], %s", groupWord(at, entry), group);
    b.place(skip);
  }

  /** A new .b64 register: the entry's key word, read relaxed (it may be being written). */
  private String loadKey(Addresses at, String slot) {
    String value = b.b64();
    b.op("ld.relaxed.cta.shared.u64 %s, [%s]", value, keyWord(at, slot));
    return value;
  }

  /** A new .b32: the entry's null word, read relaxed. */
  private String loadNulls(Addresses at, String slot) {
    String nulls = b.b32();
    b.op("ld.relaxed.cta.shared.u32 %s, [%s]", nulls, nullWord(at, slot));
    return nulls;
  }

  /**
   * On to {@code differ} unless {@code value} and {@code nulls} (null where no key can be NULL)
   * are the lane's key word and null bits.
   */
  private void branchUnlessEqual(String value, String nulls, GroupLookup.StoredKey key,
      String myNulls, String differ) {
    String p = b.pred();
    b.op("setp.ne.u64 %s, %s, %s", p, value, key.value());
    b.op("@%s bra %s", p, differ);
    if (nulls != null) {
      b.op("setp.ne.u32 %s, %s, %s", p, nulls, myNulls);
      b.op("@%s bra %s", p, differ);
    }
  }

  /** The shared addresses (.b64) of the table's group words, its key values and null words. */
  private record Addresses(String groups, String keys, String nulls) {}

  private Addresses addresses(View table) {
    int functions = spec.functions().size();
    String base = b.b64();
    b.op("cvta.to.shared.u64 %s, %s", base, table.local());
    String groups = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", groups, table.entries64(), 16L * functions, base);
    // LocalTable's bytes, rounded up to 8 (CudaHashAggregate.localTableBytes).
    String keys = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", keys, table.entries64(), 4L + 20L * functions);
    b.op("add.s64 %s, %s, 7", keys, keys);
    b.op("and.b64 %s, %s, -8", keys, keys);
    b.op("add.s64 %s, %s, %s", keys, keys, base);
    String nulls = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", nulls, table.entries64(), (long) WORD_BYTES, keys);
    return new Addresses(groups, keys, nulls);
  }

  private String groupWord(Addresses at, String slot) {
    String a = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", a, slot);
    b.op("add.s64 %s, %s, %s", a, a, at.groups());
    return a;
  }

  /** values[slot]. */
  private String keyWord(Addresses at, String slot) {
    String index = b.b64();
    b.op("cvt.u64.u32 %s, %s", index, slot);
    String a = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", a, index, WORD_BYTES, at.keys());
    return a;
  }

  /** nulls[slot], after values[E]. */
  private String nullWord(Addresses at, String slot) {
    String a = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", a, slot);
    b.op("add.s64 %s, %s, %s", a, a, at.nulls());
    return a;
  }
}
