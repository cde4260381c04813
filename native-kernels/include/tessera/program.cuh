// The device interpreter of expression programs (DESIGN.md §3): the same program for every row of
// a tile, one instruction at a time, so every thread of a warp runs the same instruction sequence.
//
// The program format is defined once, in Java: gpu-operators/.../expr/Opcode.java (instructions,
// operands and semantics), Program.java (five int32 words per instruction: op, dst, a, b, c) and
// HostInterpreter.java (the reference semantics). This file must agree with them bit for bit;
// every function below names the HostInterpreter code it mirrors. Java's arithmetic is two's
// complement and wraps, so integer arithmetic here goes through unsigned types (signed overflow
// is undefined in C++), and divisions and shifts follow Java's rules explicitly.
//
// The interpreter assumes a program that CudaFilterProject has checked (ProgramChecks.java):
// opcodes known, registers below the program's register count and written before they are read,
// immediates in their documented ranges, string operands holding strings.
#pragma once

#include "tessera/gpufor.cuh"
#include "tessera/hash.cuh"  // PROBE hashes keys as hash_join.cu builds them

namespace tessera {

// ---- the shared numbering ---------------------------------------------------------------------
// Opcode.java is the source of truth: each number here equals that Opcode's code()
// (ProgramAbiTest in gpu-operators checks every name and number).
enum class Opcode : int {
  LOAD_COLUMN = 1,
  LOAD_CONST = 2,
  LOAD_NULL = 3,
  LOAD_STRING_CONST = 4,
  MOVE = 5,
  ADD_INT = 10,
  SUB_INT = 11,
  MUL_INT = 12,
  REM_INT = 13,
  PMOD_INT = 14,
  NEG_INT = 15,
  ABS_INT = 16,
  ADD_F32 = 20,
  ADD_F64 = 21,
  SUB_F32 = 22,
  SUB_F64 = 23,
  MUL_F32 = 24,
  MUL_F64 = 25,
  DIV_F32 = 26,
  DIV_F64 = 27,
  REM_F32 = 28,
  REM_F64 = 29,
  PMOD_F32 = 30,
  PMOD_F64 = 31,
  NEG_F32 = 32,
  NEG_F64 = 33,
  ABS_F32 = 34,
  ABS_F64 = 35,
  NORMALIZE_F32 = 36,
  NORMALIZE_F64 = 37,
  RESCALE_DECIMAL = 40,
  ADD_DECIMAL = 41,
  SUB_DECIMAL = 42,
  MUL_DECIMAL = 43,
  CMP_INT = 50,
  CMP_F32 = 51,
  CMP_F64 = 52,
  CMP_STRING = 53,
  EQ_NULL_SAFE = 54,
  AND = 60,
  OR = 61,
  NOT = 62,
  IS_NULL = 63,
  IS_NOT_NULL = 64,
  SELECT = 70,
  COALESCE = 71,
  CAST_INT_TO_INT = 80,
  CAST_INT_TO_F32 = 81,
  CAST_INT_TO_F64 = 82,
  CAST_F32_TO_INT = 83,
  CAST_F64_TO_INT = 84,
  CAST_F32_TO_F64 = 85,
  CAST_F64_TO_F32 = 86,
  CAST_INT_TO_DECIMAL = 87,
  CAST_DECIMAL_TO_INT = 88,
  CAST_DECIMAL_TO_F64 = 89,
  CAST_INT_TO_BOOL = 90,
  CAST_F32_TO_BOOL = 91,
  CAST_F64_TO_BOOL = 92,
  YEAR = 100,
  MONTH = 101,
  DAY_OF_MONTH = 102,
  STARTS_WITH = 110,
  ENDS_WITH = 111,
  CONTAINS = 112,
  LENGTH = 113,
  IN_SET_INT = 120,
  PROBE = 130,
  LOAD_BUILD = 131,
};

// RowError.java is the source of truth: each number equals that RowError's code().
enum class RowError : int {
  NONE = 0,
  ARITHMETIC_OVERFLOW = 1,
  DIVIDE_BY_ZERO = 2,
  CAST_OVERFLOW = 3,
  DECIMAL_OVERFLOW = 4,
  REMAINDER_BY_ZERO = 5,
};

// Comparison.java is the source of truth: each number equals that Comparison's code().
enum class Comparison : int {
  EQ = 0,
  LT = 1,
  LE = 2,
  GT = 3,
  GE = 4,
};

// column/TypeId.java is the source of truth: each number equals that TypeId's ordinal().
enum class TypeId : int {
  BOOLEAN = 0,
  BYTE = 1,
  SHORT = 2,
  INT = 3,
  LONG = 4,
  FLOAT = 5,
  DOUBLE = 6,
  DATE = 7,
  TIMESTAMP = 8,
  DECIMAL = 9,
  STRING = 10,
};

// The kind operand c of EQ_NULL_SAFE (Opcode.java).
enum class ValueKind : int { INT = 0, F32 = 1, F64 = 2, STR = 3 };

// An error a kernel reports is (row << kErrorRowShift) | RowError code, so that one atomicMin
// keeps the smallest row; codes fit 8 bits (CudaFilterProject.ERROR_ROW_SHIFT).
constexpr int kErrorRowShift = 8;

// Program.java: registers one program may use, and words per instruction.
constexpr int kMaxRegisters = 64;
constexpr int kInstructionWords = 5;
// IN_SET_INT's c operand: the constant count in the low 16 bits, "the list held a NULL" in bit 16.
constexpr int kInSetCountMask = 0xffff;
constexpr int kInSetHasNullBit = 0x10000;
// RESCALE_DECIMAL's b operand: the source scale above bit 8, the target scale in the low 8 bits.
constexpr int kRescaleFromShift = 8;
constexpr int kRescaleToMask = 0xff;
// Decimals.POW10 covers 10^0 .. 10^18; precision 19 or more always fits an int64 (Decimals.fits).
constexpr int kMaxPow10 = 18;
constexpr int kAlwaysFitsPrecision = 19;

// Bytes of one element of a fixed-width column's data buffer (TypeId.width()).
__device__ __forceinline__ int WidthOf(TypeId type) {
  switch (type) {
    case TypeId::BOOLEAN:
    case TypeId::BYTE:
    case TypeId::STRING:
      return 1;
    case TypeId::SHORT:
      return 2;
    case TypeId::INT:
    case TypeId::FLOAT:
    case TypeId::DATE:
      return 4;
    default:
      return 8;
  }
}

// One input column as the kernel sees it (written by ProgramPlan.writeInputColumn, 48 bytes a
// column). A cached column may be GPU-FOR or GPU-DFOR encoded (gpufor.cuh): its values (a string
// column's dictionary codes) are then in words/block_starts; a dictionary-encoded string column's
// data and offsets are its dictionary's.
struct InputColumn {
  unsigned long long data;          // values, or a string column's (dictionary's) UTF-8 bytes
  unsigned long long validity;      // Arrow validity bitmap; 0 when every row is valid
  unsigned long long offsets;       // a string column's (dictionary's) int32 offsets; 0 otherwise
  int type;                         // TypeId
  int encoding;                     // Encoding.java: gpufor::kPlain, kFor or kDfor
  unsigned long long words;         // encoded: the int32 words of the blocks; 0 otherwise
  unsigned long long block_starts;  // encoded: int32 word offset of each block; 0 otherwise
};
constexpr int kInputColumnBytes = 48;
static_assert(sizeof(InputColumn) == kInputColumnBytes, "ProgramPlan.INPUT_COLUMN_BYTES");

// Words of an encoded column's references: 2 for 64-lane (8-byte) types, 1 for the others and
// for dictionary codes (GpuForLayout.lanes).
__device__ __forceinline__ int ReferenceWords(const InputColumn& column) {
  return WidthOf(static_cast<TypeId>(column.type)) == 8 ? 2 : 1;
}

// One register: Opcode.java's value, length, valid bit and error code.
struct Register {
  long long value;      // INT, F32 bits (low 32 bits), F64 bits, or STR address
  int length;           // STR byte length (0 otherwise)
  unsigned char valid;  // 0 = SQL NULL
  unsigned char error;  // RowError code
};

// One join table as programs see it (hash_join.cu builds it; CudaHashJoin writes this descriptor,
// 128 bytes, once per table into the table's memory, and ProgramPlan copies it into each plan).
// Build row r's keys and payloads are row r of the table's own copies of the build columns. The
// table is read-only while programs probe it (every task of an executor shares it).
struct JoinTableView {
  unsigned long long keys;          // const InputColumn[key_count]: the key columns
  unsigned long long payloads;      // const InputColumn[payload_count]: the payload columns
  unsigned long long slots;         // int32[slot_mask + 1]: a key's smallest build row, or -1
  unsigned long long hashes;        // uint64[rows]: each build row's key hash (NULL keys: 0)
  unsigned long long next;          // int32[rows]: the next larger build row of equal keys, or -1
  unsigned long long group_sizes;   // int32[rows]: at a key's smallest row, its rows; else 0
  long long slot_mask;              // slots - 1, a power of two minus one
  long long rows;                   // build rows, NULL-key rows included
  int key_count;
  int payload_count;
  // Optional, for one integral key with a dense range (CudaHashJoin decides at build): int32 per
  // key value in [direct_min, direct_min + direct_span), the key's smallest build row or -1. A
  // probe then reads one word instead of walking the slots (Crystal's perfect hash); 0: none.
  unsigned long long direct;
  long long direct_min;
  long long direct_span;
  // Optional, for a table without a direct map and of few distinct keys (CudaHashJoin decides at
  // build, ProbeFilter sizes it): a bitmap that generated probes read before the slots' walk; 0:
  // none. Bit i (bit i % 8 of byte i / 8, as in a validity bitmap; the build sets it in 32-bit
  // words) is set where some build key's probe filter hash (hash.cuh CombineFilterHash) >>
  // filter_shift (its high bits) is i; a clear bit: no build row has the key. At most 64 KiB, it
  // stays in L1, where the walk reads slots and keys from L2 (most probes of a filtered
  // dimension table find no row).
  unsigned long long filter;
  long long filter_shift;
  // 1 where the direct map is the identity, direct[i] == i for every i < direct_span: the build
  // rows hold the keys direct_min, direct_min + 1, ... in order, none NULL (a dimension table of
  // surrogate keys 1..N read in key order). A generated probe then takes key - direct_min as the
  // row without reading the map; 0 otherwise (CudaHashJoin decides at build).
  long long direct_identity;
  long long reserved;
};
constexpr int kJoinTableViewBytes = 128;
static_assert(sizeof(JoinTableView) == kJoinTableViewBytes, "CudaHashJoin.TABLE_VIEW_BYTES");
constexpr int kNoBuildRow = -1;

// What the interpreter reads besides the registers.
struct ProgramView {
  const int* code;
  int instruction_count;
  const long long* constants;
  const unsigned char* strings;  // the device copy of the string pool
  const InputColumn* inputs;
  bool ansi;
  const JoinTableView* tables;  // Program.tables(), by index (null when it has none)
};

// ---- Java's integer arithmetic ------------------------------------------------------------------
namespace java {

__device__ __forceinline__ long long Add(long long x, long long y) {
  return static_cast<long long>(static_cast<unsigned long long>(x) +
                                static_cast<unsigned long long>(y));
}
__device__ __forceinline__ long long Sub(long long x, long long y) {
  return static_cast<long long>(static_cast<unsigned long long>(x) -
                                static_cast<unsigned long long>(y));
}
__device__ __forceinline__ long long Mul(long long x, long long y) {
  return static_cast<long long>(static_cast<unsigned long long>(x) *
                                static_cast<unsigned long long>(y));
}
__device__ __forceinline__ long long Neg(long long x) {
  return static_cast<long long>(0ull - static_cast<unsigned long long>(x));
}
// Java's long << n and >> n use n mod 64.
__device__ __forceinline__ long long Shl(long long v, int n) {
  return static_cast<long long>(static_cast<unsigned long long>(v) << (n & 63));
}
__device__ __forceinline__ long long Sar(long long v, int n) { return v >> (n & 63); }
// Java's x / n and x % n for n != 0: truncating; MIN / -1 = MIN and MIN % -1 = 0 (C++ traps).
__device__ __forceinline__ long long Div(long long x, long long n) {
  return n == -1 ? Neg(x) : x / n;
}
__device__ __forceinline__ long long Rem(long long x, long long n) { return n == -1 ? 0 : x % n; }
// Java's (int) of a long: the low 32 bits.
__device__ __forceinline__ int LowInt(long long v) {
  return static_cast<int>(static_cast<unsigned int>(static_cast<unsigned long long>(v)));
}

// Math.addExact / subtractExact / multiplyExact: ok is false where Java throws.
struct Exact {
  long long value;
  bool ok;
};
__device__ __forceinline__ Exact AddExact(long long x, long long y) {
  const long long r = Add(x, y);
  return {r, ((x ^ r) & (y ^ r)) >= 0};
}
__device__ __forceinline__ Exact SubtractExact(long long x, long long y) {
  const long long r = Sub(x, y);
  return {r, ((x ^ y) & (x ^ r)) >= 0};
}
__device__ __forceinline__ Exact MultiplyExact(long long x, long long y) {
  const long long low = Mul(x, y);
  // The exact product fits a long iff its high 64 bits are the sign extension of the low ones.
  return {low, __mul64hi(x, y) == (low >> 63)};
}

// Java's (long) d and (int) d: NaN is 0, out-of-range values saturate, the rest truncate.
__device__ __forceinline__ long long DoubleToLong(double d) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (d != d) return 0;
  if (d >= kTwoTo63) return 0x7fffffffffffffffll;
  if (d <= -kTwoTo63) return static_cast<long long>(0x8000000000000000ull);
  return __double2ll_rz(d);
}
__device__ __forceinline__ int DoubleToInt(double d) {
  constexpr double kIntMax = 2147483647.0;
  constexpr double kIntMin = -2147483648.0;
  if (d != d) return 0;
  if (d >= kIntMax) return 0x7fffffff;
  if (d <= kIntMin) return static_cast<int>(0x80000000u);
  return __double2int_rz(d);
}

}  // namespace java

