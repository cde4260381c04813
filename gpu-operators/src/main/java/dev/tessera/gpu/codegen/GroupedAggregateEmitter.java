package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;

/**
 * One item of a hash aggregation's update, written into the generated kernel: hash_aggregate.cuh's
 * {@code AggregateItem} (find or insert the row's group, through the direct map when there may be
 * one; the warp-level reduction when the warp's rows share a group, else each row on its own; the
 * per-block table before the global accumulators), specialized to this aggregation. The keys' and
 * functions' types and the functions' kinds are known here, so the code holds only what they
 * need: no loop over the plan's functions, no select of the input, no branch on a type, no NULL
 * test of a value that cannot be NULL. One difference from the interpreter kernel: the thread that
 * inserts a group also sets its accumulators (the init kernel's work), so the host initializes
 * nothing for these kernels.
 *
 * <p>The plan's layout, the hash, the table's protocol and every accumulator's arithmetic are
 * hash_aggregate.cuh's; each method names the function it mirrors, and a change there must be
 * made here too (the CUDA aggregate suites run both kernels against the host reference).
 */
final class GroupedAggregateEmitter {
  /** hash_aggregate.cuh kEmpty and kBusy: a slot's states before it names a group. */
  private static final int EMPTY = -1;
  private static final int BUSY = -2;
  /** hash_aggregate.cuh kLocalProbes: slots of the per-block table a row looks at. */
  private static final int LOCAL_PROBES = 4;
  /** hash_aggregate.cuh HashKeys: a NULL key's value hash, and what is added to it. */
  private static final long NULL_KEY_VALUE = 0x9e3779b97f4a7c15L;
  private static final long NULL_KEY_SALT = 0x51ed270b27L;
  /** LocalTable.Find's multiplier (Fibonacci hashing of the group index). */
  private static final long LOCAL_HASH = 0x9e3779b1L;
  /** hash.cuh HashBytes: the seed a string's length is added to. */
  private static final long HASH_BYTES_SEED = 0x452821e638d01377L;

  private final PtxBuilder b;
  private final AggregateSpec spec;
  private final ProgramEmitter body;
  private final String localSymbol;

  /** Per item: the plan (global address), the per-block table (generic) and its entries. */
  private String plan;
  private String local;
  private String entries;
  private String entries64;

  GroupedAggregateEmitter(PtxBuilder b, AggregateSpec spec, ProgramEmitter body,
      String localSymbol) {
    this.b = b;
    this.spec = spec;
    this.body = body;
    this.localSymbol = localSymbol;
  }

  /**
   * A key or input as the group arrays hold it: the canonical value (a string's address), its
   * validity (null: never NULL) and a string's byte length (null for other types).
   */
  private record Value(String value, String valid, String length) {
    boolean isString() {
      return length != null;
    }
  }

