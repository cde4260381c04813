// Single-pass prefix sums across the tiles of a grid: decoupled look-back (Merrill & Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).
//
// Each tile owns one 64-bit status word in a device array zeroed before the launch: a flag in
// the top 2 bits and a value in the low 62. A tile publishes its own total at once (AGGREGATE),
// then walks back over its predecessors, 32 at a time (one per lane of warp 0), adding their
// aggregates until it meets one that already knows its inclusive prefix (PREFIX); then it
// publishes its own inclusive prefix. Flag and value travel in one word, so a reader never sees a
// flag without its value, and no fence between two stores is needed.
//
// Tiles must be taken in launch order from a device counter (TakeTile), not from blockIdx: a
// block then only ever waits for tiles that blocks already running have taken, so the waiting
// cannot deadlock however the hardware schedules blocks.
#pragma once

#include <cuda/atomic>

#include "tessera/scan.cuh"

namespace tessera {

// The flag of a tile status word (its top 2 bits).
enum class TileFlag : unsigned long long {
  kInvalid = 0,    // the tile has published nothing yet (the zeroed state)
  kAggregate = 1,  // the value is the tile's own total
  kPrefix = 2,     // the value is the sum of this tile and every tile before it
};

constexpr int kTileFlagShift = 62;
// Values are sums of row counts or byte counts: they stay far below 2^62.
constexpr unsigned long long kTileValueMask = (1ull << kTileFlagShift) - 1;

__device__ __forceinline__ void PublishTileStatus(unsigned long long* word, TileFlag flag,
                                                  unsigned long long value) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> ref(*word);
  ref.store((static_cast<unsigned long long>(flag) << kTileFlagShift) | (value & kTileValueMask),
            cuda::memory_order_relaxed);
}

__device__ __forceinline__ unsigned long long ReadTileStatus(unsigned long long* word) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> ref(*word);
  return ref.load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ TileFlag FlagOf(unsigned long long word) {
  return static_cast<TileFlag>(word >> kTileFlagShift);
}

// Takes the next tile index from *counter (zeroed before the launch) and returns it to every
// thread of the block. Contains a barrier: call from every thread.
__device__ __forceinline__ long long TakeTile(unsigned long long* counter,
                                              unsigned long long* shared_tile) {
  if (threadIdx.x == 0) *shared_tile = atomicAdd(counter, 1ull);
  __syncthreads();
  return static_cast<long long>(*shared_tile);
}

// Returns, to every thread of the block, the sum of the totals of all tiles before `tile`, and
// publishes this tile's inclusive prefix. tile_total must be the same in every thread.
// shared_prefix is one word of shared memory. Contains barriers: call from every thread.
__device__ __forceinline__ unsigned long long BlockTilePrefix(unsigned long long* tile_status,
                                                              long long tile,
                                                              unsigned long long tile_total,
                                                              unsigned long long* shared_prefix) {
  if (threadIdx.x < kWarpThreads) {
    const int lane = threadIdx.x;
    unsigned long long exclusive = 0;
    if (tile == 0) {
      if (lane == 0) PublishTileStatus(&tile_status[0], TileFlag::kPrefix, tile_total);
    } else {
      if (lane == 0) PublishTileStatus(&tile_status[tile], TileFlag::kAggregate, tile_total);
      // The window's nearest predecessor; lane L looks at tile window_end - L.
      long long window_end = tile - 1;
      while (true) {
        const long long predecessor = window_end - lane;
        unsigned long long word;
        do {
          // Tiles before tile 0 do not exist: they read as an inclusive prefix of 0. Tile 0
          // always publishes PREFIX, so the walk stops at tile 0 at the latest.
          word = predecessor >= 0
                     ? ReadTileStatus(&tile_status[predecessor])
                     : static_cast<unsigned long long>(TileFlag::kPrefix) << kTileFlagShift;
        } while (__any_sync(kFullWarpMask, FlagOf(word) == TileFlag::kInvalid));
        const unsigned prefix_lanes =
            __ballot_sync(kFullWarpMask, FlagOf(word) == TileFlag::kPrefix);
        // The nearest predecessor with a PREFIX is the lowest such lane; it and the lanes nearer
        // to this tile contribute, the lanes beyond it are already inside its prefix.
        const int last_lane = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : kWarpThreads - 1;
        const unsigned long long contribution = lane <= last_lane ? (word & kTileValueMask) : 0;
        exclusive += WarpAllSum(contribution);
        if (prefix_lanes != 0) break;
        window_end -= kWarpThreads;
      }
      if (lane == 0) {
        PublishTileStatus(&tile_status[tile], TileFlag::kPrefix, exclusive + tile_total);
      }
    }
    if (lane == 0) *shared_prefix = exclusive;
  }
  __syncthreads();
  const unsigned long long prefix = *shared_prefix;
  __syncthreads();  // shared_prefix may be reused by the caller after this returns
  return prefix;
}

}  // namespace tessera
