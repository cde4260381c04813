// The hash aggregation's device code (see kernels/hash_aggregate.cu for the operator): the plan
// layout, the group table, the accumulators and one item's update, for the interpreter kernel
// (hash_aggregate.cu, keys and inputs from the row's register file) and the per-block table's
// reset and merge of the generated kernels (prelude/prelude.cu). The generated kernels' item
// update (gpu-operators codegen/GroupedAggregateEmitter) is written in PTX by Java and mirrors the
// functions here one by one: a change to the hash, the table's protocol or an accumulator's
// arithmetic must be made in both.
#pragma once

#include <cstddef>  // offsetof

#include "tessera/config.cuh"
#include "tessera/hash.cuh"  // Mix, HashBytes
#include "tessera/program.cuh"
#include "tessera/scan.cuh"  // kWarpThreads, kFullWarpMask

namespace tessera {
namespace hash_aggregate {

// Type ids, row errors and the error word's layout are program.cuh's (TypeId, RowError,
// kErrorRowShift). Type ids arrive as ints in the plan; these name the ones this file tests.
constexpr int kFloat = static_cast<int>(TypeId::FLOAT);
constexpr int kDouble = static_cast<int>(TypeId::DOUBLE);
constexpr int kString = static_cast<int>(TypeId::STRING);
constexpr unsigned long long kArithmeticOverflow =
    static_cast<unsigned long long>(RowError::ARITHMETIC_OVERFLOW);

// AggregateFunction.Kind's ordinals (ProgramAbiTest checks them).
enum class AggregateKind : int {
  COUNT_ROWS = 0,
  COUNT = 1,
  SUM = 2,
  SUM_DECIMAL = 3,
  MIN = 4,
  MAX = 5,
};
constexpr int kCountRows = static_cast<int>(AggregateKind::COUNT_ROWS);
constexpr int kCount = static_cast<int>(AggregateKind::COUNT);
constexpr int kSum = static_cast<int>(AggregateKind::SUM);
constexpr int kSumDecimal = static_cast<int>(AggregateKind::SUM_DECIMAL);
constexpr int kMin = static_cast<int>(AggregateKind::MIN);
constexpr int kMax = static_cast<int>(AggregateKind::MAX);

constexpr int kEmpty = -1;
constexpr int kBusy = -2;
// A slot of the group table: the group's key tuple hash beside its index, so that a probe reads
// both in one 16-byte access; a generated kernel decides a single fixed-width key by the hash
// alone (HashKeys is a bijection of it). Both start all ones (kEmpty; kUnknownHash). The inserting
// thread writes the hash before it names the group; a reader that sees the group with the hash
// still kUnknownHash takes the group's own hash (Header.hashes), then compares its keys.
struct Slot {
  unsigned long long hash;
  int group;
  int unused;
};
constexpr int kSlotBytes = 16;
constexpr int kSlotHash = 0;
constexpr int kSlotGroup = 8;
constexpr unsigned long long kUnknownHash = 0xffffffffffffffffull;
static_assert(sizeof(Slot) == kSlotBytes, "Slot is 16 bytes");
static_assert(offsetof(Slot, hash) == kSlotHash, "Slot::hash");
static_assert(offsetof(Slot, group) == kSlotGroup, "Slot::group");
// Slots of the per-block table a row looks at before it goes to the global accumulators.
constexpr int kLocalProbes = 4;
// LocalTable::Find: the multiplier that spreads group indexes over the per-block table.
constexpr unsigned int kLocalHashMultiplier = 0x9e3779b1u;
// HashKeys: a NULL key's value hash, and the salt added to it.
constexpr unsigned long long kNullKeyHash = 0x9e3779b97f4a7c15ull;
constexpr unsigned long long kNullKeySalt = 0x51ed270b27ull;
// WriteKey: a string key's bytes start in the key heap at a multiple of this and are followed by
// zeros up to the next one, so that a generated kernel compares them a whole word at a time.
constexpr int kKeyHeapAlignment = 8;

// Function::table_words (codegen LocalTableLayout.tableWords): the lean per-block table holds the
// function's high word, its seen flag.
constexpr int kTableHigh = 1;
constexpr int kTableSeen = 2;

// The plan: 64-bit words. Header, then 12 words per key column, then 12 words per function.
constexpr int kHeaderWords = 16;
constexpr int kColumnWords = 12;
struct Header {
  long long rows;              // finish: groups to write
  long long key_count;
  long long function_count;
  long long table_mask;        // table capacity - 1 (a power of two)
  unsigned long long slots;    // the group table: table_mask + 1 Slots
  unsigned long long hashes;
  unsigned long long group_count;  // device counter (unsigned long long)
  unsigned long long heap;         // the key heap's base (0 without string keys)
  unsigned long long heap_used;    // device counter: bytes of the heap in use
  long long heap_capacity;         // bytes
  unsigned long long output_registers;  // update: int32 register of each program output
  long long output_count;               // update: program outputs (= the spec's input columns)
  long long local_entries;  // update: entries of the per-block table (a power of two, any
                            // count where a generated kernel finds them by key; 0: none)
  unsigned long long direct;  // update: the direct group map, int32 per slot (0: none)
  long long reserved[2];
};
struct Key {
  unsigned long long data;      // finish: output column data (fixed width)
  unsigned long long validity;  // finish: output validity
  long long type;               // TypeId
  unsigned long long values;    // per group int64 (strings: heap offset)
  unsigned long long nulls;     // per group uint8 (1 = NULL)
  long long reg;                // update: the register holding the key
  unsigned long long lengths;   // strings: per group int32 byte length
  unsigned long long string_lengths;  // finish, strings: per output row int32 length
  unsigned long long string_sources;  // finish, strings: per output row address of the bytes
  long long direct_min;   // update, direct map: the smallest value of the key's range
  long long direct_span;  // update, direct map: values in the range + 1 (the last: NULL)
  long long reserved;
};
struct Function {
  long long kind;
  unsigned long long data;      // finish: output data
  unsigned long long validity;  // finish: output validity
  long long type;               // input TypeId
  unsigned long long value;     // per group uint64 (sums: the low word of the int128)
  unsigned long long high;      // per group uint64 (sums: the high word of the int128)
  unsigned long long seen;      // per group uint32
  long long precision;          // finish: the result precision (SUM_DECIMAL)
  long long result_type;        // finish: the result TypeId
  long long zero_when_empty;    // finish: 1 when a group without input gives 0, not NULL
  long long reg;                // update: the register holding the input (-1: COUNT_ROWS)
  long long table_words;        // update: kTableHigh | kTableSeen, the words LeanLocalTable holds
};
static_assert(sizeof(Header) == kHeaderWords * 8, "header");
static_assert(sizeof(Key) == kColumnWords * 8, "key");
static_assert(sizeof(Function) == kColumnWords * 8, "function");

__device__ __forceinline__ int Width(int type) { return WidthOf(static_cast<TypeId>(type)); }

__device__ __forceinline__ void WriteFixed(unsigned long long data, int type, long long row,
                                           long long value) {
  switch (Width(type)) {
    case 1: reinterpret_cast<unsigned char*>(data)[row] = static_cast<unsigned char>(value); break;
    case 2: reinterpret_cast<unsigned short*>(data)[row] = static_cast<unsigned short>(value); break;
    case 4: reinterpret_cast<unsigned int*>(data)[row] = static_cast<unsigned int>(value); break;
    default: reinterpret_cast<long long*>(data)[row] = value; break;
  }
}

// Spark's order (program.cuh SparkCompare): NaN largest and equal to NaN, -0.0 = 0.0.
__device__ __forceinline__ int Compare(int type, long long x, long long y) {
  if (type == kFloat) {
    return SparkCompare(static_cast<double>(__int_as_float(static_cast<int>(x))),
                        static_cast<double>(__int_as_float(static_cast<int>(y))));
  }
  if (type == kDouble) return SparkCompare(__longlong_as_double(x), __longlong_as_double(y));
  return x < y ? -1 : (x > y ? 1 : 0);
}

// The identity of MIN (the largest value of the order) and MAX (the smallest).
__device__ __forceinline__ long long Identity(int kind, int type) {
  if (kind == kMin) {
    if (type == kFloat) return static_cast<long long>(0x7fc00000);          // NaN
    if (type == kDouble) return static_cast<long long>(0x7ff8000000000000ull);  // NaN
    return 0x7fffffffffffffffll;
  }
  if (type == kFloat) return static_cast<long long>(static_cast<int>(0xff800000u));  // -inf
  if (type == kDouble) return static_cast<long long>(0xfff0000000000000ull);  // -inf
  return static_cast<long long>(0x8000000000000000ull);
}

// ---- exact 128-bit sums ------------------------------------------------------------------------

// A two's complement int128 as its two words.
struct Int128 {
  unsigned long long low;
  unsigned long long high;
};

__device__ __forceinline__ Int128 Negate(Int128 x) {
  const unsigned long long low = ~x.low + 1ull;
  return {low, ~x.high + (low == 0 ? 1ull : 0ull)};
}

// A DOUBLE holding a whole number, exactly (AggregateFunction.SUM over DOUBLE: the sum buffers
// of Spark's avg over integers, whole numbers whose magnitude may pass 2^63). The value is
// mantissa * 2^shift. Fractions, non-finite values and magnitudes from 2^126 on are outside the
// contract: the result is then defined (no undefined shifts) but meaningless.
__device__ __forceinline__ Int128 WholeDoubleToInt128(double d) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(d));
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0) return {0, 0};  // +-0 and subnormals (|d| < 1)
  const unsigned long long mantissa = (bits & ((1ull << 52) - 1)) | (1ull << 52);
  const int shift = biased - 1075;  // d = mantissa * 2^shift
  Int128 magnitude;
  if (shift <= -64) {
    magnitude = {0, 0};
  } else if (shift < 0) {
    magnitude = {mantissa >> -shift, 0};
  } else if (shift == 0) {
    magnitude = {mantissa, 0};
  } else if (shift < 64) {
    magnitude = {mantissa << shift, mantissa >> (64 - shift)};
  } else {
    magnitude = {0, shift < 128 ? mantissa << (shift - 64) : 0};
  }
  return (bits >> 63) != 0 ? Negate(magnitude) : magnitude;
}

