// The prelude of the generated kernels (gpu-operators/.../codegen): the per-row helpers too
// involved to write in PTX (strings, the calendar), compiled by nvcc to relocatable
// PTX at build time (build-fatbin.sh) and concatenated with each generated kernel before the
// in-process PTX compiler turns the pair into a cubin. Every function here wraps the same device
// code the interpreter kernels use (program.cuh), so the generated kernels and the interpreter
// share one definition of each.
//
// The calling convention: extern "C" functions (stable names), scalar or small struct arguments
// and results, no pointer to the caller's locals (a generated kernel keeps every value in
// registers; a pointer to one would force it into a stack frame). ptxas does not inline calls
// between PTX functions, so only work done once per tile, or too involved to emit in PTX, lives
// here; per-row arithmetic is emitted by the generator itself.
//
// Taking a tile, the block scan, the look-back and the GPU-DFOR tile decode are written into the
// kernel itself (codegen/TilePrimitives): values held across a call beyond the few registers the
// call convention preserves are spilled, so a kernel calls here only when it must.
#include "tessera/hash_aggregate.cuh"
#include "tessera/program.cuh"

// ---- per-row helpers too involved to emit in PTX: strings and the calendar ---------------------
namespace {
__device__ __forceinline__ tessera::Register StringRegister(const unsigned char* bytes,
                                                            int length) {
  tessera::Register r;
  tessera::Set(r, static_cast<long long>(reinterpret_cast<unsigned long long>(bytes)), 0);
  r.length = length;
  return r;
}
}  // namespace

// program.cuh Utf8Compare: -1, 0 or 1, unsigned bytes then length (CMP_STRING, EQ_NULL_SAFE).
extern "C" __device__ int tessera_utf8_compare(const unsigned char* a, int a_length,
                                               const unsigned char* b, int b_length) {
  return tessera::Utf8Compare(StringRegister(a, a_length), StringRegister(b, b_length));
}

// STARTS_WITH (0), ENDS_WITH (1) or CONTAINS (2) of program.cuh: 1 or 0.
extern "C" __device__ int tessera_utf8_match(int kind, const unsigned char* s, int s_length,
                                             const unsigned char* p, int p_length) {
  const tessera::Register sr = StringRegister(s, s_length);
  const tessera::Register pr = StringRegister(p, p_length);
  const bool r = kind == 0   ? tessera::Utf8StartsWith(sr, pr)
                 : kind == 1 ? tessera::Utf8EndsWith(sr, pr)
                             : tessera::Utf8Contains(sr, pr);
  return r ? 1 : 0;
}

// program.cuh Utf8CharacterCount (LENGTH).
extern "C" __device__ int tessera_utf8_length(const unsigned char* s, int length) {
  return tessera::Utf8CharacterCount(StringRegister(s, length));
}

// YEAR (0), MONTH (1) or DAY_OF_MONTH (2) of program.cuh's CivilFromDays.
extern "C" __device__ int tessera_civil_part(long long days, int part) {
  const tessera::CivilDate date = tessera::CivilFromDays(days);
  return part == 0 ? date.year : part == 1 ? date.month : date.day;
}


