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


// ---- the hash aggregation's per-block table (hash_aggregate.cuh) -------------------------------
// Once per block, at a generated aggregate kernel's start and end; each item's update is written
// into the kernel itself (codegen/GroupedAggregateEmitter).
namespace {
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

// tessera_agg_local_reset and _merge for a kernel whose table has the compact layout
// (hash_aggregate.cuh CompactLocalTable), or the lean one (LeanLocalTable).
namespace {
template <typename Table>
__device__ __forceinline__ Table PackedLocalOf(const tessera::hash_aggregate::PlanView& view,
                                               unsigned long long* local_words) {
  return Table::In(local_words, static_cast<int>(view.header->local_entries), view.functions,
                   static_cast<int>(view.header->function_count));
}

template <typename Table>
__device__ __forceinline__ void PackedReset(const unsigned long long* plan,
                                            unsigned long long* local_words) {
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  PackedLocalOf<Table>(view, local_words)
      .Reset(view.functions, static_cast<int>(view.header->function_count));
}

template <typename Table>
__device__ __forceinline__ void PackedMerge(const unsigned long long* plan,
                                            unsigned long long* local_words) {
  const tessera::hash_aggregate::PlanView view = tessera::hash_aggregate::PlanView::Of(plan);
  tessera::hash_aggregate::MergeLocal(view, PackedLocalOf<Table>(view, local_words));
}
}  // namespace

extern "C" __device__ void tessera_agg_compact_reset(const unsigned long long* plan,
                                                     unsigned long long* local_words) {
  PackedReset<tessera::hash_aggregate::CompactLocalTable>(plan, local_words);
}

extern "C" __device__ void tessera_agg_compact_merge(const unsigned long long* plan,
                                                     unsigned long long* local_words) {
  PackedMerge<tessera::hash_aggregate::CompactLocalTable>(plan, local_words);
}

extern "C" __device__ void tessera_agg_lean_reset(const unsigned long long* plan,
                                                  unsigned long long* local_words) {
  PackedReset<tessera::hash_aggregate::LeanLocalTable>(plan, local_words);
}

extern "C" __device__ void tessera_agg_lean_merge(const unsigned long long* plan,
                                                  unsigned long long* local_words) {
  PackedMerge<tessera::hash_aggregate::LeanLocalTable>(plan, local_words);
}