// The int128 rounded once to the nearest double, ties to even (as BigInteger.doubleValue).
__device__ __forceinline__ double Int128ToDouble(Int128 x) {
  const bool negative = static_cast<long long>(x.high) < 0;
  const Int128 m = negative ? Negate(x) : x;  // |INT128_MIN| = 2^127 still fits unsigned
  double magnitude;
  if (m.high == 0) {
    magnitude = __ull2double_rn(m.low);
  } else {
    // Keep the top 64 significant bits, OR-ing every dropped bit into the lowest kept bit (a
    // "sticky" bit): the double keeps 53 bits, so the rounding point is 11 bits above the
    // sticky bit, and a tie stays a tie only when every dropped bit was 0.
    const int drop = 64 - __clzll(static_cast<long long>(m.high));  // 1 .. 64
    unsigned long long top;
    bool sticky;
    if (drop == 64) {
      top = m.high;
      sticky = m.low != 0;
    } else {
      top = (m.high << (64 - drop)) | (m.low >> drop);
      sticky = (m.low << (64 - drop)) != 0;
    }
    magnitude = scalbn(__ull2double_rn(top | (sticky ? 1ull : 0ull)), drop);  // exact scaling
  }
  return negative ? -magnitude : magnitude;
}

// Adds an int128 to a group's (low, high) words with two atomics: the carry out of the low word
// goes into the high word, so the total is exact once every addition has landed, whatever the
// order.
__device__ __forceinline__ void AtomicAdd128(unsigned long long* low, unsigned long long* high,
                                             Int128 add) {
  const unsigned long long old = atomicAdd(low, add.low);
  const unsigned long long carry = (old + add.low < old) ? 1ull : 0ull;
  const unsigned long long high_add = add.high + carry;
  if (high_add != 0) atomicAdd(high, high_add);
}