// HostInterpreter.wrap: v wrapped to a width-bit two's complement integer, sign-extended.
__device__ __forceinline__ long long Wrap(long long v, int width) {
  return width == 64 ? v : java::Sar(java::Shl(v, 64 - width), 64 - width);
}

// HostInterpreter.minimum.
__device__ __forceinline__ long long Minimum(int width) {
  return width == 64 ? static_cast<long long>(0x8000000000000000ull)
                     : java::Neg(java::Shl(1, width - 1));
}

// Decimals.POW10[n], 0 <= n <= 18.
__device__ __forceinline__ long long Pow10(int n) {
  long long p = 1;
  for (int i = 0; i < n; ++i) p *= 10;  // at most 18 steps; 10^18 fits an int64
  return p;
}

// Decimals.fits: |v| < 10^precision.
__device__ __forceinline__ bool DecimalFits(long long v, int precision) {
  if (precision >= kAlwaysFitsPrecision) return true;
  const long long bound = Pow10(precision);
  return v > -bound && v < bound;
}

// Decimals.rescale: v from scale `from` to scale `to`, HALF_UP; ok is false where Java returns
// null (overflow).
__device__ __forceinline__ java::Exact DecimalRescale(long long v, int from, int to) {
  if (to >= from) {
    const int up = to - from;
    if (up > kMaxPow10) return {0, v == 0};
    return java::MultiplyExact(v, Pow10(up));
  }
  const int down = from - to;
  if (down > kMaxPow10) return {0, true};
  const long long divisor = Pow10(down);
  long long q = v / divisor;  // divisor >= 10: neither overflow nor the -1 case
  const long long r = v % divisor;
  const long long magnitude = r < 0 ? -r : r;  // |r| < 10^18, so doubling it cannot overflow
  if (magnitude * 2 >= divisor) q += v < 0 ? -1 : 1;
  return {q, true};
}

