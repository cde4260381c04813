// The top-k (ORDER BY ... LIMIT k), driven by CudaTopK.java. A running top-k holds at most k rows;
// for each new batch its candidates are the rows held (positions 0 .. held_rows - 1, in the order
// they arrived) and then the batch's rows, and a position is also its arrival order, which breaks
// the ties of the sort keys: the order is total, and the result is the one HostTopK gives.
//   tessera_topk_sort_tiles: each block sorts 1,024 candidates (bitonic, in shared memory) and
//     keeps the first min(k, 1024) as a sorted run.
//   tessera_topk_merge: merges runs in pairs, keeping the first k of each pair: a candidate's
//     place in the merged run is its place in its own run plus the number of the other run's
//     candidates before it (a binary search; the order has no ties).
// After the last merge, run 0 lists the first min(k, candidates) positions in order, and
// CudaGather gathers their rows.
#include "tessera/config.cuh"
#include "tessera/program.cuh"

namespace tessera {
namespace top_k {

// One sort key as CudaTopK writes it: its column among the rows held and in the batch (the same
// column when nothing is held), and its order.
struct SortKeyView {
  InputColumn held;
  InputColumn batch;
  int descending;   // larger values first
  int nulls_first;  // NULLs before every value
  long long reserved;
};
constexpr int kSortKeyViewBytes = 112;
static_assert(sizeof(SortKeyView) == kSortKeyViewBytes, "CudaTopK.SORT_KEY_BYTES");
constexpr int kMaxSortKeys = 8;  // TopKSpec.MAX_KEYS

constexpr int kSortThreads = 256;
constexpr int kSortTile = 1024;  // CudaTopK.SORT_TILE

__device__ __forceinline__ ValueKind KindOf(int type) {
  switch (static_cast<TypeId>(type)) {
    case TypeId::FLOAT: return ValueKind::F32;
    case TypeId::DOUBLE: return ValueKind::F64;
    case TypeId::STRING: return ValueKind::STR;
    default: return ValueKind::INT;  // integers, booleans, dates, timestamps, decimals
  }
}

__device__ __forceinline__ void LoadCandidate(const SortKeyView& key, int held_rows, int p,
                                              Register& r) {
  if (p < held_rows) {
    LoadColumn(key.held, p, r);
  } else {
    LoadColumn(key.batch, p - held_rows, r);
  }
}

// Whether candidate p comes before candidate q: by the keys in Spark's order, then by arrival.
// -1 is a padding candidate, after every real one.
__device__ __forceinline__ bool Before(const SortKeyView* keys, int key_count, int held_rows,
                                       int p, int q) {
  if (p < 0) return false;
  if (q < 0) return true;
  for (int k = 0; k < key_count; ++k) {
    const SortKeyView& key = keys[k];
    Register a;
    Register b;
    LoadCandidate(key, held_rows, p, a);
    LoadCandidate(key, held_rows, q, b);
    int c;
    if (!a.valid || !b.valid) {
      c = a.valid == b.valid ? 0 : ((!a.valid) == (key.nulls_first != 0) ? -1 : 1);
    } else {
      c = Compare(KindOf(key.held.type), a, b);
      if (key.descending != 0) c = -c;
    }
    if (c != 0) return c < 0;
  }
  return p < q;
}

// The length of run r when each run covers `span` candidates: its first k of them.
__device__ __forceinline__ int RunLength(long long r, long long span, int candidates, int k) {
  const long long begin = r * span;
  const long long end = begin + span < candidates ? begin + span : candidates;
  const long long n = end - begin;
  return static_cast<int>(n < k ? n : k);
}

__device__ __forceinline__ void LoadKeys(const SortKeyView* __restrict__ keys, int key_count,
                                         SortKeyView* shared) {
  for (int k = threadIdx.x; k < key_count; k += blockDim.x) shared[k] = keys[k];
  __syncthreads();
}

}  // namespace top_k
}  // namespace tessera

// Block b sorts candidates [b * 1024, (b + 1) * 1024) and writes the first min(k, 1024) of them
// to runs[b * stride ..], stride = min(k, 1024). Grid: one block per 1,024 candidates.
extern "C" __global__ void __launch_bounds__(tessera::top_k::kSortThreads)
tessera_topk_sort_tiles(const tessera::top_k::SortKeyView* __restrict__ keys, int key_count,
                        int held_rows, int candidates, int k, int stride, int* __restrict__ runs) {
  using namespace tessera::top_k;
  __shared__ SortKeyView shared_keys[kMaxSortKeys];
  __shared__ int tile[kSortTile];
  LoadKeys(keys, key_count, shared_keys);
  const long long base = static_cast<long long>(blockIdx.x) * kSortTile;
  for (int i = threadIdx.x; i < kSortTile; i += kSortThreads) {
    tile[i] = base + i < candidates ? static_cast<int>(base + i) : -1;
  }
  __syncthreads();
  for (int size = 2; size <= kSortTile; size <<= 1) {
    for (int gap = size >> 1; gap > 0; gap >>= 1) {
      for (int t = threadIdx.x; t < kSortTile / 2; t += kSortThreads) {
        const int i = 2 * t - (t & (gap - 1));
        const int j = i + gap;
        const int a = tile[i];
        const int b = tile[j];
        const bool ascending = (i & size) == 0;
        const bool swap = ascending ? Before(shared_keys, key_count, held_rows, b, a)
                                    : Before(shared_keys, key_count, held_rows, a, b);
        if (swap) {
          tile[i] = b;
          tile[j] = a;
        }
      }
      __syncthreads();
    }
  }
  const int keep = RunLength(blockIdx.x, kSortTile, candidates, k);
  for (int i = threadIdx.x; i < keep; i += kSortThreads) {
    runs[static_cast<long long>(blockIdx.x) * stride + i] = tile[i];
  }
}

// One merge pass: input runs (each covering `span` candidates, run r at in[r * in_stride], of
// RunLength(r) positions) merged in pairs into out[(r / 2) * out_stride], keeping the first
// out_stride = min(k, 2 * span) of each pair. Any grid; a thread per input slot.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_topk_merge(const tessera::top_k::SortKeyView* __restrict__ keys, int key_count,
                   int held_rows, int candidates, int k, long long span, int in_stride,
                   const int* __restrict__ in, int out_stride, int* __restrict__ out) {
  using namespace tessera::top_k;
  __shared__ SortKeyView shared_keys[kMaxSortKeys];
  LoadKeys(keys, key_count, shared_keys);
  // 32-bit indexes (a 64-bit division would be a call): the slots are at most candidates + a
  // run's stride, and CudaTopK keeps candidates below 2^30.
  const int runs = static_cast<int>((candidates + span - 1) / span);
  const int slots = runs * in_stride;
  const int step = gridDim.x * blockDim.x;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < slots; e += step) {
    const int r = e / in_stride;
    const int i = e - r * in_stride;
    if (i >= RunLength(r, span, candidates, k)) continue;
    const int position = in[e];
    int place = i;
    const int other = r ^ 1;
    if (other < runs) {
      const int* run = in + static_cast<long long>(other) * in_stride;
      int lo = 0;
      int hi = RunLength(other, span, candidates, k);
      while (lo < hi) {  // the other run's candidates before this one
        const int mid = (lo + hi) >> 1;
        if (Before(shared_keys, key_count, held_rows, run[mid], position)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      place += lo;
    }
    if (place < out_stride) out[static_cast<long long>(r >> 1) * out_stride + place] = position;
  }
}