__device__ __forceinline__ Int128 SignExtend(long long v) {
  return {static_cast<unsigned long long>(v), v < 0 ? ~0ull : 0ull};
}

// A register's fixed-width value as the group arrays hold it: sign-extended from the type's width
// (registers of FLOAT hold zero-extended bits; the group arrays, like HostColumns.fixed, do not).
__device__ __forceinline__ long long Canonical(int type, long long v) {
  switch (Width(type)) {
    case 1: return static_cast<signed char>(v);
    case 2: return static_cast<short>(v);
    case 4: return static_cast<int>(v);
    default: return v;
  }
}

// An acquire load of a slot: a group index seen here comes with its hash and key (written before
// the releasing atomicExch in FindOrInsert).
__device__ __forceinline__ int LoadAcquire(const int* address) {
  int value;
  asm volatile("ld.acquire.gpu.s32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
  return value;
}

// The group keys of a row: KeyAt(k) is key k's Register (the interpreter kernel reads them from
// the row's register file: RegisterKeys).
struct RegisterKeys {
  const Key* keys;
  const Register* regs;
  __device__ __forceinline__ Register operator()(int k) const { return regs[keys[k].reg]; }
};

template <typename KeyAt>
__device__ __forceinline__ unsigned long long HashKeys(const Key* keys, int key_count,
                                                       const KeyAt& key_at) {
  unsigned long long h = kKeyTupleSeed;
  for (int k = 0; k < key_count; ++k) {
    const int type = static_cast<int>(keys[k].type);
    const Register r = key_at(k);
    unsigned long long v = kNullKeyHash;
    if (r.valid) {
      v = type == kString
              ? HashBytes(reinterpret_cast<const unsigned char*>(r.value), r.length)
              : static_cast<unsigned long long>(Canonical(type, r.value));
    }
    h = Mix(h ^ Mix(v + (r.valid ? 0ull : kNullKeySalt) + static_cast<unsigned long long>(k)));
  }
  return h;
}

// Whether group `group` has the row's key. Group arrays are read through L2 (ld.cg): another
// block may have written them during this kernel, and L1 is not coherent.
template <typename KeyAt>
__device__ __forceinline__ bool KeysEqual(const Header& header, const Key* keys, int key_count,
                                          const KeyAt& key_at, int group) {
  for (int k = 0; k < key_count; ++k) {
    const Key& key = keys[k];
    const Register r = key_at(k);
    const bool group_null = __ldcg(reinterpret_cast<const unsigned char*>(key.nulls) + group) != 0;
    if (group_null != !r.valid) return false;
    if (group_null) continue;
    const long long stored = __ldcg(reinterpret_cast<const long long*>(key.values) + group);
    if (static_cast<int>(key.type) != kString) {
      if (stored != Canonical(static_cast<int>(key.type), r.value)) return false;
      continue;
    }
    if (__ldcg(reinterpret_cast<const int*>(key.lengths) + group) != r.length) return false;
    const unsigned char* mine = reinterpret_cast<const unsigned char*>(r.value);
    const unsigned char* theirs = reinterpret_cast<const unsigned char*>(header.heap + stored);
    for (int i = 0; i < r.length; ++i) {
      if (__ldcg(theirs + i) != mine[i]) return false;
    }
  }
  return true;
}

// Writes a new group's key; a string key's bytes are copied into the key heap. Should the heap
// be full (the host's bound failed: a bug), the key is stored empty and *heap_overflow is set,
// which the host reports.
template <typename KeyAt>
__device__ __forceinline__ void WriteKey(const Header& header, const Key* keys, int key_count,
                                         const KeyAt& key_at, int group,
                                         unsigned long long* heap_overflow) {
  for (int k = 0; k < key_count; ++k) {
    const Key& key = keys[k];
    const Register r = key_at(k);
    const int type = static_cast<int>(key.type);
    long long value = 0;
    int length = 0;
    if (r.valid && type == kString) {
      const int padded = (r.length + kKeyHeapAlignment - 1) & -kKeyHeapAlignment;
      const unsigned long long at = atomicAdd(reinterpret_cast<unsigned long long*>(
          header.heap_used), static_cast<unsigned long long>(padded));
      if (at + static_cast<unsigned long long>(padded) >
          static_cast<unsigned long long>(header.heap_capacity)) {
        atomicExch(heap_overflow, 1ull);
      } else {
        const unsigned char* from = reinterpret_cast<const unsigned char*>(r.value);
        unsigned char* to = reinterpret_cast<unsigned char*>(header.heap + at);
        for (int i = 0; i < r.length; ++i) to[i] = from[i];
        for (int i = r.length; i < padded; ++i) to[i] = 0;
        value = static_cast<long long>(at);
        length = r.length;
      }
    } else if (r.valid) {
      value = Canonical(type, r.value);
    }
    reinterpret_cast<long long*>(key.values)[group] = value;
    reinterpret_cast<unsigned char*>(key.nulls)[group] = r.valid ? 0 : 1;
    if (type == kString) reinterpret_cast<int*>(key.lengths)[group] = length;
  }
}

template <typename KeyAt>
__device__ int FindOrInsert(const Header& header, const Key* keys, const KeyAt& key_at,
                            unsigned long long* heap_overflow) {
  const int key_count = static_cast<int>(header.key_count);
  const unsigned long long h = HashKeys(keys, key_count, key_at);
  Slot* slots = reinterpret_cast<Slot*>(header.slots);
  unsigned long long* hashes = reinterpret_cast<unsigned long long*>(header.hashes);
  const unsigned long long mask = static_cast<unsigned long long>(header.table_mask);
  unsigned long long slot = h & mask;
  while (true) {
    Slot* at = slots + slot;
    const int s = LoadAcquire(&at->group);
    if (s == kEmpty) {
      if (atomicCAS(&at->group, kEmpty, kBusy) == kEmpty) {
        const int group = static_cast<int>(
            atomicAdd(reinterpret_cast<unsigned long long*>(header.group_count), 1ull));
        WriteKey(header, keys, key_count, key_at, group, heap_overflow);
        hashes[group] = h;
        at->hash = h;
        __threadfence();  // the key and hashes before the slot names the group
        atomicExch(&at->group, group);
        return group;
      }
      continue;  // lost the race: look at the slot again
    }
    if (s == kBusy) continue;  // another thread is writing the key; wait for it
    // The acquire above makes the slot's hash visible with its group; kUnknownHash (the real
    // hash, or a test's) sends the lookup to the group's own, as in a generated kernel.
    unsigned long long slot_hash = __ldcg(&at->hash);
    if (slot_hash == kUnknownHash) slot_hash = __ldcg(hashes + s);
    if (slot_hash == h && KeysEqual(header, keys, key_count, key_at, s)) return s;
    slot = (slot + 1) & mask;
  }
}

// ---- the direct group map (Crystal's SSB group-by) ---------------------------------------------
// When every key is an integer with a small dense range (the host decides, from the groups of the
// first batch), a slot per key tuple in the range, numbered mixed-radix: key k's digit is
// value - direct_min, or direct_span - 1 for NULL. The map caches the group of a slot in front of
// the hash table: a hit skips hashing and probing; a row outside the range, or whose slot is still
// empty, finds its group in the hash table (which holds every group, so a later batch that leaves
// the range stays correct) and stores it in the slot. Every writer of a slot writes the same
// group, and a reader that sees a stale kEmpty only takes the hash table path, so plain loads and
// stores suffice.

// The slot of the row's key tuple, or -1 outside the range.
template <typename KeyAt>
__device__ __forceinline__ long long DirectSlot(const Key* keys, int key_count,
                                                const KeyAt& key_at) {
  long long slot = 0;
  for (int k = 0; k < key_count; ++k) {
    const Key& key = keys[k];
    const Register r = key_at(k);
    long long digit = key.direct_span - 1;  // NULL
    if (r.valid) {
      const long long v = Canonical(static_cast<int>(key.type), r.value);
      if (v < key.direct_min) return -1;
      const unsigned long long offset =
          static_cast<unsigned long long>(v) - static_cast<unsigned long long>(key.direct_min);
      if (offset >= static_cast<unsigned long long>(key.direct_span - 1)) return -1;
      digit = static_cast<long long>(offset);
    }
    slot = slot * key.direct_span + digit;
  }
  return slot;
}

// The row's group: through the direct map when there is one, else (or on a miss) the hash table.
template <typename KeyAt>
__device__ __forceinline__ int FindGroup(const Header& header, const Key* keys,
                                         const KeyAt& key_at, unsigned long long* heap_overflow) {
  if (header.direct == 0) return FindOrInsert(header, keys, key_at, heap_overflow);
  const long long slot = DirectSlot(keys, static_cast<int>(header.key_count), key_at);
  if (slot < 0) return FindOrInsert(header, keys, key_at, heap_overflow);
  int* direct = reinterpret_cast<int*>(header.direct);
  const int cached = __ldcg(direct + slot);
  if (cached >= 0) return cached;
  const int group = FindOrInsert(header, keys, key_at, heap_overflow);
  direct[slot] = group;
  return group;
}

// ---- accumulators -------------------------------------------------------------------------------

// MIN/MAX by compare-and-swap in Spark's order (global or shared memory: generic addresses).
__device__ __forceinline__ void AtomicMinMax(int kind, int type, unsigned long long* value,
                                             long long v) {
  unsigned long long current = *reinterpret_cast<volatile unsigned long long*>(value);
  while (true) {
    const int order = Compare(type, v, static_cast<long long>(current));
    if (kind == kMin ? order >= 0 : order <= 0) return;
    const unsigned long long seen_value =
        atomicCAS(value, current, static_cast<unsigned long long>(v));
    if (seen_value == current) return;
    current = seen_value;
  }
}

__device__ __forceinline__ void MarkSeen(unsigned int* seen) {
  if (*reinterpret_cast<volatile unsigned int*>(seen) == 0) *seen = 1;
}

// One row's input into one accumulator (value, high, seen), global or shared.
__device__ __forceinline__ void Accumulate(int kind, int type, const Register& input,
                                           unsigned long long* value, unsigned long long* high,
                                           unsigned int* seen) {
  if (kind == kCountRows) {
    atomicAdd(value, 1ull);
    return;
  }
  if (!input.valid) return;
  MarkSeen(seen);
  switch (kind) {
    case kCount:
      atomicAdd(value, 1ull);
      return;
    case kSum:
    case kSumDecimal:
      AtomicAdd128(value, high, type == kDouble ? WholeDoubleToInt128(__longlong_as_double(
                                                      input.value))
                                                : SignExtend(Canonical(type, input.value)));
      return;
    case kMin:
    case kMax:
      AtomicMinMax(kind, type, value, Canonical(type, input.value));
      return;
    default:
      return;
  }
}

// A per-block accumulator (value, high, seen) merged into the global one: exact for every kind.
__device__ __forceinline__ void Merge(int kind, int type, unsigned long long local_value,
                                      unsigned long long local_high, unsigned int local_seen,
                                      unsigned long long* value, unsigned long long* high,
                                      unsigned int* seen) {
  if (kind == kCountRows || kind == kCount) {
    if (local_value != 0) atomicAdd(value, local_value);
    return;
  }
  if (local_seen == 0) return;
  MarkSeen(seen);
  if (kind == kSum || kind == kSumDecimal) {
    AtomicAdd128(value, high, {local_value, local_high});
  } else {
    AtomicMinMax(kind, type, value, static_cast<long long>(local_value));
  }
}

// Every entry of per-block table `t` (LocalTable or a PackedLocalTable) empty, its accumulators at
// their identities: function f's value, and its high word and seen flag where the table has them
// (Table::HasHigh, HasSeen of the function's kind and table_words), in the row Table::Row gives
// of f and the count of functions before it that have one. Every thread of the block calls it,
// then the block synchronizes.
template <typename Table>
__device__ __forceinline__ void ResetEntries(const Table& t, const Function* functions,
                                             int function_count) {
  for (int e = threadIdx.x; e < t.entries; e += blockDim.x) {
    t.keys[e] = kEmpty;
    int h = 0;
    int s = 0;
    for (int f = 0; f < function_count; ++f) {
      const int kind = static_cast<int>(functions[f].kind);
      t.values[f * t.entries + e] = static_cast<unsigned long long>(
          (kind == kMin || kind == kMax) ? Identity(kind, static_cast<int>(functions[f].type))
                                         : 0);
      const long long words = functions[f].table_words;
      if (Table::HasHigh(kind, words)) t.highs[Table::Row(f, h++) * t.entries + e] = 0;
      if (Table::HasSeen(kind, words)) t.seen[Table::Row(f, s++) * t.entries + e] = 0;
    }
  }
}

// The per-block table in dynamic shared memory, for E entries and F functions: values[F][E] and
// highs[F][E] (8-byte words first, for alignment), then keys[E] (global group index or kEmpty),
// then seen[F][E]. LocalTableSize (codegen) sizes it (4 + 20 F bytes an entry).
struct LocalTable {
  unsigned long long* values;
  unsigned long long* highs;
  int* keys;
  unsigned int* seen;
  int entries;  // a power of two, or 0: no table (any count where a generated kernel finds
                // its entries by key, LocalKeyTable.find: Find is not used there)

  __device__ __forceinline__ static LocalTable In(unsigned long long* shared, int entries,
                                                  int functions) {
    LocalTable t;
    t.values = shared;
    t.highs = shared + static_cast<long long>(functions) * entries;
    t.keys = reinterpret_cast<int*>(shared + 2ll * functions * entries);
    t.seen = reinterpret_cast<unsigned int*>(t.keys + entries);
    t.entries = entries;
    return t;
  }

  // Every function has a high word and a seen flag, function f's in row f (ResetEntries).
  __device__ __forceinline__ static bool HasHigh(int, long long) { return true; }
  __device__ __forceinline__ static bool HasSeen(int, long long) { return true; }
  static constexpr unsigned int kSeenWithoutFlag = 0;  // never taken: every function has one
  __device__ __forceinline__ static int Row(int f, int) { return f; }

  // Every entry empty, its accumulators at their identities. Call from every thread, then sync.
  __device__ __forceinline__ void Reset(const Function* functions, int function_count) const {
    ResetEntries(*this, functions, function_count);
  }

  // The entry holding `group`, claiming an empty one if need be; -1 when the few slots looked at
  // hold other groups (the row then goes to the global accumulators).
  __device__ __forceinline__ int Find(int group) const {
    if (entries == 0) return -1;
    unsigned int slot = (static_cast<unsigned int>(group) * kLocalHashMultiplier) >> 7;
    for (int probe = 0; probe < kLocalProbes; ++probe) {
      slot &= static_cast<unsigned int>(entries - 1);
      const int held = *reinterpret_cast<volatile int*>(keys + slot);
      if (held == group) return static_cast<int>(slot);
      if (held == kEmpty) {
        const int before = atomicCAS(keys + slot, kEmpty, group);
        if (before == kEmpty || before == group) return static_cast<int>(slot);
      }
      ++slot;
    }
    return -1;
  }
};

// The compact per-block tables of a generated kernel that runs one block a multiprocessor
// (codegen LocalTableLayout): values[F][E], then highs[H][E] of the H functions that have one,
// then keys[E], then seen[S][E] of the S functions that have one. 4 + 8 F + 8 H + 4 S bytes an
// entry, where LocalTable takes 4 + 20 F. Function f's row of highs (of seen) is the number of
// functions before it that have one (LocalTableLayout.highRow, seenRow): ResetEntries and
// MergeLocal count them as they go. Which functions have them is the Words' (CompactWords,
// LeanWords).
template <typename Words>
struct PackedLocalTable {
  unsigned long long* values;
  unsigned long long* highs;
  int* keys;
  unsigned int* seen;
  int entries;

  __device__ __forceinline__ static bool HasHigh(int kind, long long table_words) {
    return Words::HasHigh(kind, table_words);
  }
  __device__ __forceinline__ static bool HasSeen(int kind, long long table_words) {
    return Words::HasSeen(kind, table_words);
  }
  static constexpr unsigned int kSeenWithoutFlag = Words::kSeenWithoutFlag;
  // Function f's row of highs (of seen): the count of functions before it that have one.
  __device__ __forceinline__ static int Row(int, int counted) { return counted; }

  __device__ __forceinline__ static PackedLocalTable In(unsigned long long* shared, int entries,
                                                        const Function* functions,
                                                        int function_count) {
    int highs = 0;
    for (int f = 0; f < function_count; ++f) {
      if (HasHigh(static_cast<int>(functions[f].kind), functions[f].table_words)) ++highs;
    }
    PackedLocalTable t;
    t.values = shared;
    t.highs = shared + static_cast<long long>(function_count) * entries;
    t.keys = reinterpret_cast<int*>(t.highs + static_cast<long long>(highs) * entries);
    t.seen = reinterpret_cast<unsigned int*>(t.keys + entries);
    t.entries = entries;
    return t;
  }

  // LocalTable::Reset in this layout.
  __device__ __forceinline__ void Reset(const Function* functions, int function_count) const {
    ResetEntries(*this, functions, function_count);
  }
};

// The compact table's words (CompactLocalTable): high words for sums only, seen flags for all
// but counts (a count needs neither: Merge reads its value alone, kSeenWithoutFlag unread).
struct CompactWords {
  static constexpr unsigned int kSeenWithoutFlag = 0;
  __device__ __forceinline__ static bool HasHigh(int kind, long long) {
    return kind == kSum || kind == kSumDecimal;
  }
  __device__ __forceinline__ static bool HasSeen(int kind, long long) {
    return kind != kCountRows && kind != kCount;
  }
};
using CompactLocalTable = PackedLocalTable<CompactWords>;

// The lean table's words (LeanLocalTable), as the plan gives them (Function::table_words): fewer
// than the compact table's where a sum wraps (no one reads its high word) or an input cannot be
// NULL (an entry's flag would be its claim: MergeLocal takes a flag the table has not as set).
struct LeanWords {
  static constexpr unsigned int kSeenWithoutFlag = 1;
  __device__ __forceinline__ static bool HasHigh(int, long long table_words) {
    return (table_words & kTableHigh) != 0;
  }
  __device__ __forceinline__ static bool HasSeen(int, long long table_words) {
    return (table_words & kTableSeen) != 0;
  }
};
using LeanLocalTable = PackedLocalTable<LeanWords>;

// ---- warp-level resolution ---------------------------------------------------------------------
// When every active lane of a warp holds a row of the same group (always for a global aggregate,
// and for most warps when there are very few groups), the warp reduces its rows with shuffles and
// one lane (the leader) accumulates the result once: 32 rows cost one shared (or global) update
// per function instead of 32 contending ones. Exact: counts by popcount, int128 sums wrap mod
// 2^128 like the accumulators, MIN/MAX by Spark's order. Every lane of the warp must call these.

__device__ __forceinline__ Int128 WarpSum128(Int128 x) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    const unsigned long long low = __shfl_xor_sync(kFullWarpMask, x.low, offset);
    const unsigned long long high = __shfl_xor_sync(kFullWarpMask, x.high, offset);
    const unsigned long long sum = x.low + low;
    x.high = x.high + high + (sum < x.low ? 1ull : 0ull);
    x.low = sum;
  }
  return x;
}