// ---- floating point ------------------------------------------------------------------------------
// Registers hold raw bits (Float.floatToRawIntBits & 0xffffffff, Double.doubleToRawLongBits).
// Arithmetic uses the _rn intrinsics: IEEE round-to-nearest, never contracted into an FMA, with
// subnormals kept (the build does not use --use_fast_math), as Java's float and double are.
__device__ __forceinline__ float F32(const Register& r) {
  return __int_as_float(java::LowInt(r.value));
}
__device__ __forceinline__ double F64(const Register& r) { return __longlong_as_double(r.value); }
__device__ __forceinline__ long long F32Bits(float f) {
  return static_cast<long long>(static_cast<unsigned int>(__float_as_int(f)));
}
__device__ __forceinline__ long long F64Bits(double d) { return __double_as_longlong(d); }

// SparkOrder.compareDoubles (floats compare as their exact double values).
__device__ __forceinline__ int SparkCompare(double x, double y) {
  if (x < y) return -1;
  if (x > y) return 1;
  if (x == y) return 0;
  const bool x_nan = x != x;
  const bool y_nan = y != y;
  return x_nan == y_nan ? 0 : (x_nan ? 1 : -1);
}

// ---- strings (Utf8.java): unsigned bytes ------------------------------------------------------
__device__ __forceinline__ const unsigned char* Bytes(const Register& r) {
  return reinterpret_cast<const unsigned char*>(static_cast<unsigned long long>(r.value));
}

// Bytes first to first + 3 of the count (at least 1) at p, big-endian in a 32-bit word, zeros
// past count: two strings' words order as their bytes do. The loads depend on nothing but p and
// take no branch (a byte past count reads the last one, then counts as 0).
__device__ __forceinline__ unsigned int BigEndianWord(const unsigned char* p, int first,
                                                      int count) {
  unsigned int word = 0;
#pragma unroll
  for (int k = first; k < first + 4; ++k) {
    const unsigned int byte = p[k < count ? k : count - 1];
    word = (word << 8) | (k < count ? byte : 0u);
  }
  return word;
}

// UTF8String.binaryCompare: unsigned bytes, then length. Eight bytes of each string a step, their
// sixteen loads issued together, so a warp waits once a step where a loop of one byte at a time
// waited once a byte (a dimension table's filter compares each row's string with a constant:
// SSB's 'MFGR#12' was 7 round trips a row, now 1). Words of 32 bits, not one of 64: the loads in
// flight hold half the registers.
__device__ __forceinline__ int Utf8Compare(const Register& a, const Register& b) {
  const unsigned char* x = Bytes(a);
  const unsigned char* y = Bytes(b);
  const int n = a.length < b.length ? a.length : b.length;
  for (int i = 0; i < n; i += 8) {
    const int count = n - i < 8 ? n - i : 8;
    const unsigned int x_high = BigEndianWord(x + i, 0, count);
    const unsigned int x_low = BigEndianWord(x + i, 4, count);
    const unsigned int y_high = BigEndianWord(y + i, 0, count);
    const unsigned int y_low = BigEndianWord(y + i, 4, count);
    if (x_high != y_high) return x_high < y_high ? -1 : 1;
    if (x_low != y_low) return x_low < y_low ? -1 : 1;
  }
  return a.length < b.length ? -1 : (a.length == b.length ? 0 : 1);
}

// Whether the n bytes at a and at b are the same: eight of each a step, read as Utf8Compare
// reads them (a byte a step waited for each byte; CONTAINS does this at every place).
__device__ __forceinline__ bool EqualBytes(const unsigned char* a, const unsigned char* b, int n) {
  for (int i = 0; i < n; i += 8) {
    const int count = n - i < 8 ? n - i : 8;
    const bool high = BigEndianWord(a + i, 0, count) == BigEndianWord(b + i, 0, count);
    const bool low = BigEndianWord(a + i, 4, count) == BigEndianWord(b + i, 4, count);
    if (!(high && low)) return false;
  }
  return true;
}

__device__ __forceinline__ bool Utf8StartsWith(const Register& s, const Register& p) {
  return p.length <= s.length && EqualBytes(Bytes(s), Bytes(p), p.length);
}

__device__ __forceinline__ bool Utf8EndsWith(const Register& s, const Register& p) {
  return p.length <= s.length && EqualBytes(Bytes(s) + (s.length - p.length), Bytes(p), p.length);
}

__device__ __forceinline__ bool Utf8Contains(const Register& s, const Register& p) {
  for (int i = 0; i + p.length <= s.length; ++i) {
    if (EqualBytes(Bytes(s) + i, Bytes(p), p.length)) return true;
  }
  return false;
}

// Characters: bytes that do not continue a multi-byte sequence (10xxxxxx).
__device__ __forceinline__ int Utf8CharacterCount(const Register& s) {
  constexpr unsigned char kContinuationMask = 0xC0;
  constexpr unsigned char kContinuationBits = 0x80;
  const unsigned char* bytes = Bytes(s);
  int count = 0;
  for (int i = 0; i < s.length; ++i) {
    if ((bytes[i] & kContinuationMask) != kContinuationBits) ++count;
  }
  return count;
}

// ---- dates -----------------------------------------------------------------------------------
// CivilDate.fromEpochDays (H. Hinnant's civil_from_days) with Java's long arithmetic.
struct CivilDate {
  int year;
  int month;
  int day;
};

