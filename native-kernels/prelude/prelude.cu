// The prelude of the generated kernels (gpu-operators/.../codegen): the tile primitives and the
// hard operations a generated kernel calls, compiled by nvcc to relocatable PTX at build time
// (build-prelude.sh) and concatenated with each generated kernel before the in-process PTX
// compiler turns the pair into a cubin. Every function here wraps the same device code the
// interpreter kernels use (program.cuh, scan.cuh, lookback.cuh, reduce.cuh), so the generated
// kernels and the interpreter share one definition of each primitive.
//
// The calling convention: extern "C" functions (stable names), scalar or small struct arguments
// and results, no pointer to the caller's locals (a generated kernel keeps every value in
// registers; a pointer to one would force it into a stack frame). ptxas does not inline calls
// between PTX functions, so only work done once per tile, or too involved to emit in PTX, lives
// here; per-row arithmetic is emitted by the generator itself.
//
// The block scan and the look-back between a kernel's phases are written into the kernel itself
// (codegen/TilePrimitives): values held across a call beyond the few registers the call
// convention preserves are spilled. Functions with barriers (take_tile, load_dfor_tile) must be
// called by every thread of the block, as their interpreter counterparts.
#include "tessera/config.cuh"
#include "tessera/lookback.cuh"
#include "tessera/program.cuh"

namespace {
using tessera::kBlockThreads;
using tessera::kItemsPerThread;
static_assert(kItemsPerThread == 4, "the prelude's four-item signatures");
}  // namespace

// Per thread: one value per item.
struct TesseraValues4 {
  long long item0;
  long long item1;
  long long item2;
  long long item3;
};

// lookback.cuh TakeTile: the next tile index from *counter, the same in every thread.
extern "C" __device__ long long tessera_take_tile(unsigned long long* counter) {
  __shared__ unsigned long long tile;
  return tessera::TakeTile(counter, &tile);
}

// program.cuh DforTileValues: a GPU-DFOR column's values for the thread's four rows of the tile.
extern "C" __device__ TesseraValues4 tessera_load_dfor_tile(const tessera::InputColumn* column,
                                                            long long tile_offset,
                                                            int num_tile_items) {
  long long values[kItemsPerThread];
  tessera::DforTileValues<kBlockThreads, kItemsPerThread>(*column, tile_offset, num_tile_items,
                                                          values);
  return {values[0], values[1], values[2], values[3]};
}

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