__device__ __forceinline__ long long WarpMinMax(int kind, int type, long long x) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    const long long other = __shfl_xor_sync(kFullWarpMask, x, offset);
    const int order = Compare(type, other, x);
    if (kind == kMin ? order < 0 : order > 0) x = other;
  }
  return x;
}

// The warp's rows (active lanes, all of group `group`) reduced per function, then merged by the
// leader lane into the group's per-block entry, or its global accumulators when the block's
// table cannot hold it.
// The inputs of a row's functions: InputAt(f) is function f's input Register (not read for
// COUNT_ROWS; the interpreter kernel reads them from the row's register file: RegisterInputs).
struct RegisterInputs {
  const Function* functions;
  const Register* regs;
  __device__ __forceinline__ Register operator()(int f) const {
    return regs[functions[f].reg];
  }
};

template <typename InputAt>
__device__ __forceinline__ void AccumulateWarp(const Function* functions, int function_count,
                                               const InputAt& input_at, bool active, int leader,
                                               int group, const LocalTable& local) {
  const int lane = threadIdx.x % kWarpThreads;
  const int entry = lane == leader ? local.Find(group) : -1;
  for (int f = 0; f < function_count; ++f) {
    const Function& fn = functions[f];
    const int kind = static_cast<int>(fn.kind);
    const int type = static_cast<int>(fn.type);
    const Register input = kind == kCountRows ? Register{0, 0, 1, 0} : input_at(f);
    const bool valid = active && input.valid;
    const unsigned valid_lanes = __ballot_sync(kFullWarpMask, valid);
    if (valid_lanes == 0) continue;  // the same on every lane
    unsigned long long low = __popc(valid_lanes);  // COUNT_ROWS, COUNT
    unsigned long long high = 0;
    if (kind == kSum || kind == kSumDecimal) {
      Int128 x = {0, 0};
      if (valid) {
        x = type == kDouble ? WholeDoubleToInt128(__longlong_as_double(input.value))
                            : SignExtend(Canonical(type, input.value));
      }
      x = WarpSum128(x);
      low = x.low;
      high = x.high;
    } else if (kind == kMin || kind == kMax) {
      low = static_cast<unsigned long long>(
          WarpMinMax(kind, type, valid ? Canonical(type, input.value) : Identity(kind, type)));
    }
    if (lane != leader) continue;
    if (entry >= 0) {
      const int at = f * local.entries + entry;
      Merge(kind, type, low, high, 1u, local.values + at, local.highs + at, local.seen + at);
    } else {
      Merge(kind, type, low, high, 1u, reinterpret_cast<unsigned long long*>(fn.value) + group,
            reinterpret_cast<unsigned long long*>(fn.high) + group,
            reinterpret_cast<unsigned int*>(fn.seen) + group);
    }
  }
}