__device__ __forceinline__ CivilDate CivilFromDays(long long days) {
  using java::Add;
  using java::Mul;
  using java::Sub;
  constexpr long long kShiftToMarch0000 = 719468;  // days from 0000-03-01 to 1970-01-01
  constexpr long long kDaysPerEra = 146097;        // 400 years
  // Every step wraps as Java's long arithmetic does (it only matters for absurd day counts);
  // the divisors are positive constants, where C++ and Java division agree.
  const long long z = Add(days, kShiftToMarch0000);
  const long long era = (z >= 0 ? z : Sub(z, kDaysPerEra - 1)) / kDaysPerEra;
  const long long doe = Sub(z, Mul(era, kDaysPerEra));
  const long long yoe = Add(Sub(doe, doe / 1460), Sub(doe / 36524, doe / 146096)) / 365;
  const long long y = Add(yoe, Mul(era, 400));
  const long long doy = Sub(doe, Sub(Add(Mul(365, yoe), yoe / 4), yoe / 100));
  const long long mp = Add(Mul(5, doy), 2) / 153;
  const long long d = Add(Sub(doy, Add(Mul(153, mp), 2) / 5), 1);
  const long long m = mp < 10 ? Add(mp, 3) : Sub(mp, 9);
  return {java::LowInt(m <= 2 ? Add(y, 1) : y), java::LowInt(m), java::LowInt(d)};
}

// ---- registers --------------------------------------------------------------------------------

__device__ __forceinline__ void Set(Register& d, long long value, int error) {
  d.value = value;
  d.length = 0;
  d.valid = 1;
  d.error = static_cast<unsigned char>(error);
}

__device__ __forceinline__ void SetNull(Register& d, int error) {
  d.value = 0;
  d.length = 0;
  d.valid = 0;
  d.error = static_cast<unsigned char>(error);
}

__device__ __forceinline__ int FirstError(const Register& a, const Register& b) {
  return a.error != 0 ? a.error : b.error;
}

// HostInterpreter.raise: a carried error wins over the one the instruction raises.
__device__ __forceinline__ int Raise(int carried, RowError error) {
  return carried != 0 ? carried : static_cast<int>(error);
}

__device__ __forceinline__ bool Holds(int comparison, int order) {
  switch (static_cast<Comparison>(comparison)) {
    case Comparison::EQ: return order == 0;
    case Comparison::LT: return order < 0;
    case Comparison::LE: return order <= 0;
    case Comparison::GT: return order > 0;
    default: return order >= 0;  // GE; ProgramChecks rejects other codes
  }
}

// ---- the instructions, as HostInterpreter's helpers ------------------------------------------

// Whether row `row` of the column is NULL (its validity bit is 0).
__device__ __forceinline__ bool IsNullAt(const InputColumn& column, long long row) {
  if (column.validity == 0) return false;
  const unsigned char bits = reinterpret_cast<const unsigned char*>(column.validity)[row >> 3];
  return (bits & (1u << (row & 7))) == 0;
}

// d = an encoded column's decoded value (in LoadColumn's canonical form); for a dictionary string
// column the value is the code, and d gets the dictionary's string.
__device__ __forceinline__ void SetDecoded(const InputColumn& column, long long value,
                                           Register& d) {
  if (static_cast<TypeId>(column.type) == TypeId::STRING) {
    const int* offsets = reinterpret_cast<const int*>(column.offsets);
    const int start = offsets[value];
    const int end = offsets[value + 1];
    Set(d, java::Add(static_cast<long long>(column.data), start), 0);
    d.length = end - start;
    return;
  }
  Set(d, value, 0);
}

// ColumnReader.load. A GPU-DFOR column is loaded a tile at a time by LoadDforTile instead.
__device__ __forceinline__ void LoadColumn(const InputColumn& column, long long row, Register& d) {
  if (IsNullAt(column, row)) {
    SetNull(d, 0);
    return;
  }
  if (column.encoding == gpufor::kFor) {
    const int reference_words = ReferenceWords(column);
    const unsigned long long value =
        gpufor::ForValue(reinterpret_cast<const unsigned int*>(column.words),
                         reinterpret_cast<const int*>(column.block_starts), row, reference_words);
    SetDecoded(column, gpufor::Narrow(value, reference_words), d);
    return;
  }
  const unsigned char* data = reinterpret_cast<const unsigned char*>(column.data);
  switch (static_cast<TypeId>(column.type)) {
    case TypeId::BOOLEAN:
    case TypeId::BYTE:
      Set(d, static_cast<signed char>(data[row]), 0);
      return;
    case TypeId::SHORT:
      Set(d, reinterpret_cast<const short*>(data)[row], 0);
      return;
    case TypeId::INT:
    case TypeId::DATE:
      Set(d, reinterpret_cast<const int*>(data)[row], 0);
      return;
    case TypeId::FLOAT:
      Set(d, reinterpret_cast<const unsigned int*>(data)[row], 0);  // zero-extended bits
      return;
    case TypeId::STRING: {
      const int* offsets = reinterpret_cast<const int*>(column.offsets);
      const int start = offsets[row];
      const int end = offsets[row + 1];
      Set(d, java::Add(static_cast<long long>(column.data), start), 0);
      d.length = end - start;
      return;
    }
    default:  // LONG, TIMESTAMP, DECIMAL, DOUBLE
      Set(d, reinterpret_cast<const long long*>(data)[row], 0);
      return;
  }
}

// HostInterpreter.integerArithmetic (ADD_INT, SUB_INT, MUL_INT).
__device__ __forceinline__ void IntegerArithmetic(Opcode op, Register& d, const Register& a,
                                                  const Register& b, int width, bool ansi) {
  if (!a.valid || !b.valid) {
    SetNull(d, FirstError(a, b));
    return;
  }
  const long long x = a.value;
  const long long y = b.value;
  long long wrapped;
  bool overflow;
  if (width == 64) {
    switch (op) {
      case Opcode::ADD_INT: {
        const java::Exact r = java::AddExact(x, y);
        wrapped = r.value;
        overflow = !r.ok;
        break;
      }
      case Opcode::SUB_INT: {
        const java::Exact r = java::SubtractExact(x, y);
        wrapped = r.value;
        overflow = !r.ok;
        break;
      }
      default: {
        const java::Exact r = java::MultiplyExact(x, y);
        wrapped = r.value;
        overflow = !r.ok;
        break;
      }
    }
  } else {
    // Narrower operands fit in 32 bits, so the exact result fits in 64 (computed as Java does,
    // wrapping, should they not).
    const long long exact = op == Opcode::ADD_INT   ? java::Add(x, y)
                            : op == Opcode::SUB_INT ? java::Sub(x, y)
                                                    : java::Mul(x, y);
    wrapped = Wrap(exact, width);
    overflow = wrapped != exact;
  }
  int e = FirstError(a, b);
  if (overflow && ansi) e = Raise(e, RowError::ARITHMETIC_OVERFLOW);
  Set(d, wrapped, e);
}

