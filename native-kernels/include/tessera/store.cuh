// Tile stores: per-thread register arrays -> global memory (striped arrangement).
#pragma once

namespace tessera {

template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockStoreDirect(T* tile_out, const T (&items)[ITEMS_PER_THREAD]) {
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    tile_out[threadIdx.x + item * BLOCK_THREADS] = items[item];
  }
}

template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockStoreDirect(T* tile_out, const T (&items)[ITEMS_PER_THREAD],
                                                 int num_items) {
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    const int index = threadIdx.x + item * BLOCK_THREADS;
    if (index < num_items) tile_out[index] = items[item];
  }
}

template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockStore(T* tile_out, const T (&items)[ITEMS_PER_THREAD],
                                           int num_items) {
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
    BlockStoreDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(tile_out, items);
  } else {
    BlockStoreDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(tile_out, items, num_items);
  }
}

}  // namespace tessera