// One row (an active lane) accumulated on its own: into its group's per-block entry, or its
// global accumulators.
template <typename InputAt>
__device__ __forceinline__ void AccumulateRow(const Function* functions, int function_count,
                                              const InputAt& input_at, int group,
                                              const LocalTable& local) {
  const int entry = local.Find(group);
  for (int f = 0; f < function_count; ++f) {
    const Function& fn = functions[f];
    const int kind = static_cast<int>(fn.kind);
    const Register input = kind == kCountRows ? Register{0, 0, 1, 0} : input_at(f);
    if (entry >= 0) {
      const int at = f * local.entries + entry;
      Accumulate(kind, static_cast<int>(fn.type), input, local.values + at, local.highs + at,
                 local.seen + at);
    } else {
      Accumulate(kind, static_cast<int>(fn.type), input,
                 reinterpret_cast<unsigned long long*>(fn.value) + group,
                 reinterpret_cast<unsigned long long*>(fn.high) + group,
                 reinterpret_cast<unsigned int*>(fn.seen) + group);
    }
  }
}

// The plan's parts (see the top of the file).
struct PlanView {
  const Header* header;
  const Key* keys;
  const Function* functions;

  __device__ __forceinline__ static PlanView Of(const unsigned long long* plan) {
    const Header* header = reinterpret_cast<const Header*>(plan);
    return {header, reinterpret_cast<const Key*>(plan + kHeaderWords),
            reinterpret_cast<const Function*>(plan + kHeaderWords +
                                              kColumnWords * header->key_count)};
  }
};