// HostInterpreter.integerRemainder (REM_INT, PMOD_INT).
__device__ __forceinline__ void IntegerRemainder(Opcode op, Register& d, const Register& a,
                                                 const Register& b, int width, bool ansi) {
  if (!a.valid || !b.valid) {
    SetNull(d, FirstError(a, b));
    return;
  }
  const long long x = a.value;
  const long long n = b.value;
  const int e = FirstError(a, b);
  if (n == 0) {
    if (ansi) {
      Set(d, 0, Raise(e, RowError::REMAINDER_BY_ZERO));
    } else {
      SetNull(d, e);
    }
    return;
  }
  long long r = java::Rem(x, n);
  if (op == Opcode::PMOD_INT && r < 0) r = java::Rem(Wrap(java::Add(r, n), width), n);
  Set(d, r, e);
}

// HostInterpreter.divisionByZero: division raises DIVIDE_BY_ZERO, remainder REMAINDER_BY_ZERO.
__device__ __forceinline__ void DivisionByZero(Register& d, int e, bool ansi, bool division) {
  if (ansi) {
    Set(d, 0, Raise(e, division ? RowError::DIVIDE_BY_ZERO : RowError::REMAINDER_BY_ZERO));
  } else {
    SetNull(d, e);
  }
}

// HostInterpreter.floatArithmetic.
__device__ __forceinline__ void FloatArithmetic(Opcode op, Register& d, const Register& a,
                                                const Register& b, bool ansi) {
  if (!a.valid || !b.valid) {
    SetNull(d, FirstError(a, b));
    return;
  }
  const float x = F32(a);
  const float y = F32(b);
  const int e = FirstError(a, b);
  if ((op == Opcode::DIV_F32 || op == Opcode::REM_F32 || op == Opcode::PMOD_F32) && y == 0.0f) {
    DivisionByZero(d, e, ansi, op == Opcode::DIV_F32);
    return;
  }
  float r;
  switch (op) {
    case Opcode::ADD_F32: r = __fadd_rn(x, y); break;
    case Opcode::SUB_F32: r = __fsub_rn(x, y); break;
    case Opcode::MUL_F32: r = __fmul_rn(x, y); break;
    case Opcode::DIV_F32: r = __fdiv_rn(x, y); break;
    case Opcode::REM_F32: r = fmodf(x, y); break;  // exact, as Java's %
    default: {                                       // PMOD_F32
      const float m = fmodf(x, y);
      r = m < 0.0f ? fmodf(__fadd_rn(m, y), y) : m;
      break;
    }
  }
  Set(d, F32Bits(r), e);
}

// HostInterpreter.doubleArithmetic.
__device__ __forceinline__ void DoubleArithmetic(Opcode op, Register& d, const Register& a,
                                                 const Register& b, bool ansi) {
  if (!a.valid || !b.valid) {
    SetNull(d, FirstError(a, b));
    return;
  }
  const double x = F64(a);
  const double y = F64(b);
  const int e = FirstError(a, b);
  if ((op == Opcode::DIV_F64 || op == Opcode::REM_F64 || op == Opcode::PMOD_F64) && y == 0.0) {
    DivisionByZero(d, e, ansi, op == Opcode::DIV_F64);
    return;
  }
  double r;
  switch (op) {
    case Opcode::ADD_F64: r = __dadd_rn(x, y); break;
    case Opcode::SUB_F64: r = __dsub_rn(x, y); break;
    case Opcode::MUL_F64: r = __dmul_rn(x, y); break;
    case Opcode::DIV_F64: r = __ddiv_rn(x, y); break;
    case Opcode::REM_F64: r = fmod(x, y); break;
    default: {  // PMOD_F64
      const double m = fmod(x, y);
      r = m < 0.0 ? fmod(__dadd_rn(m, y), y) : m;
      break;
    }
  }
  Set(d, F64Bits(r), e);
}

// HostInterpreter.decimalResult.
__device__ __forceinline__ void DecimalResult(Register& d, java::Exact result, int precision,
                                              int e, bool ansi) {
  if (result.ok && DecimalFits(result.value, precision)) {
    Set(d, result.value, e);
  } else if (ansi) {
    Set(d, 0, Raise(e, RowError::DECIMAL_OVERFLOW));
  } else {
    SetNull(d, e);
  }
}

// HostInterpreter.castFractionToInt: the ANSI range check in double, exactly as Java does it.
__device__ __forceinline__ void CastFractionToInt(Register& d, double x, int width, int e,
                                                  bool ansi) {
  if (ansi) {
    const double max = width == 64 ? __ll2double_rn(0x7fffffffffffffffll)
                                   : __ll2double_rn(java::Sub(java::Shl(1, width - 1), 1));
    const double min = width == 64 ? __ll2double_rn(static_cast<long long>(0x8000000000000000ull))
                                   : __ll2double_rn(java::Neg(java::Shl(1, width - 1)));
    if (!(floor(x) <= max && ceil(x) >= min)) {
      Set(d, 0, Raise(e, RowError::CAST_OVERFLOW));
      return;
    }
  }
  const long long r = width == 64 ? java::DoubleToLong(x) : Wrap(java::DoubleToInt(x), width);
  Set(d, r, e);
}

// HostInterpreter.compare.
__device__ __forceinline__ int Compare(ValueKind kind, const Register& a, const Register& b) {
  switch (kind) {
    case ValueKind::INT: return a.value < b.value ? -1 : (a.value == b.value ? 0 : 1);
    case ValueKind::F32: return SparkCompare(F32(a), F32(b));
    case ValueKind::F64: return SparkCompare(F64(a), F64(b));
    default: return Utf8Compare(a, b);
  }
}

// HostInterpreter.logic: AND stops at a false left side, OR at a true one.
__device__ __forceinline__ void Logic(bool is_and, Register& d, const Register& a,
                                      const Register& b) {
  const long long stop = is_and ? 0 : 1;
  if (a.valid && a.value == stop) {
    Set(d, stop, a.error);
    return;
  }
  const int e = FirstError(a, b);
  if (b.valid && b.value == stop) {
    Set(d, stop, e);
  } else if (!a.valid || !b.valid) {
    SetNull(d, e);
  } else {
    Set(d, 1 - stop, e);
  }
}

// HostInterpreter.copyChosen.
__device__ __forceinline__ void CopyChosen(Register& d, const Register& chosen,
                                           int condition_error) {
  const Register c = chosen;  // d may be the chosen register itself
  d.value = c.value;
  d.length = c.length;
  d.valid = c.valid;
  d.error = static_cast<unsigned char>(condition_error != 0 ? condition_error : c.error);
}

// java.util.Arrays.binarySearch(constants, from, to, key) >= 0, step for step (so that even an
// unsorted list gives Java's answer).
__device__ __forceinline__ bool BinarySearchFound(const long long* constants, int from, int to,
                                                  long long key) {
  int low = from;
  int high = to - 1;
  while (low <= high) {
    const int mid = static_cast<int>((static_cast<unsigned int>(low) +
                                      static_cast<unsigned int>(high)) >> 1);
    const long long mid_value = constants[mid];
    if (mid_value < key) {
      low = mid + 1;
    } else if (mid_value > key) {
      high = mid - 1;
    } else {
      return true;
    }
  }
  return false;
}