  /**
   * The update of one item, where every lane of the warp is (the warp-level step needs the whole
   * warp): {@code active} (.b32, 0 or 1) says whether the lane's row is aggregated; the program's
   * results are {@code values}, its outputs (the keys, then the functions' inputs) {@code outputs}.
   */
  void item(String active, Val[] values, int[] outputs) {
    b.comment("the row's group and its accumulation (hash_aggregate.cuh AggregateItem, inline)");
    plan = body.global(body.loadParam("u64", "plan"));
    local = b.b64();
    b.op("mov.u64 %s, %s", local, localSymbol);
    b.op("cvta.shared.u64 %s, %s", local, local);
    entries64 = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", entries64, plan,
        AggregatePlan.headerField(AggregatePlan.H_LOCAL_ENTRIES));
    entries = b.b32();
    b.op("cvt.u32.u64 %s, %s", entries, entries64);
    String act = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", act, active);
    String group = b.b32();
    b.op("mov.u32 %s, 0", group);
    if (spec.keyCount() > 0) {
      Value[] keys = new Value[spec.keyCount()];
      for (int k = 0; k < keys.length; k++) {
        keys[k] = canonical(spec.inputTypes().get(k), values[outputs[k]]);
      }
      findGroup(act, keys, group);
    }
    Value[] inputs = new Value[spec.functions().size()];
    for (int f = 0; f < inputs.length; f++) {
      AggregateFunction fn = spec.functions().get(f);
      if (fn.kind() != Kind.COUNT_ROWS) {
        inputs[f] = canonical(spec.inputTypes().get(fn.input()), values[outputs[fn.input()]]);
      }
    }
    accumulate(act, group, inputs);
  }

  // ---- the group ---------------------------------------------------------------------------------

  /** hash_aggregate.cuh Canonical: the value sign-extended from its type's width. */
  private Value canonical(ColumnType type, Val v) {
    String value = b.b64();
    b.op("mov.b64 %s, %s", value, v.value());
    if (type.isString()) {
      String length = b.b32();
      b.op("mov.b32 %s, %s", length, v.length());
      return new Value(value, v.valid(), length);
    }
    int width = type.id().width();
    if (width < 8) {
      b.op("shl.b64 %s, %s, %d", value, value, 64 - 8 * width);
      b.op("shr.s64 %s, %s, %d", value, value, 64 - 8 * width);
    }
    return new Value(value, v.valid(), null);
  }

  /**
   * Whether the host may give this aggregation a direct group map (CudaHashAggregate's decision:
   * integer keys only); without one the kernel needs no code for it.
   */
  private boolean mayHaveDirectMap() {
    for (int k = 0; k < spec.keyCount(); k++) {
      TypeId id = spec.inputTypes().get(k).id();
      if (id == TypeId.STRING || id == TypeId.FLOAT || id == TypeId.DOUBLE) {
        return false;
      }
    }
    return true;
  }

  /** hash_aggregate.cuh FindGroup: the direct map, then (on a miss) the hash table. */
  private void findGroup(String act, Value[] keys, String group) {
    String found = b.label("group_found");
    b.op("@!%s bra %s", act, found);
    if (!mayHaveDirectMap()) {
      findOrInsert(keys, group);
      b.place(found);
      return;
    }
    String hashPath = b.label("group_hash");
    String directSlot = b.b64();
    b.op("mov.b64 %s, -1", directSlot);
    String directAddress = b.b64();
    b.op("mov.b64 %s, 0", directAddress);
    String direct = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", direct, plan,
        AggregatePlan.headerField(AggregatePlan.H_DIRECT));
    String none = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", none, direct);
    b.op("@%s bra %s", none, hashPath);
    // DirectSlot: the key tuple's mixed-radix number, or the hash table when a key is outside.
    String slot = b.b64();
    b.op("mov.b64 %s, 0", slot);
    for (int k = 0; k < keys.length; k++) {
      String min = b.b64();
      String span = b.b64();
      b.op("ld.global.nc.u64 %s, [%s+%d]", min, plan,
          AggregatePlan.keyField(k, AggregatePlan.K_DIRECT_MIN));
      b.op("ld.global.nc.u64 %s, [%s+%d]", span, plan,
          AggregatePlan.keyField(k, AggregatePlan.K_DIRECT_SPAN));
      String nullDigit = b.b64();
      b.op("sub.s64 %s, %s, 1", nullDigit, span);
      String offset = b.b64();
      b.op("sub.s64 %s, %s, %s", offset, keys[k].value(), min);
      String outside = b.pred();
      b.op("setp.lt.s64 %s, %s, %s", outside, keys[k].value(), min);
      String beyond = b.pred();
      b.op("setp.ge.u64 %s, %s, %s", beyond, offset, nullDigit);
      b.op("or.pred %s, %s, %s", outside, outside, beyond);
      String digit = offset;
      if (keys[k].valid() != null) {
        b.op("and.pred %s, %s, %s", outside, outside, keys[k].valid());
        digit = b.b64();
        b.op("selp.b64 %s, %s, %s, %s", digit, offset, nullDigit, keys[k].valid());
      }
      b.op("@%s bra %s", outside, hashPath);
      b.op("mad.lo.s64 %s, %s, %s, %s", slot, slot, span, digit);
    }
    b.op("mov.b64 %s, %s", directSlot, slot);
    b.op("mad.lo.s64 %s, %s, 4, %s", directAddress, slot, body.global(direct));
    String cached = b.b32();
    b.op("ld.global.cg.s32 %s, [%s]", cached, directAddress);
    String hit = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", hit, cached);
    b.op("@%s mov.u32 %s, %s", hit, group, cached);
    b.op("@%s bra %s", hit, found);
    b.place(hashPath);
    findOrInsert(keys, group);
    // A direct-map miss: the slot remembers the group (every writer writes the same one).
    String inRange = b.pred();
    b.op("setp.ge.s64 %s, %s, 0", inRange, directSlot);
    b.op("@%s st.global.s32 [%s], %s", inRange, directAddress, group);
    b.place(found);
  }

  /** hash_aggregate.cuh HashKeys. */
  private String hash(Value[] keys) {
    String h = b.b64();
    b.op("mov.b64 %s, %d", h, ProgramEmitter.KEY_TUPLE_SEED);
    for (int k = 0; k < keys.length; k++) {
      String v = b.b64();
      if (keys[k].isString()) {
        b.op("mov.b64 %s, %d", v, NULL_KEY_VALUE + NULL_KEY_SALT + k);
        String skip = b.label("key" + k + "_hashed");
        if (keys[k].valid() != null) {
          b.op("@!%s bra %s", keys[k].valid(), skip);
        }
        b.op("add.s64 %s, %s, %d", v, hashBytes(keys[k]), k);
        b.place(skip);
      } else {
        b.op("add.s64 %s, %s, %d", v, keys[k].value(), k);
        if (keys[k].valid() != null) {
          b.op("selp.b64 %s, %s, %d, %s", v, v, NULL_KEY_VALUE + NULL_KEY_SALT + k,
              keys[k].valid());
        }
      }
      String mixed = ProgramEmitter.mix(b, v);
      b.op("xor.b64 %s, %s, %s", mixed, mixed, h);
      h = ProgramEmitter.mix(b, mixed);
    }
    return h;
  }

  /** hash.cuh HashBytes: a string's bytes, 8 at a time into a word, each word mixed in. */
  private String hashBytes(Value key) {
    String h = b.b64();
    String length64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", length64, key.length());
    b.op("add.s64 %s, %s, %d", h, length64, HASH_BYTES_SEED);
    b.op("mov.b64 %s, %s", h, ProgramEmitter.mix(b, h));
    String word = b.b64();
    b.op("mov.b64 %s, 0", word);
    String i = b.b32();
    b.op("mov.u32 %s, 0", i);
    String loop = b.label("hash_byte");
    String done = b.label("hash_bytes_done");
    String p = b.pred();
    b.place(loop);
    b.op("setp.ge.s32 %s, %s, %s", p, i, key.length());
    b.op("@%s bra %s", p, done);
    String at = b.b64();
    b.op("cvt.s64.s32 %s, %s", at, i);
    b.op("add.s64 %s, %s, %s", at, at, key.value());
    String byteValue = b.b32();
    b.op("ld.u8 %s, [%s]", byteValue, at);
    String byte64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", byte64, byteValue);
    String shift = b.b32();
    b.op("and.b32 %s, %s, 7", shift, i);
    b.op("shl.b32 %s, %s, 3", shift, shift);
    b.op("shl.b64 %s, %s, %s", byte64, byte64, shift);
    b.op("or.b64 %s, %s, %s", word, word, byte64);
    b.op("setp.eq.u32 %s, %s, 56", p, shift);
    String mixed = b.b64();
    b.op("xor.b64 %s, %s, %s", mixed, h, word);
    String full = ProgramEmitter.mix(b, mixed);
    b.op("@%s mov.b64 %s, %s", p, h, full);
    b.op("@%s mov.b64 %s, 0", p, word);
    b.op("add.u32 %s, %s, 1", i, i);
    b.op("bra %s", loop);
    b.place(done);
    String last = b.b64();
    b.op("xor.b64 %s, %s, %s", last, h, word);
    return ProgramEmitter.mix(b, last);
  }

  /** hash_aggregate.cuh FindOrInsert: the row's group into {@code group}. */
  private void findOrInsert(Value[] keys, String group) {
    String h = hash(keys);
    String slots = body.field(plan, AggregatePlan.headerField(AggregatePlan.H_SLOTS));
    String hashes = body.field(plan, AggregatePlan.headerField(AggregatePlan.H_HASHES));
    String mask = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", mask, plan,
        AggregatePlan.headerField(AggregatePlan.H_TABLE_MASK));
    String slot = b.b64();
    b.op("and.b64 %s, %s, %s", slot, h, mask);
    String probe = b.label("group_probe");
    String occupied = b.label("group_occupied");
    String next = b.label("group_next");
    String stored = b.label("group_stored");
    b.place(probe);
    String slotAddress = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", slotAddress, slot, slots);
    String s = b.b32();
    // Acquire: a group index seen here comes with its hash and key.
    b.op("ld.acquire.gpu.global.s32 %s, [%s]", s, slotAddress);
    String p = b.pred();
    b.op("setp.ne.s32 %s, %s, %d", p, s, EMPTY);
    b.op("@%s bra %s", p, occupied);
    String before = b.b32();
    b.op("atom.global.cas.b32 %s, [%s], %d, %d", before, slotAddress, EMPTY, BUSY);
    b.op("setp.ne.s32 %s, %s, %d", p, before, EMPTY);
    b.op("@%s bra %s", p, probe); // lost the race: look at the slot again
    String counter = body.field(plan, AggregatePlan.headerField(AggregatePlan.H_GROUP_COUNT));
    String index = b.b64();
    b.op("atom.global.add.u64 %s, [%s], 1", index, counter);
    b.op("cvt.u32.u64 %s, %s", group, index);
    writeKey(keys, index);
    initAccumulators(index);
    String hashAddress = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", hashAddress, index, hashes);
    b.op("st.global.u64 [%s], %s", hashAddress, h);
    // The key, accumulators and hash before the slot names the group.
    b.op("membar.gl");
    String old = b.b32();
    b.op("atom.global.exch.b32 %s, [%s], %s", old, slotAddress, group);
    b.op("bra %s", stored);
    b.place(occupied);
    b.op("setp.eq.s32 %s, %s, %d", p, s, BUSY);
    b.op("@%s bra %s", p, probe); // another thread is writing the key; wait for it
    String candidate = b.b64();
    b.op("cvt.s64.s32 %s, %s", candidate, s);
    b.op("mad.lo.s64 %s, %s, 8, %s", hashAddress, candidate, hashes);
    String candidateHash = b.b64();
    b.op("ld.global.cg.u64 %s, [%s]", candidateHash, hashAddress);
    b.op("setp.ne.u64 %s, %s, %s", p, candidateHash, h);
    b.op("@%s bra %s", p, next);
    keysEqual(keys, candidate, next);
    b.op("mov.u32 %s, %s", group, s);
    b.op("bra %s", stored);
    b.place(next);
    b.op("add.s64 %s, %s, 1", slot, slot);
    b.op("and.b64 %s, %s, %s", slot, slot, mask);
    b.op("bra %s", probe);
    b.place(stored);
  }

  /**
   * hash_aggregate.cu tessera_hash_aggregate_init for the new group: each function's value at its
   * identity, its high word and seen flag 0. The host runs that kernel only for groups the
   * interpreter kernel may insert (CudaHashAggregate's initializedTo); a generated kernel's groups
   * are set here, by the thread that inserts them, before anyone can see them.
   */
  private void initAccumulators(String index) {
    for (int f = 0; f < spec.functions().size(); f++) {
      Kind kind = kind(f);
      long identity = kind == Kind.MIN || kind == Kind.MAX ? identity(kind, inputType(f)) : 0;
      String value = b.b64();
      b.op("mad.lo.s64 %s, %s, 8, %s", value, index, body.field(plan,
          AggregatePlan.functionField(spec.keyCount(), f, AggregatePlan.F_VALUE)));
      b.op("st.global.u64 [%s], %d", value, identity);
      String high = b.b64();
      b.op("mad.lo.s64 %s, %s, 8, %s", high, index, body.field(plan,
          AggregatePlan.functionField(spec.keyCount(), f, AggregatePlan.F_HIGH)));
      b.op("st.global.u64 [%s], 0", high);
      String seen = b.b64();
      b.op("mad.lo.s64 %s, %s, 4, %s", seen, index, body.field(plan,
          AggregatePlan.functionField(spec.keyCount(), f, AggregatePlan.F_SEEN)));
      b.op("st.global.u32 [%s], 0", seen);
    }
  }

  /**
   * hash_aggregate.cuh WriteKey: value (0 when NULL) and null flag; a string's bytes copied into
   * the key heap, its value their offset there, and its length (should the heap be full, which
   * the host's bound rules out, the key is stored empty and *heap_overflow set).
   */
  private void writeKey(Value[] keys, String index) {
    for (int k = 0; k < keys.length; k++) {
      if (keys[k].isString()) {
        writeStringKey(k, keys[k], index);
        continue;
      }
      String at = b.b64();
      b.op("mad.lo.s64 %s, %s, 8, %s", at, index,
          body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_VALUES)));
      String nullAt = b.b64();
      b.op("add.s64 %s, %s, %s", nullAt, index,
          body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_NULLS)));
      if (keys[k].valid() == null) {
        b.op("st.global.u64 [%s], %s", at, keys[k].value());
        b.op("st.global.u8 [%s], 0", nullAt);
      } else {
        String value = b.b64();
        b.op("selp.b64 %s, %s, 0, %s", value, keys[k].value(), keys[k].valid());
        String isNull = b.b32();
        b.op("selp.u32 %s, 0, 1, %s", isNull, keys[k].valid());
        b.op("st.global.u64 [%s], %s", at, value);
        b.op("st.global.u8 [%s], %s", nullAt, isNull);
      }
    }
  }

  private void writeStringKey(int k, Value key, String index) {
    String value = b.b64();
    b.op("mov.b64 %s, 0", value);
    String length = b.b32();
    b.op("mov.u32 %s, 0", length);
    String write = b.label("key" + k + "_write");
    if (key.valid() != null) {
      b.op("@!%s bra %s", key.valid(), write);
    }
    String length64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", length64, key.length());
    String offset = b.b64();
    b.op("atom.global.add.u64 %s, [%s], %s", offset, body.field(plan,
        AggregatePlan.headerField(AggregatePlan.H_HEAP_USED)), length64);
    String end = b.b64();
    b.op("add.s64 %s, %s, %s", end, offset, length64);
    String capacity = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", capacity, plan,
        AggregatePlan.headerField(AggregatePlan.H_HEAP_CAPACITY));
    String full = b.pred();
    b.op("setp.gt.u64 %s, %s, %s", full, end, capacity);
    String copy = b.label("key" + k + "_copy");
    b.op("@!%s bra %s", full, copy);
    String old = b.b64();
    b.op("atom.global.exch.b64 %s, [%s], 1", old,
        body.global(body.loadParam("u64", "heap_overflow")));
    b.op("bra %s", write);
    b.place(copy);
    String to = b.b64();
    b.op("add.s64 %s, %s, %s", to, offset,
        body.field(plan, AggregatePlan.headerField(AggregatePlan.H_HEAP)));
    String i = b.b64();
    b.op("mov.b64 %s, 0", i);
    String loop = b.label("key" + k + "_byte");
    String copied = b.label("key" + k + "_copied");
    String p = b.pred();
    b.place(loop);
    b.op("setp.ge.s64 %s, %s, %s", p, i, length64);
    b.op("@%s bra %s", p, copied);
    String from = b.b64();
    b.op("add.s64 %s, %s, %s", from, key.value(), i);
    String byteValue = b.b32();
    b.op("ld.u8 %s, [%s]", byteValue, from);
    String into = b.b64();
    b.op("add.s64 %s, %s, %s", into, to, i);
    b.op("st.global.u8 [%s], %s", into, byteValue);
    b.op("add.s64 %s, %s, 1", i, i);
    b.op("bra %s", loop);
    b.place(copied);
    b.op("mov.b64 %s, %s", value, offset);
    b.op("mov.u32 %s, %s", length, key.length());
    b.place(write);
    String at = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", at, index,
        body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_VALUES)));
    b.op("st.global.u64 [%s], %s", at, value);
    String nullAt = b.b64();
    b.op("add.s64 %s, %s, %s", nullAt, index,
        body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_NULLS)));
    String isNull = b.b32();
    if (key.valid() == null) {
      b.op("mov.u32 %s, 0", isNull);
    } else {
      b.op("selp.u32 %s, 0, 1, %s", isNull, key.valid());
    }
    b.op("st.global.u8 [%s], %s", nullAt, isNull);
    String lengthAt = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", lengthAt, index,
        body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_LENGTHS)));
    b.op("st.global.s32 [%s], %s", lengthAt, length);
  }

  /**
   * hash_aggregate.cuh KeysEqual: on to {@code differ} unless group {@code candidate} has the
   * row's keys (read through L2: another block may have written them during this kernel).
   */
  private void keysEqual(Value[] keys, String candidate, String differ) {
    for (int k = 0; k < keys.length; k++) {
      String nullAt = b.b64();
      b.op("add.s64 %s, %s, %s", nullAt, candidate,
          body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_NULLS)));
      String flag = b.b32();
      b.op("ld.global.cg.u8 %s, [%s]", flag, nullAt);
      String groupNull = b.pred();
      b.op("setp.ne.u32 %s, %s, 0", groupNull, flag);
      String keyDone = b.label("key" + k + "_equal");
      if (keys[k].valid() == null) {
        b.op("@%s bra %s", groupNull, differ);
      } else {
        // Differ when the group's key is NULL exactly when the row's is not.
        String agree = b.pred();
        b.op("xor.pred %s, %s, %s", agree, groupNull, keys[k].valid());
        b.op("@!%s bra %s", agree, differ);
        b.op("@%s bra %s", groupNull, keyDone);
      }
      String at = b.b64();
      b.op("mad.lo.s64 %s, %s, 8, %s", at, candidate,
          body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_VALUES)));
      String value = b.b64();
      b.op("ld.global.cg.u64 %s, [%s]", value, at);
      if (keys[k].isString()) {
        stringEqual(k, keys[k], candidate, value, differ);
      } else {
        String p = b.pred();
        b.op("setp.ne.u64 %s, %s, %s", p, value, keys[k].value());
        b.op("@%s bra %s", p, differ);
      }
      b.place(keyDone);
    }
  }

  /** A string key's length, then its bytes against the group's in the key heap at {@code offset}. */
  private void stringEqual(int k, Value key, String candidate, String offset, String differ) {
    String lengthAt = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", lengthAt, candidate,
        body.field(plan, AggregatePlan.keyField(k, AggregatePlan.K_LENGTHS)));
    String length = b.b32();
    b.op("ld.global.cg.s32 %s, [%s]", length, lengthAt);
    String p = b.pred();
    b.op("setp.ne.s32 %s, %s, %s", p, length, key.length());
    b.op("@%s bra %s", p, differ);
    String theirs = b.b64();
    b.op("add.s64 %s, %s, %s", theirs, offset,
        body.field(plan, AggregatePlan.headerField(AggregatePlan.H_HEAP)));
    String length64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", length64, length);
    String i = b.b64();
    b.op("mov.b64 %s, 0", i);
    String loop = b.label("key" + k + "_compare");
    String same = b.label("key" + k + "_same");
    b.place(loop);
    b.op("setp.ge.s64 %s, %s, %s", p, i, length64);
    b.op("@%s bra %s", p, same);
    String at = b.b64();
    b.op("add.s64 %s, %s, %s", at, theirs, i);
    String stored = b.b32();
    b.op("ld.global.cg.u8 %s, [%s]", stored, at);
    b.op("add.s64 %s, %s, %s", at, key.value(), i);
    String mine = b.b32();
    b.op("ld.u8 %s, [%s]", mine, at);
    b.op("setp.ne.u32 %s, %s, %s", p, stored, mine);
    b.op("@%s bra %s", p, differ);
    b.op("add.s64 %s, %s, 1", i, i);
    b.op("bra %s", loop);
    b.place(same);
  }

  // ---- the accumulation --------------------------------------------------------------------------

  /**
   * hash_aggregate.cuh AggregateItem after the group: the warp's rows at once when they share one
   * group (AccumulateWarp), else each active row on its own (AccumulateRow).
   */
  private void accumulate(String act, String group, Value[] inputs) {
    String done = b.label("item_accumulated");
    String activeLanes = b.b32();
    b.op("vote.sync.ballot.b32 %s, %s, -1", activeLanes, act);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, activeLanes);
    b.op("@%s bra.uni %s", none, done);
    String lowest = b.b32();
    b.op("neg.s32 %s, %s", lowest, activeLanes);
    b.op("and.b32 %s, %s, %s", lowest, lowest, activeLanes);
    String leader = b.b32();
    b.op("bfind.u32 %s, %s", leader, lowest);
    String leaderGroup = b.b32();
    b.op("shfl.sync.idx.b32 %s, %s, %s, 31, -1", leaderGroup, group, leader);
    String rows = b.label("item_rows");
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

    b.comment("the warp's rows share a group: reduced, then merged once by the leader");
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String isLeader = b.pred();
    b.op("setp.eq.u32 %s, %s, %s", isLeader, lane, leader);
    String entry = b.b32();
    b.op("mov.u32 %s, -1", entry);
    String found = b.label("leader_entry");
    b.op("@!%s bra %s", isLeader, found);
    localFind(leaderGroup, entry);
    b.place(found);
    for (int f = 0; f < inputs.length; f++) {
      warpFunction(f, act, inputs[f], isLeader, entry, leaderGroup);
    }
    b.op("bra.uni %s", done);
    b.place(rows);
    if (spec.keyCount() == 0) {
      b.place(done);
      return;
    }
    b.comment("each active row on its own");
    b.op("@!%s bra %s", act, done);
    String rowEntry = b.b32();
    localFind(group, rowEntry);
    for (int f = 0; f < inputs.length; f++) {
      rowFunction(f, inputs[f], rowEntry, group);
    }
    b.place(done);
  }

  /**
   * LocalTable.Find: into {@code entry} the per-block entry holding {@code group}, claiming an
   * empty one if need be; -1 when the slots looked at hold other groups (or there is no table).
   */
  private void localFind(String group, String entry) {
    String done = b.label("local_found");
    b.op("mov.u32 %s, -1", entry);
    String none = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", none, entries);
    b.op("@%s bra %s", none, done);
    String keysBase = b.b64();
    b.op("mul.lo.s64 %s, %s, %d", keysBase, entries64, 16L * spec.functions().size());
    b.op("add.s64 %s, %s, %s", keysBase, keysBase, local);
    String lastEntry = b.b32();
    b.op("sub.u32 %s, %s, 1", lastEntry, entries);
    String slot = b.b32();
    b.op("mul.lo.u32 %s, %s, %d", slot, group, LOCAL_HASH);
    b.op("shr.u32 %s, %s, 7", slot, slot);
    String at = b.b64();
    String held = b.b32();
    String p = b.pred();
    String q = b.pred();
    for (int probe = 0; probe < LOCAL_PROBES; probe++) {
      String next = b.label("local_probe");
      b.op("and.b32 %s, %s, %s", slot, slot, lastEntry);
      b.op("mul.wide.u32 %s, %s, 4", at, slot);
      b.op("add.s64 %s, %s, %s", at, at, keysBase);
      b.op("ld.volatile.s32 %s, [%s]", held, at);
      b.op("setp.eq.s32 %s, %s, %s", p, held, group);
      b.op("@%s mov.u32 %s, %s", p, entry, slot);
      b.op("@%s bra %s", p, done);
      b.op("setp.ne.s32 %s, %s, %d", p, held, EMPTY);
      b.op("@%s bra %s", p, next);
      b.op("atom.cas.b32 %s, [%s], %d, %s", held, at, EMPTY, group);
      b.op("setp.eq.s32 %s, %s, %d", p, held, EMPTY);
      b.op("setp.eq.s32 %s, %s, %s", q, held, group);
      b.op("or.pred %s, %s, %s", p, p, q);
      b.op("@%s mov.u32 %s, %s", p, entry, slot);
      b.op("@%s bra %s", p, done);
      b.place(next);
      b.op("add.u32 %s, %s, 1", slot, slot);
    }
    b.place(done);
  }

  /** Function f's accumulators (value, high, seen) for {@code entry} of the table, or global. */
  private record Accumulators(String value, String high, String seen) {}

  /**
   * The addresses (generic) of function f's accumulators: the per-block table's entry when
   * {@code entry} >= 0 (LocalTable's layout), else group {@code group}'s global ones.
   */
  private Accumulators accumulators(int f, String entry, String group) {
    int functions = spec.functions().size();
    String inTable = b.pred();
    b.op("setp.ge.s32 %s, %s, 0", inTable, entry);
    String e = b.b64();
    b.op("cvt.s64.s32 %s, %s", e, entry);
    String g = b.b64();
    b.op("cvt.u64.u32 %s, %s", g, group);
    // Table word f * E + e of values[F][E], of highs[F][E] after it; seen[F][E] after keys[E].
    String word = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", word, entries64, f, e);
    String localValue = b.b64();
    b.op("mad.lo.s64 %s, %s, 8, %s", localValue, word, local);
    String localHigh = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", localHigh, entries64, 8L * functions, localValue);
    String localSeen = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", localSeen, entries64, 16L * functions + 4, local);
    b.op("mad.lo.s64 %s, %s, 4, %s", localSeen, word, localSeen);
    String[] global = new String[3];
    int[] fields = {AggregatePlan.F_VALUE, AggregatePlan.F_HIGH, AggregatePlan.F_SEEN};
    for (int i = 0; i < 3; i++) {
      String base = b.b64();
      b.op("ld.global.nc.u64 %s, [%s+%d]", base, plan,
          AggregatePlan.functionField(spec.keyCount(), f, fields[i]));
      global[i] = b.b64();
      b.op("mad.lo.s64 %s, %s, %d, %s", global[i], g, i == 2 ? 4 : 8, base);
    }
    String value = b.b64();
    String high = b.b64();
    String seen = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", value, localValue, global[0], inTable);
    b.op("selp.b64 %s, %s, %s, %s", high, localHigh, global[1], inTable);
    b.op("selp.b64 %s, %s, %s, %s", seen, localSeen, global[2], inTable);
    return new Accumulators(value, high, seen);
  }

  private Kind kind(int f) {
    return spec.functions().get(f).kind();
  }

  private TypeId inputType(int f) {
    return spec.inputTypes().get(spec.functions().get(f).input()).id();
  }

  private static boolean isSum(Kind kind) {
    return kind == Kind.SUM || kind == Kind.SUM_DECIMAL;
  }

  private static boolean isCount(Kind kind) {
    return kind == Kind.COUNT_ROWS || kind == Kind.COUNT;
  }

  /**
   * hash_aggregate.cuh AccumulateWarp for function f: the warp's valid inputs reduced with
   * shuffles (counts by popcount), then merged by the leader into {@code entry} or the group's
   * global accumulators.
   */
  private void warpFunction(int f, String act, Value input, String isLeader, String entry,
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
    if (isCount(kind)) {
      String count = b.b32();
      b.op("popc.b32 %s, %s", count, validLanes);
      b.op("cvt.u64.u32 %s, %s", low, count);
    } else if (isSum(kind)) {
      String[] x = int128(inputType(f), input.value());
      high = b.b64();
      b.op("selp.b64 %s, %s, 0, %s", low, x[0], valid);
      b.op("selp.b64 %s, %s, 0, %s", high, x[1], valid);
      for (int offset = 16; offset >= 1; offset >>= 1) {
        String otherLow = TilePrimitives.shuffleXor64(b, low, offset);
        String otherHigh = TilePrimitives.shuffleXor64(b, high, offset);
        b.op("add.cc.u64 %s, %s, %s", low, low, otherLow);
        b.op("addc.u64 %s, %s, %s", high, high, otherHigh);
      }
    } else {
      b.op("selp.b64 %s, %s, %d, %s", low, input.value(), identity(kind, inputType(f)), valid);
      for (int offset = 16; offset >= 1; offset >>= 1) {
        String other = TilePrimitives.shuffleXor64(b, low, offset);
        String better = better(kind, inputType(f), other, low);
        b.op("@%s mov.b64 %s, %s", better, low, other);
      }
    }
    b.op("@!%s bra %s", isLeader, skip);
    Accumulators at = accumulators(f, entry, group);
    if (isCount(kind)) {
      String old = b.b64();
      b.op("atom.add.u64 %s, [%s], %s", old, at.value(), low);
    } else {
      markSeen(at.seen());
      if (isSum(kind)) {
        atomicAdd128(at, low, high);
      } else {
        atomicMinMax(kind, inputType(f), at.value(), low);
      }
    }
    b.place(skip);
  }

  /** hash_aggregate.cuh Accumulate for function f: one row's input into its accumulators. */
  private void rowFunction(int f, Value input, String entry, String group) {
    Kind kind = kind(f);
    b.comment("function " + f + ": " + kind + " of the row");
    String skip = b.label("row_function" + f);
    Accumulators at = accumulators(f, entry, group);
    String old = b.b64();
    if (kind == Kind.COUNT_ROWS) {
      b.op("atom.add.u64 %s, [%s], 1", old, at.value());
      b.place(skip);
      return;
    }
    if (input.valid() != null) {
      b.op("@!%s bra %s", input.valid(), skip);
    }
    markSeen(at.seen());
    switch (kind) {
      case COUNT -> b.op("atom.add.u64 %s, [%s], 1", old, at.value());
      case SUM, SUM_DECIMAL -> {
        String[] x = int128(inputType(f), input.value());
        atomicAdd128(at, x[0], x[1]);
      }
      case MIN, MAX -> atomicMinMax(kind, inputType(f), at.value(), input.value());
      default -> throw new IllegalStateException("no accumulation for " + kind);
    }
    b.place(skip);
  }

  /** hash_aggregate.cuh MarkSeen: the flag set, read first so that a set flag costs no write. */
  private void markSeen(String seen) {
    String flag = b.b32();
    b.op("ld.volatile.u32 %s, [%s]", flag, seen);
    String unset = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", unset, flag);
    b.op("@%s st.u32 [%s], 1", unset, seen);
  }

  /** hash_aggregate.cuh AtomicAdd128: the low word, then its carry and the high word. */
  private void atomicAdd128(Accumulators at, String low, String high) {
    String old = b.b64();
    b.op("atom.add.u64 %s, [%s], %s", old, at.value(), low);
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
    b.op("@!%s atom.add.u64 %s, [%s], %s", zero, oldHigh, at.high(), highAdd);
  }

  /**
   * hash_aggregate.cuh AtomicMinMax: only a value that improves on the current one is written
   * (by one atomic for integers, by compare-and-swap in Spark's order for FLOAT and DOUBLE).
   */
  private void atomicMinMax(Kind kind, TypeId type, String address, String v) {
    String done = b.label("minmax_done");
    String current = b.b64();
    b.op("ld.volatile.u64 %s, [%s]", current, address);
    String retry = b.label("minmax_retry");
    b.place(retry);
    String improves = better(kind, type, v, current);
    b.op("@!%s bra %s", improves, done);
    String old = b.b64();
    if (!isFloating(type)) {
      b.op("atom.%s.s64 %s, [%s], %s", kind == Kind.MIN ? "min" : "max", old, address, v);
      b.place(done);
      return;
    }
    b.op("atom.cas.b64 %s, [%s], %s, %s", old, address, current, v);
    String swapped = b.pred();
    b.op("setp.eq.u64 %s, %s, %s", swapped, old, current);
    b.op("mov.b64 %s, %s", current, old);
    b.op("@!%s bra %s", swapped, retry);
    b.place(done);
  }

  private static boolean isFloating(TypeId type) {
    return type == TypeId.FLOAT || type == TypeId.DOUBLE;
  }

  /** Whether {@code x} should replace {@code y} as the MIN (x < y) or MAX (x > y). */
  private String better(Kind kind, TypeId type, String x, String y) {
    String p = b.pred();
    String cmp = kind == Kind.MIN ? "lt" : "gt";
    if (isFloating(type)) {
      b.op("setp.%s.u64 %s, %s, %s", cmp, p, orderKey(type, x), orderKey(type, y));
    } else {
      b.op("setp.%s.s64 %s, %s, %s", cmp, p, x, y);
    }
    return p;
  }

  /**
   * An unsigned key of a canonical FLOAT or DOUBLE in Spark's order (program.cuh SparkCompare:
   * NaN largest and equal to every NaN, -0.0 equal to 0.0): the sign bit flipped for positive
   * numbers, every bit for negative ones.
   */
  private String orderKey(TypeId type, String v) {
    boolean dbl = type == TypeId.DOUBLE;
    String w = dbl ? "b64" : "b32";
    String bits = dbl ? b.b64() : b.b32();
    b.op(dbl ? "mov.b64 %s, %s" : "cvt.u32.u64 %s, %s", bits, v);
    String magnitude = dbl ? b.b64() : b.b32();
    b.op("and.%s %s, %s, %s", w, magnitude, bits, dbl ? "0x7fffffffffffffff" : "0x7fffffff");
    String isZero = b.pred();
    b.op("setp.eq.%s %s, %s, 0", dbl ? "u64" : "u32", isZero, magnitude);
    b.op("selp.%s %s, 0, %s, %s", w, bits, bits, isZero);
    String negative = b.pred();
    b.op("setp.lt.%s %s, %s, 0", dbl ? "s64" : "s32", negative, bits);
    String flipped = dbl ? b.b64() : b.b32();
    b.op("not.%s %s, %s", w, flipped, bits);
    String positive = dbl ? b.b64() : b.b32();
    b.op("or.%s %s, %s, %s", w, positive, bits, dbl ? "0x8000000000000000" : "0x80000000");
    String key = dbl ? b.b64() : b.b32();
    b.op("selp.%s %s, %s, %s, %s", w, key, flipped, positive, negative);
    String isNan = b.pred();
    b.op("setp.gt.%s %s, %s, %s", dbl ? "u64" : "u32", isNan, magnitude,
        dbl ? "0x7ff0000000000000" : "0x7f800000");
    b.op("selp.%s %s, -1, %s, %s", w, key, key, isNan);
    if (dbl) {
      return key;
    }
    String wide = b.b64();
    b.op("cvt.u64.u32 %s, %s", wide, key);
    return wide;
  }

  /** hash_aggregate.cuh Identity: MIN's is the largest value of the order, MAX's the smallest. */
  private static long identity(Kind kind, TypeId type) {
    boolean min = kind == Kind.MIN;
    return switch (type) {
      case FLOAT -> min ? 0x7fc00000L : (long) (int) 0xff800000;
      case DOUBLE -> min ? 0x7ff8000000000000L : 0xfff0000000000000L;
      default -> min ? Long.MAX_VALUE : Long.MIN_VALUE;
    };
  }

  /**
   * A sum's input as an int128 (low, high): an integer or decimal sign-extended, a DOUBLE that
   * holds a whole number converted exactly (hash_aggregate.cuh WholeDoubleToInt128).
   */
  private String[] int128(TypeId type, String v) {
    String low = b.b64();
    String high = b.b64();
    if (type != TypeId.DOUBLE) {
      b.op("mov.b64 %s, %s", low, v);
      b.op("shr.s64 %s, %s, 63", high, v);
      return new String[] {low, high};
    }
    // d = mantissa * 2^shift; shifts of 64 bits or more give 0 (PTX clamps the amount).
    String biased = b.b64();
    b.op("shr.u64 %s, %s, 52", biased, v);
    b.op("and.b64 %s, %s, 2047", biased, biased);
    String mantissa = b.b64();
    b.op("and.b64 %s, %s, 0xfffffffffffff", mantissa, v);
    b.op("or.b64 %s, %s, 0x10000000000000", mantissa, mantissa);
    String shift = b.b32();
    b.op("cvt.u32.u64 %s, %s", shift, biased);
    b.op("sub.s32 %s, %s, 1075", shift, shift);
    String negativeShift = b.pred();
    b.op("setp.lt.s32 %s, %s, 0", negativeShift, shift);
    String right = b.b32();
    b.op("neg.s32 %s, %s", right, shift);
    String lowRight = b.b64();
    b.op("shr.u64 %s, %s, %s", lowRight, mantissa, right);
    String lowLeft = b.b64();
    b.op("shl.b64 %s, %s, %s", lowLeft, mantissa, shift);
    b.op("selp.b64 %s, %s, %s, %s", low, lowRight, lowLeft, negativeShift);
    // high: 0 for shift <= 0; mantissa >> (64 - shift) below 64; mantissa << (shift - 64) above.
    String down = b.b32();
    b.op("sub.s32 %s, 64, %s", down, shift);
    String highSmall = b.b64();
    b.op("shr.u64 %s, %s, %s", highSmall, mantissa, down);
    String up = b.b32();
    b.op("sub.s32 %s, %s, 64", up, shift);
    String highLarge = b.b64();
    b.op("shl.b64 %s, %s, %s", highLarge, mantissa, up);
    String large = b.pred();
    b.op("setp.ge.s32 %s, %s, 64", large, shift);
    b.op("selp.b64 %s, %s, %s, %s", high, highLarge, highSmall, large);
    String small = b.pred();
    b.op("setp.le.s32 %s, %s, 0", small, shift);
    b.op("selp.b64 %s, 0, %s, %s", high, high, small);
    // +-0 and subnormals (|d| < 1) are 0.
    String tiny = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", tiny, biased);
    b.op("selp.b64 %s, 0, %s, %s", low, low, tiny);
    b.op("selp.b64 %s, 0, %s, %s", high, high, tiny);
    // The sign: the int128 negated.
    String negative = b.pred();
    b.op("setp.lt.s64 %s, %s, 0", negative, v);
    String negLow = b.b64();
    String negHigh = b.b64();
    b.op("not.b64 %s, %s", negLow, low);
    b.op("not.b64 %s, %s", negHigh, high);
    b.op("add.cc.u64 %s, %s, 1", negLow, negLow);
    b.op("addc.u64 %s, %s, 0", negHigh, negHigh);
    b.op("selp.b64 %s, %s, %s, %s", low, negLow, low, negative);
    b.op("selp.b64 %s, %s, %s, %s", high, negHigh, high, negative);
    return new String[] {low, high};
  }
}