// One item of the update. Every lane of the warp calls it (the warp-level step needs the whole
// warp); an active row (the filter keeps it, without an error) finds its group and is
// accumulated: the warp's rows at once when they all belong to one group, else each on its own.
template <typename KeyAt, typename InputAt>
__device__ __forceinline__ void AggregateItem(const PlanView& plan, bool active,
                                              const KeyAt& key_at, const InputAt& input_at,
                                              const LocalTable& local,
                                              unsigned long long* heap_overflow) {
  const int key_count = static_cast<int>(plan.header->key_count);
  const int function_count = static_cast<int>(plan.header->function_count);
  int group = 0;
  if (active && key_count > 0) group = FindGroup(*plan.header, plan.keys, key_at, heap_overflow);
  const unsigned active_lanes = __ballot_sync(kFullWarpMask, active);
  if (active_lanes == 0) return;  // the same on every lane
  const int leader = __ffs(active_lanes) - 1;
  const int leader_group = __shfl_sync(kFullWarpMask, group, leader);
  if (__all_sync(kFullWarpMask, !active || group == leader_group)) {
    AccumulateWarp(plan.functions, function_count, input_at, active, leader, leader_group,
                   local);
  } else if (active) {
    AccumulateRow(plan.functions, function_count, input_at, group, local);
  }
}