// ---- join tables -------------------------------------------------------------------------------
// A key value's hash: STRING columns by their bytes, every other key type by its 64-bit register
// value (LoadColumn's canonical, sign-extended form), so that an INT key register matches a LONG
// build column holding the same number.
__device__ __forceinline__ unsigned long long JoinValueHash(const InputColumn& column,
                                                            const Register& r) {
  if (static_cast<TypeId>(column.type) == TypeId::STRING) {
    return HashBytes(Bytes(r), r.length);
  }
  return static_cast<unsigned long long>(r.value);
}

// Whether non-NULL register r equals key column `column` at build row `row` (never NULL there:
// rows with a NULL key are not in the slots).
__device__ __forceinline__ bool JoinValueEquals(const InputColumn& column, long long row,
                                                const Register& r) {
  Register stored;
  LoadColumn(column, row, stored);
  if (static_cast<TypeId>(column.type) == TypeId::STRING) {
    return stored.length == r.length && EqualBytes(Bytes(stored), Bytes(r), r.length);
  }
  return stored.value == r.value;
}

// The smallest build row whose keys equal the probe's key registers, or kNoBuildRow. KeyAt maps
// a key number k to its register (by value); *error gets the first error among the key
// registers and *any_null whether one is NULL (then there is no lookup: NULL never matches).
// Shared by PROBE and hash_join.cu's expansion, so both find rows the same way.
template <typename KeyAt>
__device__ __forceinline__ int FindBuildRow(const JoinTableView& table, const KeyAt& key_at,
                                            int* error, bool* any_null) {
  const InputColumn* keys = reinterpret_cast<const InputColumn*>(table.keys);
  *error = 0;
  *any_null = false;
  for (int k = 0; k < table.key_count; ++k) {
    const Register r = key_at(k);
    if (*error == 0) *error = r.error;
    if (!r.valid) *any_null = true;
  }
  if (*any_null) return kNoBuildRow;
  if (table.direct != 0) {
    // One key (the build only makes a direct map then), compared as the slots' walk compares it:
    // equal 64-bit register values.
    const unsigned long long offset = static_cast<unsigned long long>(key_at(0).value) -
                                      static_cast<unsigned long long>(table.direct_min);
    if (offset >= static_cast<unsigned long long>(table.direct_span)) return kNoBuildRow;
    return __ldg(reinterpret_cast<const int*>(table.direct) + offset);
  }
  unsigned long long h = kKeyTupleSeed;
  for (int k = 0; k < table.key_count; ++k) {
    h = CombineKeyHash(h, JoinValueHash(keys[k], key_at(k)), k);
  }
  const int* slots = reinterpret_cast<const int*>(table.slots);
  const unsigned long long* hashes = reinterpret_cast<const unsigned long long*>(table.hashes);
  const unsigned long long mask = static_cast<unsigned long long>(table.slot_mask);
  // The build leaves at least half the slots empty, so this walk ends at an empty slot. The
  // table was finished by earlier launches and is read-only now: plain (read-only cache) loads.
  for (unsigned long long slot = h & mask;; slot = (slot + 1) & mask) {
    const int row = __ldg(slots + slot);
    if (row == kNoBuildRow) return kNoBuildRow;
    if (__ldg(hashes + row) != h) continue;
    bool equal = true;
    for (int k = 0; k < table.key_count && equal; ++k) {
      equal = JoinValueEquals(keys[k], row, key_at(k));
    }
    if (equal) return row;
  }
}

// PROBE's keys: the registers named by constants[first .. first + key count).
struct ProgramKeys {
  const long long* constants;
  int first;
  const Register* regs;
  __device__ __forceinline__ Register operator()(int k) const {
    return regs[static_cast<int>(constants[first + k])];
  }
};

