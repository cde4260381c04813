// Block-wide reductions: warp shuffles, one partial per warp in caller-supplied shared memory,
// then a final shuffle reduction in warp 0.
#pragma once

namespace tessera {

template <typename T>
__device__ __forceinline__ T WarpSum(T value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;
}

// Sums one value per thread over the block. The result is valid in thread 0 only.
// warp_partials must hold BLOCK_THREADS / 32 values of shared memory.
template <typename T, int BLOCK_THREADS>
__device__ __forceinline__ T BlockSum(T value, T* warp_partials) {
  static_assert(BLOCK_THREADS % 32 == 0, "a block is a whole number of warps");
  constexpr int kWarps = BLOCK_THREADS / 32;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  value = WarpSum(value);
  if (lane == 0) warp_partials[warp] = value;
  __syncthreads();
  value = (threadIdx.x < kWarps) ? warp_partials[lane] : T(0);
  if (warp == 0) value = WarpSum(value);
  __syncthreads();  // warp_partials may be reused by the caller after this returns
  return value;
}

// Sums the valid items of a thread's register array, then over the block (thread 0's result).
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ T BlockSum(const T (&items)[ITEMS_PER_THREAD], T* warp_partials,
                                      int num_items) {
  T thread_sum = T(0);
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    if (threadIdx.x + item * BLOCK_THREADS < num_items) thread_sum += items[item];
  }
  return BlockSum<T, BLOCK_THREADS>(thread_sum, warp_partials);
}

}  // namespace tessera