// ---- the hash aggregation's update, one item at a time (hash_aggregate.cuh) ---------------------
// A generated aggregate kernel computes each row's group keys and function inputs in registers
// and hands them here as scalars, one call per item with every lane of the warp calling: finding
// the group, the warp-level reduction and the per-block table are the interpreter kernel's own
// code. One call per item, with everything it needs as arguments, so that no value of the kernel
// lives across it.
namespace {
// Keys and function inputs a call can carry (AggregateUpdateGenerator declines wider ones).
constexpr int kItemKeys = 4;
constexpr int kItemInputs = 16;
// tessera_agg_item_narrow's inputs: most aggregations have few functions, and a call that carries
// fewer values leaves the kernel more registers.
constexpr int kNarrowItemInputs = 4;

// Key k: value, byte length (strings) and valid bit k of `valid`.
struct ScalarKeys {
  long long v0, v1, v2, v3;
  int l0, l1, l2, l3;
  int valid;
  __device__ __forceinline__ tessera::Register operator()(int k) const {
    const long long v = k == 0 ? v0 : k == 1 ? v1 : k == 2 ? v2 : v3;
    const int l = k == 0 ? l0 : k == 1 ? l1 : k == 2 ? l2 : l3;
    return tessera::Register{v, l, static_cast<unsigned char>((valid >> k) & 1), 0};
  }
};

// Function f's input: value and valid bit f of `valid` (INPUTS: what the call carries).
template <int INPUTS>
struct ScalarInputs {
  long long i[INPUTS];  // indexed only with constants: the loop below unrolls
  int valid;
  __device__ __forceinline__ tessera::Register operator()(int f) const {
    long long v = i[0];
#pragma unroll
    for (int k = 1; k < INPUTS; ++k) {
      if (f == k) v = i[k];
    }
    return tessera::Register{v, 0, static_cast<unsigned char>((valid >> f) & 1), 0};
  }
};

__device__ __forceinline__ tessera::hash_aggregate::LocalTable LocalOf(
    const tessera::hash_aggregate::PlanView& view, unsigned long long* local_words) {
  return tessera::hash_aggregate::LocalTable::In(
      local_words, static_cast<int>(view.header->local_entries),
      static_cast<int>(view.header->function_count));
}
}  // namespace

// The per-block table's reset; every thread calls it, then the block synchronizes.
extern "C" __device__ void tessera_agg_local_reset(const unsigned long long* plan,
                                                   unsigned long long* local_words) {
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  LocalOf(view, local_words).Reset(view.functions, static_cast<int>(view.header->function_count));
}

// The per-block table into the global accumulators; every thread calls it, after a barrier.
extern "C" __device__ void tessera_agg_local_merge(const unsigned long long* plan,
                                                   unsigned long long* local_words) {
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  tessera::hash_aggregate::MergeLocal(view, LocalOf(view, local_words));
}

// One item (hash_aggregate.cuh AggregateItem); every lane of the warp calls it.
extern "C" __device__ void tessera_agg_item(
    const unsigned long long* plan, unsigned long long* local_words,
    unsigned long long* heap_overflow, int active, int key_valid, long long k0, int l0,
    long long k1, int l1, long long k2, int l2, long long k3, int l3, int input_valid,
    long long i0, long long i1, long long i2, long long i3, long long i4, long long i5,
    long long i6, long long i7, long long i8, long long i9, long long i10, long long i11,
    long long i12, long long i13, long long i14, long long i15) {
  static_assert(kItemKeys == 4 && kItemInputs == 16, "ScalarKeys, ScalarInputs");
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  tessera::hash_aggregate::AggregateItem(
      view, active != 0, ScalarKeys{k0, k1, k2, k3, l0, l1, l2, l3, key_valid},
      ScalarInputs<kItemInputs>{
          {i0, i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13, i14, i15}, input_valid},
      LocalOf(view, local_words), heap_overflow);
}

// tessera_agg_item for aggregations of at most kNarrowItemInputs functions.
extern "C" __device__ void tessera_agg_item_narrow(
    const unsigned long long* plan, unsigned long long* local_words,
    unsigned long long* heap_overflow, int active, int key_valid, long long k0, int l0,
    long long k1, int l1, long long k2, int l2, long long k3, int l3, int input_valid,
    long long i0, long long i1, long long i2, long long i3) {
  static_assert(kNarrowItemInputs == 4, "ScalarInputs");
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  tessera::hash_aggregate::AggregateItem(
      view, active != 0, ScalarKeys{k0, k1, k2, k3, l0, l1, l2, l3, key_valid},
      ScalarInputs<kNarrowItemInputs>{{i0, i1, i2, i3}, input_valid},
      LocalOf(view, local_words), heap_overflow);
}