// One instruction for one row: HostInterpreter.execute. regs is that row's register file.
// Operands are copied out before dst is written, as the Java code reads them first.
__device__ __forceinline__ void ExecuteInstruction(const ProgramView& program, Opcode op, int dst,
                                                   int a, int b, int c, long long row,
                                                   Register* regs) {
  Register& d = regs[dst];
  const bool ansi = program.ansi;
  switch (op) {
    case Opcode::LOAD_COLUMN:
      LoadColumn(program.inputs[a], row, d);
      return;
    case Opcode::LOAD_CONST:
      Set(d, program.constants[a], 0);
      return;
    case Opcode::LOAD_NULL:
      SetNull(d, 0);
      return;
    case Opcode::LOAD_STRING_CONST:
      Set(d, java::Add(static_cast<long long>(reinterpret_cast<unsigned long long>(program.strings)),
                       a),
          0);
      d.length = b;
      return;
    case Opcode::MOVE:
      d = Register(regs[a]);
      return;
    case Opcode::ADD_INT:
    case Opcode::SUB_INT:
    case Opcode::MUL_INT:
      IntegerArithmetic(op, d, Register(regs[a]), Register(regs[b]), c, ansi);
      return;
    case Opcode::REM_INT:
    case Opcode::PMOD_INT:
      IntegerRemainder(op, d, Register(regs[a]), Register(regs[b]), c, ansi);
      return;
    case Opcode::NEG_INT:
    case Opcode::ABS_INT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const bool negate = op == Opcode::NEG_INT || x.value < 0;
      const long long r = negate ? Wrap(java::Neg(x.value), c) : x.value;
      int e = x.error;
      if (negate && x.value == Minimum(c) && ansi && e == 0) {
        e = static_cast<int>(RowError::ARITHMETIC_OVERFLOW);
      }
      Set(d, r, e);
      return;
    }
    case Opcode::ADD_F32:
    case Opcode::SUB_F32:
    case Opcode::MUL_F32:
    case Opcode::DIV_F32:
    case Opcode::REM_F32:
    case Opcode::PMOD_F32:
      FloatArithmetic(op, d, Register(regs[a]), Register(regs[b]), ansi);
      return;
    case Opcode::ADD_F64:
    case Opcode::SUB_F64:
    case Opcode::MUL_F64:
    case Opcode::DIV_F64:
    case Opcode::REM_F64:
    case Opcode::PMOD_F64:
      DoubleArithmetic(op, d, Register(regs[a]), Register(regs[b]), ansi);
      return;
    case Opcode::NEG_F32:
    case Opcode::ABS_F32: {
      // Java's -x flips the sign bit, and Math.abs clears it; on the bits, that is exact.
      constexpr long long kSignBit = 0x80000000ll;
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      constexpr long long kF32Bits = 0xffffffffll;  // f32Bits keeps the low 32 bits only
      const long long bits = x.value & kF32Bits;
      Set(d, op == Opcode::NEG_F32 ? (bits ^ kSignBit) : (bits & ~kSignBit), x.error);
      return;
    }
    case Opcode::NEG_F64:
    case Opcode::ABS_F64: {
      constexpr long long kSignBit = static_cast<long long>(0x8000000000000000ull);
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, op == Opcode::NEG_F64 ? (x.value ^ kSignBit) : (x.value & ~kSignBit), x.error);
      return;
    }
    case Opcode::NORMALIZE_F32: {
      // Java's Float.NaN (0x7fc00000) for every NaN, 0.0 for -0.0: the bits Spark groups by.
      constexpr long long kCanonicalNaN = 0x7fc00000ll;
      constexpr long long kF32Bits = 0xffffffffll;
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const float f = F32(x);
      Set(d, f != f ? kCanonicalNaN : (f == 0.0f ? 0ll : (x.value & kF32Bits)), x.error);
      return;
    }
    case Opcode::NORMALIZE_F64: {
      constexpr long long kCanonicalNaN = 0x7ff8000000000000ll;  // Java's Double.NaN
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const double f = F64(x);
      Set(d, f != f ? kCanonicalNaN : (f == 0.0 ? 0ll : x.value), x.error);
      return;
    }
    case Opcode::RESCALE_DECIMAL: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      DecimalResult(d, DecimalRescale(x.value, b >> kRescaleFromShift, b & kRescaleToMask), c,
                    x.error, ansi);
      return;
    }
    case Opcode::ADD_DECIMAL:
    case Opcode::SUB_DECIMAL:
    case Opcode::MUL_DECIMAL: {
      const Register x = regs[a];
      const Register y = regs[b];
      if (!x.valid || !y.valid) {
        SetNull(d, FirstError(x, y));
        return;
      }
      const java::Exact r = op == Opcode::ADD_DECIMAL   ? java::AddExact(x.value, y.value)
                            : op == Opcode::SUB_DECIMAL ? java::SubtractExact(x.value, y.value)
                                                        : java::MultiplyExact(x.value, y.value);
      DecimalResult(d, r, c, FirstError(x, y), ansi);
      return;
    }
    case Opcode::CMP_INT:
    case Opcode::CMP_F32:
    case Opcode::CMP_F64:
    case Opcode::CMP_STRING: {
      const Register x = regs[a];
      const Register y = regs[b];
      if (!x.valid || !y.valid) {
        SetNull(d, FirstError(x, y));
        return;
      }
      const ValueKind kind = op == Opcode::CMP_INT   ? ValueKind::INT
                             : op == Opcode::CMP_F32 ? ValueKind::F32
                             : op == Opcode::CMP_F64 ? ValueKind::F64
                                                     : ValueKind::STR;
      Set(d, Holds(c, Compare(kind, x, y)) ? 1 : 0, FirstError(x, y));
      return;
    }
    case Opcode::EQ_NULL_SAFE: {
      const Register x = regs[a];
      const Register y = regs[b];
      bool eq;
      if (!x.valid || !y.valid) {
        eq = !x.valid && !y.valid;
      } else {
        // Like the Java switch: 0 INT, 1 F32, 2 F64, anything else STR.
        const ValueKind kind = c == 0 ? ValueKind::INT
                               : c == 1 ? ValueKind::F32
                               : c == 2 ? ValueKind::F64
                                        : ValueKind::STR;
        eq = Compare(kind, x, y) == 0;
      }
      Set(d, eq ? 1 : 0, FirstError(x, y));
      return;
    }
    case Opcode::AND:
    case Opcode::OR:
      Logic(op == Opcode::AND, d, Register(regs[a]), Register(regs[b]));
      return;
    case Opcode::NOT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, x.value != 0 ? 0 : 1, x.error);
      return;
    }
    case Opcode::IS_NULL: {
      const Register x = regs[a];
      Set(d, x.valid ? 0 : 1, x.error);
      return;
    }
    case Opcode::IS_NOT_NULL: {
      const Register x = regs[a];
      Set(d, x.valid ? 1 : 0, x.error);
      return;
    }
    case Opcode::SELECT: {
      const Register condition = regs[a];
      const int chosen = condition.valid && condition.value != 0 ? b : c;
      CopyChosen(d, regs[chosen], condition.error);
      return;
    }
    case Opcode::COALESCE: {
      const Register first = regs[a];
      CopyChosen(d, regs[first.valid ? a : b], first.error);
      return;
    }
    case Opcode::CAST_INT_TO_INT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const long long r = Wrap(x.value, c);
      int e = x.error;
      if (r != x.value && ansi && e == 0) e = static_cast<int>(RowError::CAST_OVERFLOW);
      Set(d, r, e);
      return;
    }
    case Opcode::CAST_INT_TO_F32: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F32Bits(__ll2float_rn(x.value)), x.error);
      return;
    }
    case Opcode::CAST_INT_TO_F64: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F64Bits(__ll2double_rn(x.value)), x.error);
      return;
    }
    case Opcode::CAST_F32_TO_INT:
    case Opcode::CAST_F64_TO_INT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const double value = op == Opcode::CAST_F32_TO_INT ? static_cast<double>(F32(x)) : F64(x);
      CastFractionToInt(d, value, c, x.error, ansi);
      return;
    }
    case Opcode::CAST_F32_TO_F64: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F64Bits(static_cast<double>(F32(x))), x.error);
      return;
    }
    case Opcode::CAST_F64_TO_F32: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F32Bits(__double2float_rn(F64(x))), x.error);
      return;
    }
    case Opcode::CAST_INT_TO_DECIMAL: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      DecimalResult(d, DecimalRescale(x.value, 0, b), c, x.error, ansi);
      return;
    }
    case Opcode::CAST_DECIMAL_TO_INT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const long long truncated = x.value / Pow10(b);  // 10^b >= 1: no -1 divisor
      const long long r = Wrap(truncated, c);
      int e = x.error;
      if (r != truncated && ansi && e == 0) e = static_cast<int>(RowError::CAST_OVERFLOW);
      Set(d, r, e);
      return;
    }
    case Opcode::CAST_DECIMAL_TO_F64: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F64Bits(__ddiv_rn(__ll2double_rn(x.value), __ll2double_rn(Pow10(b)))), x.error);
      return;
    }
    case Opcode::CAST_INT_TO_BOOL: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, x.value != 0 ? 1 : 0, x.error);
      return;
    }
    case Opcode::CAST_F32_TO_BOOL: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F32(x) != 0.0f ? 1 : 0, x.error);  // NaN != 0 is true, as in Java
      return;
    }
    case Opcode::CAST_F64_TO_BOOL: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      Set(d, F64(x) != 0.0 ? 1 : 0, x.error);
      return;
    }
    case Opcode::YEAR:
    case Opcode::MONTH:
    case Opcode::DAY_OF_MONTH: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const CivilDate date = CivilFromDays(x.value);
      const int part = op == Opcode::YEAR ? date.year : op == Opcode::MONTH ? date.month : date.day;
      Set(d, part, x.error);
      return;
    }
    case Opcode::STARTS_WITH:
    case Opcode::ENDS_WITH:
    case Opcode::CONTAINS: {
      const Register s = regs[a];
      const Register p = regs[b];
      if (!s.valid || !p.valid) {
        SetNull(d, FirstError(s, p));
        return;
      }
      const bool r = op == Opcode::STARTS_WITH ? Utf8StartsWith(s, p)
                     : op == Opcode::ENDS_WITH ? Utf8EndsWith(s, p)
                                               : Utf8Contains(s, p);
      Set(d, r ? 1 : 0, FirstError(s, p));
      return;
    }
    case Opcode::LENGTH: {
      const Register s = regs[a];
      if (!s.valid) {
        SetNull(d, s.error);
        return;
      }
      Set(d, Utf8CharacterCount(s), s.error);
      return;
    }
    case Opcode::IN_SET_INT: {
      const Register x = regs[a];
      if (!x.valid) {
        SetNull(d, x.error);
        return;
      }
      const int count = c & kInSetCountMask;
      const bool list_has_null = (c & kInSetHasNullBit) != 0;
      const bool found = BinarySearchFound(program.constants, b, b + count, x.value);
      if (found || !list_has_null) {
        Set(d, found ? 1 : 0, x.error);
      } else {
        SetNull(d, x.error);
      }
      return;
    }
    case Opcode::PROBE: {
      int error;
      bool any_null;
      const int row = FindBuildRow(program.tables[a], ProgramKeys{program.constants, b, regs},
                                   &error, &any_null);
      if (row == kNoBuildRow) {
        SetNull(d, error);
      } else {
        Set(d, row, error);
      }
      return;
    }
    case Opcode::LOAD_BUILD: {
      const Register row = regs[b];
      if (!row.valid) {
        SetNull(d, row.error);
        return;
      }
      const JoinTableView& table = program.tables[a];
      if (row.value < 0 || row.value >= table.rows) {
        // ProgramChecks only lets PROBE results of this table reach b, so this is defensive: a
        // row outside the table must not read outside its columns.
        SetNull(d, row.error);
        return;
      }
      LoadColumn(reinterpret_cast<const InputColumn*>(table.payloads)[c], row.value, d);
      d.error = row.error;
      return;
    }
  }
  // ProgramChecks rejects unknown opcodes before a launch; should one get here anyway, the
  // destination becomes NULL rather than keeping a stale value.
  SetNull(d, 0);
}

