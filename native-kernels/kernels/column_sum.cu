// The sum of one integer column, read through the loads the query kernels use: LoadColumn for a
// plain or GPU-FOR column (one value at a time, as a LOAD_COLUMN instruction runs it) and
// LoadDforTile for a GPU-DFOR column (a tile at a time, with its block scan). It is no query
// operator: it measures those decoders (GpuForDecodeBench, the thesis's aggregation benchmark:
// load, decode, sum, store an 8-byte total) and tests them at every bit width (CudaColumnSumTest),
// driven by the test-scope CudaColumnSum.java.
//
// One tile of kTileItems rows per block, as the program kernels take them; a NULL row (validity
// bit 0) adds nothing; the block's total goes to *total by one atomic, modulo 2^64 (Java's
// wrapping long sum). The loop over a thread's items is unrolled here (RunProgram's is not, as it
// interprets), so the figures are the loads' own, without the interpreter around them.
#include "tessera/config.cuh"
#include "tessera/program.cuh"
#include "tessera/reduce.cuh"
#include "tessera/scan.cuh"  // kWarpThreads

using tessera::kBlockThreads;
using tessera::kItemsPerThread;
using tessera::kTileItems;

namespace tessera {
namespace column_sum {

// What a loaded row adds to the sum: its value (LoadColumn's canonical, sign-extended form), or
// nothing when NULL.
__device__ __forceinline__ unsigned long long Contribution(const Register& r) {
  return r.valid ? static_cast<unsigned long long>(r.value) : 0ull;
}

}  // namespace column_sum
}  // namespace tessera

// Launch with one block of kBlockThreads threads per tile of kTileItems rows; *total zeroed.
// column: one InputColumn (ProgramPlan.writeInputColumn) of a fixed-width integer type.
extern "C" __global__ void __launch_bounds__(kBlockThreads)
tessera_column_sum(const tessera::InputColumn* __restrict__ column_in, long long rows,
                   unsigned long long* __restrict__ total) {
  using namespace tessera;
  using column_sum::Contribution;
  __shared__ unsigned long long warp_partials[kBlockThreads / kWarpThreads];

  const long long tile_offset = static_cast<long long>(blockIdx.x) * kTileItems;
  if (tile_offset >= rows) return;  // the same for the whole block
  const long long remaining = rows - tile_offset;
  const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;
  const InputColumn column = *column_in;

  unsigned long long thread_sum = 0;
  if (column.encoding == gpufor::kDfor) {  // uniform: every thread takes the scan's branch
    // LoadDforTile writes register `dst` of each item's register file; with dst a constant 0 and
    // the items unrolled, the files reduce to one register each (no stack frame).
    constexpr int kDst = 0;
    Register regs[kItemsPerThread][kMaxRegisters];
    LoadDforTile<kBlockThreads, kItemsPerThread>(column, regs, kDst, tile_offset,
                                                 num_tile_items);
#pragma unroll
    for (int item = 0; item < kItemsPerThread; ++item) {
      if (threadIdx.x + item * kBlockThreads < num_tile_items) {
        thread_sum += Contribution(regs[item][kDst]);
      }
    }
  } else {
#pragma unroll
    for (int item = 0; item < kItemsPerThread; ++item) {
      const int index = threadIdx.x + item * kBlockThreads;
      if (index < num_tile_items) {
        Register r;
        LoadColumn(column, tile_offset + index, r);
        thread_sum += Contribution(r);
      }
    }
  }
  const unsigned long long block_sum =
      BlockSum<unsigned long long, kBlockThreads>(thread_sum, warp_partials);
  if (threadIdx.x == 0) atomicAdd(total, block_sum);
}