// Global propagation: every entry the block claimed in its table (LocalTable or a
// PackedLocalTable), into its group's accumulators. A high word the table has not for a function
// (Table::HasHigh) merges as 0: a count's, which Merge does not read, or a wrapping sum's, whose
// high word no one reads. A seen flag it has not (Table::HasSeen) merges as the table's
// kSeenWithoutFlag: a count's, which Merge does not read, or, set, that of a function whose input
// cannot be NULL, whose flag the entry's claim (a row of the group, with a value) would have set.
// Every thread of the block calls it, after a barrier.
template <typename Table>
__device__ __forceinline__ void MergeLocal(const PlanView& plan, const Table& local) {
  const int function_count = static_cast<int>(plan.header->function_count);
  for (int e = threadIdx.x; e < local.entries; e += blockDim.x) {
    const int group = local.keys[e];
    if (group < 0) continue;
    int h = 0;
    int s = 0;
    for (int f = 0; f < function_count; ++f) {
      const Function& fn = plan.functions[f];
      const int kind = static_cast<int>(fn.kind);
      const unsigned long long high = Table::HasHigh(kind, fn.table_words)
                                          ? local.highs[Table::Row(f, h++) * local.entries + e]
                                          : 0;
      const unsigned int seen = Table::HasSeen(kind, fn.table_words)
                                    ? local.seen[Table::Row(f, s++) * local.entries + e]
                                    : Table::kSeenWithoutFlag;
      Merge(kind, static_cast<int>(fn.type), local.values[f * local.entries + e], high, seen,
            reinterpret_cast<unsigned long long*>(fn.value) + group,
            reinterpret_cast<unsigned long long*>(fn.high) + group,
            reinterpret_cast<unsigned int*>(fn.seen) + group);
    }
  }
}

