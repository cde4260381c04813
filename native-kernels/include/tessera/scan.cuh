// Block-wide prefix sums over a tile in the striped arrangement (tile.cuh): item ITEM of thread
// tid is the tile's element tid + ITEM * BLOCK_THREADS, and the sums follow that element order,
// so a compaction that writes element i at its exclusive prefix keeps the input order.
//
// How: each (item, warp) pair covers 32 consecutive elements, a "segment"; segment
// item * WARPS + warp starts at element (item * WARPS + warp) * 32. A warp scans each of its
// segments with shuffles, warp 0 scans the segment totals, and every thread adds its segments'
// offsets.
#pragma once

namespace tessera {

constexpr int kWarpThreads = 32;
constexpr unsigned kFullWarpMask = 0xffffffffu;

// Inclusive prefix sum across the lanes of a warp (every lane must take part).
template <typename T>
__device__ __forceinline__ T WarpInclusiveSum(T value) {
  const int lane = threadIdx.x % kWarpThreads;
#pragma unroll
  for (int offset = 1; offset < kWarpThreads; offset *= 2) {
    const T other = __shfl_up_sync(kFullWarpMask, value, offset);
    if (lane >= offset) value += other;
  }
  return value;
}

// Sum across the lanes of a warp, returned to every lane (every lane must take part).
template <typename T>
__device__ __forceinline__ T WarpAllSum(T value) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullWarpMask, value, offset);
  }
  return value;
}

// Shared memory of one block-wide scan: the segment offsets and the tile total.
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
struct BlockScanStorage {
  static_assert(BLOCK_THREADS % kWarpThreads == 0, "a block is a whole number of warps");
  static constexpr int kSegments = ITEMS_PER_THREAD * (BLOCK_THREADS / kWarpThreads);
  // Warp 0 scans the segment totals in one pass, one segment per lane.
  static_assert(kSegments <= kWarpThreads, "the segment totals must fit one warp's scan");
  T segment_offset[kSegments];
  T total;
};

namespace detail {

// Scans the segment totals (written by each segment's last lane) into offsets and the total.
// Call between two barriers: the totals are complete before, the offsets are read after.
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void ScanSegmentTotals(
    BlockScanStorage<T, BLOCK_THREADS, ITEMS_PER_THREAD>& storage) {
  using Storage = BlockScanStorage<T, BLOCK_THREADS, ITEMS_PER_THREAD>;
  if (threadIdx.x < kWarpThreads) {
    const int lane = threadIdx.x;
    const T segment_total = lane < Storage::kSegments ? storage.segment_offset[lane] : T(0);
    const T inclusive = WarpInclusiveSum(segment_total);
    if (lane < Storage::kSegments) storage.segment_offset[lane] = inclusive - segment_total;
    if (lane == kWarpThreads - 1) storage.total = inclusive;
  }
}

}  // namespace detail

// Full tile: every item takes part. Writes each item's exclusive prefix within the tile and
// returns the tile's total to every thread. Contains barriers: call from every thread.
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ T BlockExclusiveSumDirect(
    const T (&items)[ITEMS_PER_THREAD], T (&exclusive)[ITEMS_PER_THREAD],
    BlockScanStorage<T, BLOCK_THREADS, ITEMS_PER_THREAD>& storage) {
  constexpr int kWarps = BLOCK_THREADS / kWarpThreads;
  const int lane = threadIdx.x % kWarpThreads;
  const int warp = threadIdx.x / kWarpThreads;
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    const T inclusive = WarpInclusiveSum(items[item]);
    exclusive[item] = inclusive - items[item];
    if (lane == kWarpThreads - 1) storage.segment_offset[item * kWarps + warp] = inclusive;
  }
  __syncthreads();
  detail::ScanSegmentTotals(storage);
  __syncthreads();
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    exclusive[item] += storage.segment_offset[item * kWarps + warp];
  }
  const T total = storage.total;
  __syncthreads();  // storage may be reused by the caller after this returns
  return total;
}

// Partial tile: items at tile index num_items or beyond count as 0 (their exclusive prefix is
// still written: it equals the tile total).
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ T BlockExclusiveSumDirect(
    const T (&items)[ITEMS_PER_THREAD], T (&exclusive)[ITEMS_PER_THREAD],
    BlockScanStorage<T, BLOCK_THREADS, ITEMS_PER_THREAD>& storage, int num_items) {
  T guarded[ITEMS_PER_THREAD];
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    guarded[item] = threadIdx.x + item * BLOCK_THREADS < num_items ? items[item] : T(0);
  }
  return BlockExclusiveSumDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(guarded, exclusive, storage);
}

// Exclusive prefix sum of the tile's first num_items items (in tile order); returns the total.
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ T BlockExclusiveSum(
    const T (&items)[ITEMS_PER_THREAD], T (&exclusive)[ITEMS_PER_THREAD],
    BlockScanStorage<T, BLOCK_THREADS, ITEMS_PER_THREAD>& storage, int num_items) {
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
    return BlockExclusiveSumDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(items, exclusive, storage);
  }
  return BlockExclusiveSumDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(items, exclusive, storage,
                                                                     num_items);
}

}  // namespace tessera
