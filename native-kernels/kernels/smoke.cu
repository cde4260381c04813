// Smoke kernel for the device diagnostic and the runtime tests: y = a * x + b over int64, and the
// sum of y accumulated into *sum (wrapping like Java long arithmetic). Exercises tile load,
// store and block reduction with a partial last tile.
#include "tessera/tile.cuh"

using tessera::kBlockThreads;
using tessera::kItemsPerThread;
using tessera::kTileItems;

extern "C" __global__ void __launch_bounds__(kBlockThreads)
tessera_smoke_axpb_sum(const long long* __restrict__ x, long long* __restrict__ y,
                       long long num_items, long long a, long long b,
                       unsigned long long* __restrict__ sum) {
  __shared__ long long warp_partials[kBlockThreads / 32];
  const long long tile_offset = static_cast<long long>(blockIdx.x) * kTileItems;
  if (tile_offset >= num_items) return;
  const long long remaining = num_items - tile_offset;
  const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;

  long long items[kItemsPerThread];
  tessera::BlockLoad<long long, kBlockThreads, kItemsPerThread>(x + tile_offset, items,
                                                                num_tile_items);
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    // Unsigned arithmetic wraps, as Java's long arithmetic does.
    items[item] = static_cast<long long>(static_cast<unsigned long long>(items[item]) *
                                             static_cast<unsigned long long>(a) +
                                         static_cast<unsigned long long>(b));
  }
  tessera::BlockStore<long long, kBlockThreads, kItemsPerThread>(y + tile_offset, items,
                                                                 num_tile_items);
  const long long tile_sum = tessera::BlockSum<long long, kBlockThreads, kItemsPerThread>(
      items, warp_partials, num_tile_items);
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(tile_sum));
}