// 10^precision for the decimal precisions of ColumnType (at most 18).
__device__ __forceinline__ long long DecimalLimit(int precision) {
  long long limit = 1;
  for (int p = 0; p < precision; ++p) limit *= 10;
  return limit;
}

// The result of function fn for group r, as AggregateFunction's javadoc defines it: counts are
// never NULL; other functions are NULL without input unless zero_when_empty (sums give 0). A
// SUM to LONG wraps, and under ANSI reports ARITHMETIC_OVERFLOW when the exact sum leaves
// int64; a SUM to DOUBLE is the exact sum rounded once (never an error); a SUM_DECIMAL that
// leaves the result precision is NULL (never an error: Spark raises it later, if at all).
__device__ __forceinline__ long long FinalValue(const Function& fn, long long r, bool ansi,
                                                unsigned long long* error, bool* valid) {
  const int kind = static_cast<int>(fn.kind);
  const long long value = reinterpret_cast<const long long*>(fn.value)[r];
  if (kind == kCountRows || kind == kCount) {
    *valid = true;
    return value;
  }
  const bool seen = reinterpret_cast<const unsigned int*>(fn.seen)[r] != 0;
  if (kind == kMin || kind == kMax) {
    *valid = seen;
    return value;
  }
  // Sums: without input the words still hold 0, which zero_when_empty turns into the result.
  *valid = seen || fn.zero_when_empty != 0;
  const Int128 sum = {static_cast<unsigned long long>(value),
                      reinterpret_cast<const unsigned long long*>(fn.high)[r]};
  const bool fits_int64 = static_cast<long long>(sum.high) == (value < 0 ? -1ll : 0ll);
  if (kind == kSumDecimal) {
    const long long limit = DecimalLimit(static_cast<int>(fn.precision));
    if (!fits_int64 || value >= limit || value <= -limit) *valid = false;
    return value;
  }
  if (static_cast<int>(fn.result_type) == kDouble) {
    return __double_as_longlong(Int128ToDouble(sum));
  }
  if (!fits_int64 && ansi) {
    atomicMin(error, (static_cast<unsigned long long>(r) << kErrorRowShift) | kArithmeticOverflow);
  }
  return value;  // the low word: the int64 wrap
}

}  // namespace hash_aggregate
}  // namespace tessera
