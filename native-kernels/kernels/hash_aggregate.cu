// The hash aggregation operator, driven by CudaHashAggregate.java, whose constants mirror the
// plan layout below.
//
// The aggregation state (owned by the Java side, living across batches) is an open-addressing
// hash table with linear probing: `slots` holds int32 group indexes (kEmpty = -1, kBusy = -2 while
// a thread writes a new group's key). Per group: its 64-bit hash, its key values (int64,
// sign-extended; FLOAT/DOUBLE by bits) and key null flags, and per function a value word, a high
// word (sums are exact 128-bit: low word in `value`, high word in `high`) and a seen flag.
//
// tessera_hash_aggregate_update: one thread per row finds or inserts the row's group, then
// accumulates every function with atomics. The host guarantees groups + rows <= group capacity
// and table capacity >= 2 x group capacity, so a probe always ends.
// tessera_hash_aggregate_rehash: reinserts groups [0, count) into a fresh (all kEmpty) table.
// tessera_hash_aggregate_init: sets accumulators of groups [from, to) to their identity.
// tessera_hash_aggregate_finish: writes groups [0, rows) into the output columns, counts nulls,
// and reports overflow (ANSI) as the smallest (row << 8 | RowError code).
#include "tessera/config.cuh"

namespace tessera {
namespace hash_aggregate {

// TypeId ordinals (column/TypeId.java).
constexpr int kBoolean = 0, kByte = 1, kShort = 2, kInt = 3, kLong = 4, kFloat = 5, kDouble = 6,
              kDate = 7, kTimestamp = 8, kDecimal = 9, kString = 10;
// AggregateFunction.Kind ordinals.
constexpr int kCountRows = 0, kCount = 1, kSumInt = 2, kSumDecimal = 3, kMin = 4, kMax = 5;
// RowError codes.
constexpr unsigned long long kArithmeticOverflow = 1;
constexpr int kErrorRowShift = 8;

constexpr int kEmpty = -1;
constexpr int kBusy = -2;

// The plan: 64-bit words. Header, then 12 words per key column, then 12 words per function.
constexpr int kHeaderWords = 8;
constexpr int kColumnWords = 12;
struct Header {
  long long rows;
  long long key_count;
  long long function_count;
  long long table_mask;   // table capacity - 1 (a power of two)
  unsigned long long slots;
  unsigned long long hashes;
  unsigned long long group_count;  // device counter (unsigned long long)
  long long reserved;
};
struct Key {
  unsigned long long data;      // input column (update) / output column data (finish)
  unsigned long long validity;  // input / output validity (0: no bitmap on input)
  long long type;               // TypeId
  unsigned long long values;    // per group int64
  unsigned long long nulls;     // per group uint8 (1 = NULL)
  long long reserved[7];
};
struct Function {
  long long kind;
  unsigned long long data;      // input column (update) / output data (finish)
  unsigned long long validity;  // input validity / output validity
  long long type;               // input TypeId
  unsigned long long value;     // per group uint64 (sums: the low word of the int128)
  unsigned long long high;      // per group uint64 (sums: the high word of the int128)
  unsigned long long seen;      // per group uint32
  long long precision;          // finish: the result precision (SUM_DECIMAL)
  long long result_type;        // finish: the result TypeId
  long long zero_when_empty;    // finish: 1 when a group without input gives 0, not NULL
  long long reserved[2];
};
static_assert(sizeof(Header) == kHeaderWords * 8, "header");
static_assert(sizeof(Key) == kColumnWords * 8, "key");
static_assert(sizeof(Function) == kColumnWords * 8, "function");

__device__ __forceinline__ int Width(int type) {
  switch (type) {
    case kBoolean: case kByte: case kString: return 1;
    case kShort: return 2;
    case kInt: case kFloat: case kDate: return 4;
    default: return 8;
  }
}

__device__ __forceinline__ bool IsNull(unsigned long long validity, long long row) {
  if (validity == 0) return false;
  const unsigned char* v = reinterpret_cast<const unsigned char*>(validity);
  return ((v[row >> 3] >> (row & 7)) & 1) == 0;
}

// A fixed-width value as HostColumns.fixed reads it: sign-extended.
__device__ __forceinline__ long long ReadFixed(unsigned long long data, int type, long long row) {
  switch (Width(type)) {
    case 1: return reinterpret_cast<const signed char*>(data)[row];
    case 2: return reinterpret_cast<const short*>(data)[row];
    case 4: return reinterpret_cast<const int*>(data)[row];
    default: return reinterpret_cast<const long long*>(data)[row];
  }
}

__device__ __forceinline__ void WriteFixed(unsigned long long data, int type, long long row,
                                           long long value) {
  switch (Width(type)) {
    case 1: reinterpret_cast<unsigned char*>(data)[row] = static_cast<unsigned char>(value); break;
    case 2: reinterpret_cast<unsigned short*>(data)[row] = static_cast<unsigned short>(value); break;
    case 4: reinterpret_cast<unsigned int*>(data)[row] = static_cast<unsigned int>(value); break;
    default: reinterpret_cast<long long*>(data)[row] = value; break;
  }
}

__device__ __forceinline__ unsigned long long Mix(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Spark's order (SparkOrder): NaN largest and equal to NaN, -0.0 = 0.0. Returns <0, 0, >0.
__device__ __forceinline__ int CompareDoubles(double x, double y) {
  const bool xn = isnan(x), yn = isnan(y);
  if (xn || yn) return xn == yn ? 0 : (xn ? 1 : -1);
  return x < y ? -1 : (x > y ? 1 : 0);
}

__device__ __forceinline__ int Compare(int type, long long x, long long y) {
  if (type == kFloat) {
    return CompareDoubles(static_cast<double>(__int_as_float(static_cast<int>(x))),
                          static_cast<double>(__int_as_float(static_cast<int>(y))));
  }
  if (type == kDouble) return CompareDoubles(__longlong_as_double(x), __longlong_as_double(y));
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

// A DOUBLE holding a whole number, exactly (AggregateFunction.SUM_INT over DOUBLE: the sum buffers
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

__device__ __forceinline__ unsigned long long HashRow(const Key* keys, int key_count,
                                                      long long row) {
  unsigned long long h = 0x243f6a8885a308d3ull;
  for (int k = 0; k < key_count; ++k) {
    const Key& key = keys[k];
    const bool null = IsNull(key.validity, row);
    const unsigned long long v =
        null ? 0x9e3779b97f4a7c15ull : static_cast<unsigned long long>(
                                            ReadFixed(key.data, static_cast<int>(key.type), row));
    h = Mix(h ^ Mix(v + (null ? 0x51ed270b27ull : 0ull) + static_cast<unsigned long long>(k)));
  }
  return h;
}

__device__ __forceinline__ bool KeysEqual(const Key* keys, int key_count, long long row,
                                          int group) {
  for (int k = 0; k < key_count; ++k) {
    const Key& key = keys[k];
    const bool null = IsNull(key.validity, row);
    const unsigned char gnull =
        __ldcg(reinterpret_cast<const unsigned char*>(key.nulls) + group);
    if (null != (gnull != 0)) return false;
    if (!null) {
      const long long v = ReadFixed(key.data, static_cast<int>(key.type), row);
      if (__ldcg(reinterpret_cast<const long long*>(key.values) + group) != v) return false;
    }
  }
  return true;
}

__device__ int FindOrInsert(const Header& header, const Key* keys, long long row) {
  const int key_count = static_cast<int>(header.key_count);
  const unsigned long long h = HashRow(keys, key_count, row);
  int* slots = reinterpret_cast<int*>(header.slots);
  unsigned long long* hashes = reinterpret_cast<unsigned long long*>(header.hashes);
  unsigned long long slot = h & static_cast<unsigned long long>(header.table_mask);
  while (true) {
    const int s = *reinterpret_cast<volatile int*>(slots + slot);
    if (s == kEmpty) {
      if (atomicCAS(slots + slot, kEmpty, kBusy) == kEmpty) {
        const int group = static_cast<int>(
            atomicAdd(reinterpret_cast<unsigned long long*>(header.group_count), 1ull));
        for (int k = 0; k < key_count; ++k) {
          const Key& key = keys[k];
          const bool null = IsNull(key.validity, row);
          reinterpret_cast<long long*>(key.values)[group] =
              null ? 0 : ReadFixed(key.data, static_cast<int>(key.type), row);
          reinterpret_cast<unsigned char*>(key.nulls)[group] = null ? 1 : 0;
        }
        hashes[group] = h;
        __threadfence();
        atomicExch(slots + slot, group);
        return group;
      }
      continue;  // lost the race: look at the slot again
    }
    if (s == kBusy) continue;  // another thread is writing the key; wait for it
    if (__ldcg(hashes + s) == h && KeysEqual(keys, key_count, row, s)) return s;
    slot = (slot + 1) & static_cast<unsigned long long>(header.table_mask);
  }
}

__device__ __forceinline__ void Accumulate(const Function& f, int group, long long row) {
  unsigned long long* value = reinterpret_cast<unsigned long long*>(f.value) + group;
  const int kind = static_cast<int>(f.kind);
  if (kind == kCountRows) {
    atomicAdd(value, 1ull);
    return;
  }
  if (IsNull(f.validity, row)) return;
  const int type = static_cast<int>(f.type);
  const long long v = ReadFixed(f.data, type, row);
  unsigned int* seen = reinterpret_cast<unsigned int*>(f.seen) + group;
  if (*reinterpret_cast<volatile unsigned int*>(seen) == 0) *seen = 1;
  switch (kind) {
    case kCount:
      atomicAdd(value, 1ull);
      break;
    case kSumInt:
    case kSumDecimal: {
      const Int128 add = type == kDouble ? WholeDoubleToInt128(__longlong_as_double(v))
                                         : SignExtend(v);
      AtomicAdd128(value, reinterpret_cast<unsigned long long*>(f.high) + group, add);
      break;
    }
    case kMin:
    case kMax: {
      unsigned long long current = *reinterpret_cast<volatile unsigned long long*>(value);
      while (true) {
        const int order = Compare(type, v, static_cast<long long>(current));
        if (kind == kMin ? order >= 0 : order <= 0) break;
        const unsigned long long seen_value =
            atomicCAS(value, current, static_cast<unsigned long long>(v));
        if (seen_value == current) break;
        current = seen_value;
      }
      break;
    }
    default:
      break;
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
// SUM_INT to LONG wraps, and under ANSI reports ARITHMETIC_OVERFLOW when the exact sum leaves
// int64; a SUM_INT to DOUBLE is the exact sum rounded once (never an error); a SUM_DECIMAL that
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

extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_update(const unsigned long long* __restrict__ plan) {
  using namespace tessera::hash_aggregate;
  const Header& header = *reinterpret_cast<const Header*>(plan);
  const Key* keys = reinterpret_cast<const Key*>(plan + kHeaderWords);
  const Function* functions =
      reinterpret_cast<const Function*>(plan + kHeaderWords + kColumnWords * header.key_count);
  const long long tile = static_cast<long long>(blockIdx.x) * tessera::kTileItems;
  for (int item = 0; item < tessera::kItemsPerThread; ++item) {
    const long long row = tile + threadIdx.x + item * tessera::kBlockThreads;
    if (row >= header.rows) return;
    int group = 0;
    if (header.key_count > 0) {
      group = FindOrInsert(header, keys, row);
    }
    for (int f = 0; f < header.function_count; ++f) Accumulate(functions[f], group, row);
  }
}

extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_rehash(const unsigned long long* __restrict__ hashes, long long groups,
                              int* __restrict__ slots, long long table_mask) {
  const long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  unsigned long long slot = hashes[g] & static_cast<unsigned long long>(table_mask);
  while (atomicCAS(slots + slot, -1, static_cast<int>(g)) != -1) {
    slot = (slot + 1) & static_cast<unsigned long long>(table_mask);
  }
}

// Accumulators of groups [from, to) to their identities (value, high, seen per function).
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_init(const unsigned long long* __restrict__ plan, long long from,
                            long long to) {
  using namespace tessera::hash_aggregate;
  const Header& header = *reinterpret_cast<const Header*>(plan);
  const Function* functions =
      reinterpret_cast<const Function*>(plan + kHeaderWords + kColumnWords * header.key_count);
  const long long g = from + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= to) return;
  for (int f = 0; f < header.function_count; ++f) {
    const Function& fn = functions[f];
    const int kind = static_cast<int>(fn.kind);
    reinterpret_cast<long long*>(fn.value)[g] =
        (kind == kMin || kind == kMax) ? Identity(kind, static_cast<int>(fn.type)) : 0;
    reinterpret_cast<unsigned long long*>(fn.high)[g] = 0;
    reinterpret_cast<unsigned int*>(fn.seen)[g] = 0;
  }
}

// Groups [0, rows) into the outputs. Output validity bitmaps arrive zeroed; null_counts (one per
// output column, keys first) arrive zeroed; the error word arrives as all ones.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_finish(const unsigned long long* __restrict__ plan, int ansi,
                              unsigned long long* __restrict__ error,
                              unsigned long long* __restrict__ null_counts) {
  using namespace tessera::hash_aggregate;
  const Header& header = *reinterpret_cast<const Header*>(plan);
  const Key* keys = reinterpret_cast<const Key*>(plan + kHeaderWords);
  const Function* functions =
      reinterpret_cast<const Function*>(plan + kHeaderWords + kColumnWords * header.key_count);
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= header.rows) return;
  for (int k = 0; k < header.key_count; ++k) {
    const Key& key = keys[k];
    const bool null = reinterpret_cast<const unsigned char*>(key.nulls)[r] != 0;
    WriteFixed(key.data, static_cast<int>(key.type), r,
               null ? 0 : reinterpret_cast<const long long*>(key.values)[r]);
    if (null) {
      atomicAdd(null_counts + k, 1ull);
    } else {
      atomicOr(reinterpret_cast<unsigned int*>(key.validity) + (r >> 5), 1u << (r & 31));
    }
  }
  for (int f = 0; f < header.function_count; ++f) {
    const Function& fn = functions[f];
    bool valid;
    const long long value = FinalValue(fn, r, ansi != 0, error, &valid);
    WriteFixed(fn.data, static_cast<int>(fn.result_type), r, valid ? value : 0);
    if (valid) {
      atomicOr(reinterpret_cast<unsigned int*>(fn.validity) + (r >> 5), 1u << (r & 31));
    } else {
      atomicAdd(null_counts + header.key_count + f, 1ull);
    }
  }
}