// The values of a GPU-DFOR column for every row of the tile, in LoadColumn's canonical form (for
// a dictionary string column: the codes): the tile is one GPU-DFOR set (its first value before its
// first block), and row i's value is that value plus the set's deltas up to i. Each thread unpacks
// its items' deltas (item ITEM is block ITEM of the set, element threadIdx.x), and a block-wide
// inclusive scan in row order sums them: a warp scan per item, then the warps' totals through
// shared memory. Every thread of the block must call it (it synchronizes); rows past the end of
// the tile hold delta 0, and NULL rows hold a value of no meaning. The generated kernels write the
// same steps in PTX (codegen/TilePrimitives.dforTile).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void DforTileValues(const InputColumn& column, long long tile_offset,
                                               int num_tile_items,
                                               long long (&values)[ITEMS_PER_THREAD]) {
  static_assert(BLOCK_THREADS == gpufor::kBlockValues, "one thread per value of a block");
  static_assert(ITEMS_PER_THREAD == gpufor::kSetBlocks, "one tile per GPU-DFOR set");
  constexpr int kWarps = BLOCK_THREADS / 32;
  __shared__ unsigned long long warp_totals[ITEMS_PER_THREAD][kWarps];
  const unsigned int* words = reinterpret_cast<const unsigned int*>(column.words);
  const int* block_starts = reinterpret_cast<const int*>(column.block_starts);
  const int reference_words = ReferenceWords(column);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;

  unsigned long long sums[ITEMS_PER_THREAD];
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    const int index = threadIdx.x + item * BLOCK_THREADS;
    unsigned long long delta =
        index < num_tile_items
            ? gpufor::ForValue(words, block_starts, tile_offset + index, reference_words)
            : 0;
#pragma unroll
    for (int step = 1; step < 32; step <<= 1) {
      const unsigned long long before = __shfl_up_sync(0xffffffffu, delta, step);
      if (lane >= step) delta += before;
    }
    sums[item] = delta;
    if (lane == 31) warp_totals[item][warp] = delta;
  }
  __syncthreads();
  const long long first_block = tile_offset / gpufor::kBlockValues;
  unsigned long long carry = static_cast<unsigned long long>(gpufor::ReadSigned(
      words + __ldg(block_starts + first_block) - reference_words, reference_words));
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    unsigned long long before = carry;
    for (int w = 0; w < warp; ++w) before += warp_totals[item][w];
    for (int w = 0; w < kWarps; ++w) carry += warp_totals[item][w];
    values[item] = gpufor::Narrow(before + sums[item], reference_words);
  }
  __syncthreads();  // warp_totals is reused by the next GPU-DFOR load
}

// LOAD_COLUMN of a GPU-DFOR column for every row of the tile (DforTileValues), into register dst
// of each row's register file. Every thread of the block must call it.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void LoadDforTile(const InputColumn& column,
                                             Register (&regs)[ITEMS_PER_THREAD][kMaxRegisters],
                                             int dst, long long tile_offset, int num_tile_items) {
  long long values[ITEMS_PER_THREAD];
  DforTileValues<BLOCK_THREADS, ITEMS_PER_THREAD>(column, tile_offset, num_tile_items, values);
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    const int index = threadIdx.x + item * BLOCK_THREADS;
    if (index < num_tile_items) {
      Register& d = regs[item][dst];
      if (IsNullAt(column, tile_offset + index)) {
        SetNull(d, 0);
      } else {
        SetDecoded(column, values[item], d);
      }
    }
  }
}

// Runs the whole program over the ITEMS_PER_THREAD rows a thread holds in the tile (striped:
// item ITEM is tile row threadIdx.x + ITEM * BLOCK_THREADS), one register file per row. The
// instruction loop is the same for every thread (uniform across the warp); only rows past the
// end of a partial tile are skipped.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void RunProgram(const ProgramView& program,
                                           Register (&regs)[ITEMS_PER_THREAD][kMaxRegisters],
                                           long long tile_offset, int num_tile_items) {
  for (int pc = 0; pc < program.instruction_count; ++pc) {
    const int* word = program.code + pc * kInstructionWords;
    const Opcode op = static_cast<Opcode>(__ldg(word));
    const int dst = __ldg(word + 1);
    const int a = __ldg(word + 2);
    const int b = __ldg(word + 3);
    const int c = __ldg(word + 4);
    if (op == Opcode::LOAD_COLUMN && program.inputs[a].encoding == gpufor::kDfor) {
      // Uniform across the block (the instruction is), as LoadDforTile's scan needs.
      LoadDforTile<BLOCK_THREADS, ITEMS_PER_THREAD>(program.inputs[a], regs, dst, tile_offset,
                                                    num_tile_items);
      continue;
    }
#pragma unroll 1
    for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
      const int index = threadIdx.x + item * BLOCK_THREADS;
      if (index < num_tile_items) {
        ExecuteInstruction(program, op, dst, a, b, c, tile_offset + index, regs[item]);
      }
    }
  }
}

// Every register NULL with no error: HostInterpreter's fresh register file. (ProgramChecks
// rejects reading a register before writing it, so this only makes the state well defined.)
template <int ITEMS_PER_THREAD>
__device__ __forceinline__ void ResetRegisters(Register (&regs)[ITEMS_PER_THREAD][kMaxRegisters],
                                               int register_count) {
#pragma unroll 1
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    for (int r = 0; r < register_count; ++r) SetNull(regs[item][r], 0);
  }
}

}  // namespace tessera
