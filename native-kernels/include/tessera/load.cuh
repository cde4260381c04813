// Tile loads: global memory -> per-thread register arrays (striped arrangement).
#pragma once

namespace tessera {

template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockLoadDirect(const T* tile_in, T (&items)[ITEMS_PER_THREAD]) {
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    items[item] = tile_in[threadIdx.x + item * BLOCK_THREADS];
  }
}

template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockLoadDirect(const T* tile_in, T (&items)[ITEMS_PER_THREAD],
                                                int num_items) {
#pragma unroll
  for (int item = 0; item < ITEMS_PER_THREAD; ++item) {
    const int index = threadIdx.x + item * BLOCK_THREADS;
    if (index < num_items) items[item] = tile_in[index];
  }
}

// Loads the block's tile; tile_in points at the tile's first item, num_items is the number of
// valid items in this tile (a full tile except, usually, the last).
template <typename T, int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockLoad(const T* tile_in, T (&items)[ITEMS_PER_THREAD],
                                          int num_items) {
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
    BlockLoadDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(tile_in, items);
  } else {
    BlockLoadDirect<T, BLOCK_THREADS, ITEMS_PER_THREAD>(tile_in, items, num_items);
  }
}

}  // namespace tessera
