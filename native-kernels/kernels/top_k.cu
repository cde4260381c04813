// The top-k (ORDER BY ... LIMIT k), driven by CudaTopK.java. A running top-k holds at most k rows,
// in order; for each new batch its candidates are the rows held (positions 0 .. held_rows - 1)
// and then the batch's rows, and a position is also the arrival order, which breaks the ties of
// the sort keys: the order is total, and the result is the one HostTopK gives.
//   tessera_topk_sort_tiles*: each block takes 1,024 candidates and keeps the first min(k, 1024)
//     as a sorted run: Crystal's bitonic top-k (thesis chapter 4): sort runs of K (k rounded up
//     to a power of two), then halve the tile until one run is left: the pairwise minima of an
//     ascending and a descending run are their first K (a bitonic sequence), which K's bitonic
//     merge sorts again. Once k rows are held, a candidate after the last of them cannot enter:
//     it is set aside before the sort, and a tile of such candidates is not sorted at all.
//   tessera_topk_merge*: merges runs in pairs, keeping the first k of each pair: a candidate's
//     place in the merged run is its place in its own run plus the number of the other run's
//     candidates before it (a binary search; the order has no ties).
// After the last merge, run 0 holds the first min(k, candidates) candidates in order, and
// CudaGather gathers their rows (tessera_topk_positions takes the positions out of the ordered
// form first).
//
// Two orders, one skeleton: PositionOrder (a candidate is its position; every comparison reads
// the keys' columns) for several keys or a string key, OrderedKeyOrder (a candidate is its one
// fixed-width key as a 64-bit word whose unsigned order is Spark's, read once) for the rest.
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

constexpr int kSortThreads = 256;  // CudaTopK.SORT_THREADS
constexpr int kSortTile = 1024;    // CudaTopK.SORT_TILE
// The halving step's outputs per thread (at most kSortTile / 2 of them).
constexpr int kHalvingItems = kSortTile / 2 / kSortThreads;
static_assert(kHalvingItems * kSortThreads * 2 == kSortTile, "the tile halves evenly");

// Positions are below 2^30 (CudaTopK.MAX_CANDIDATES). A candidate set aside (past the last
// candidate, or after the last row held once k are held) carries kSetAside: it comes after every
// other candidate, and is still distinct from the others by its position.
constexpr unsigned int kPositionMask = (1u << 30) - 1;
constexpr unsigned int kSetAside = 1u << 31;

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

// A candidate is its position; whether one comes before another is read from the key columns,
// in Spark's order, then by arrival.
struct PositionOrder {
  using Element = unsigned int;
  const SortKeyView* keys;
  int key_count;
  int held_rows;

  __device__ __forceinline__ Element Load(int p) const { return static_cast<Element>(p); }
  __device__ __forceinline__ static Element SetAside(int p) { return kSetAside | p; }
  __device__ __forceinline__ static int Position(Element e) { return static_cast<int>(e); }

  __device__ __forceinline__ bool Before(Element p, Element q) const {
    if (((p | q) & kSetAside) != 0) return p < q;
    for (int k = 0; k < key_count; ++k) {
      const SortKeyView& key = keys[k];
      Register a;
      Register b;
      LoadCandidate(key, held_rows, static_cast<int>(p), a);
      LoadCandidate(key, held_rows, static_cast<int>(q), b);
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
};

// A candidate of one fixed-width sort key: `word` is the key such that unsigned order is the
// sort's order (direction folded in; a NULL is 0 when NULLs come first, all ones when last), and
// `tie` is (rank << 30) | position, rank 1 for whichever of a NULL and a value of the same word
// comes second. Set aside: all-ones word, kSetAside | position.
struct OrderedKey {
  unsigned long long word;
  unsigned int tie;
  unsigned int unused;
};
constexpr int kOrderedKeyBytes = 16;
static_assert(sizeof(OrderedKey) == kOrderedKeyBytes, "CudaTopK.ORDERED_KEY_BYTES");

// A double as a word in Spark's order (SparkCompare): -0.0 as 0.0, every NaN as one, above
// +Infinity; negative numbers' bits reversed, positive ones' sign bit set.
__device__ __forceinline__ unsigned long long OrderedBits(double d) {
  unsigned long long bits;
  if (d != d) {
    bits = 0x7ff8000000000000ull;
  } else if (d == 0.0) {
    bits = 0;
  } else {
    bits = static_cast<unsigned long long>(__double_as_longlong(d));
  }
  return (bits >> 63) != 0 ? ~bits : bits | (1ull << 63);
}

struct OrderedKeyOrder {
  using Element = OrderedKey;
  const SortKeyView* keys;  // one
  int key_count;
  int held_rows;

  __device__ __forceinline__ Element Load(int p) const {
    const SortKeyView& key = keys[0];
    Register r;
    LoadCandidate(key, held_rows, p, r);
    const bool nulls_first = key.nulls_first != 0;
    unsigned long long word;
    unsigned int rank;
    if (!r.valid) {
      word = nulls_first ? 0ull : ~0ull;
      rank = nulls_first ? 0u : 1u;
    } else {
      switch (KindOf(key.held.type)) {
        case ValueKind::F32: word = OrderedBits(static_cast<double>(F32(r))); break;
        case ValueKind::F64: word = OrderedBits(F64(r)); break;
        default: word = static_cast<unsigned long long>(r.value) ^ (1ull << 63); break;
      }
      if (key.descending != 0) word = ~word;
      rank = nulls_first ? 1u : 0u;
    }
    return OrderedKey{word, (rank << 30) | static_cast<unsigned int>(p), 0u};
  }
  __device__ __forceinline__ static Element SetAside(int p) {
    return OrderedKey{~0ull, kSetAside | static_cast<unsigned int>(p), 0u};
  }
  __device__ __forceinline__ static int Position(const Element& e) {
    return static_cast<int>(e.tie & kPositionMask);
  }
  __device__ __forceinline__ bool Before(const Element& a, const Element& b) const {
    return a.word < b.word || (a.word == b.word && a.tie < b.tie);
  }
};

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

// One step of a bitonic network over tile[0, n): pairs (i, i + gap), ascending where i & size
// is 0, descending elsewhere.
template <typename Order>
__device__ __forceinline__ void CompareExchange(const Order& order,
                                                typename Order::Element* tile, int n, int size,
                                                int gap) {
  using Element = typename Order::Element;
  for (int t = threadIdx.x; t < n / 2; t += kSortThreads) {
    const int i = 2 * t - (t & (gap - 1));
    const int j = i + gap;
    const Element a = tile[i];
    const Element b = tile[j];
    const bool ascending = (i & size) == 0;
    if (ascending ? order.Before(b, a) : order.Before(a, b)) {
      tile[i] = b;
      tile[j] = a;
    }
  }
  __syncthreads();
}

// The first min(k, kSortTile) of the tile's kSortTile candidates, sorted, at its start (the
// bitonic top-k; the rest of the tile is left in no particular order).
template <typename Order>
__device__ __forceinline__ void TopKOfTile(const Order& order, int k,
                                           typename Order::Element* tile) {
  using Element = typename Order::Element;
  int run = 1;
  while (run < k && run < kSortTile) run <<= 1;
  // Sorted runs of `run`, ascending and descending by turns.
  for (int size = 2; size <= run; size <<= 1) {
    for (int gap = size >> 1; gap > 0; gap >>= 1) {
      CompareExchange(order, tile, kSortTile, size, gap);
    }
  }
  for (int n = kSortTile; n > run; n >>= 1) {
    // Each ascending run and the descending one after it become the pairwise minima: their
    // first `run`, a bitonic sequence, written to the first half of the tile.
    const int half = n >> 1;
    Element kept[kHalvingItems];
#pragma unroll
    for (int c = 0; c < kHalvingItems; ++c) {
      const int o = threadIdx.x + c * kSortThreads;
      if (o < half) {
        const int first = 2 * (o - (o & (run - 1))) + (o & (run - 1));
        const Element a = tile[first];
        const Element b = tile[first + run];
        kept[c] = order.Before(b, a) ? b : a;
      }
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < kHalvingItems; ++c) {
      const int o = threadIdx.x + c * kSortThreads;
      if (o < half) tile[o] = kept[c];
    }
    __syncthreads();
    // Sorted again, ascending and descending by turns (run 0 ascending).
    for (int gap = run >> 1; gap > 0; gap >>= 1) {
      CompareExchange(order, tile, half, run, gap);
    }
  }
}

// Block b takes candidates [b * 1024, (b + 1) * 1024) and writes the first min(k, 1024) of
// them to runs[b * stride ..], stride = min(k, 1024).
template <typename Order>
__device__ __forceinline__ void SortTile(const Order& order, int candidates, int k, int stride,
                                         typename Order::Element* __restrict__ runs,
                                         typename Order::Element* tile) {
  using Element = typename Order::Element;
  // Once k rows are held, the last of them is the k-th so far: a candidate after it cannot be
  // among the first k (the rows held always are).
  const bool full = order.held_rows >= k;
  Element last_held{};
  if (full) last_held = order.Load(order.held_rows - 1);
  const long long base = static_cast<long long>(blockIdx.x) * kSortTile;
  int live = 0;
  for (int i = threadIdx.x; i < kSortTile; i += kSortThreads) {
    const int p = static_cast<int>(base + i);
    Element e = Order::SetAside(p);
    if (base + i < candidates) {
      const Element candidate = order.Load(p);
      if (!full || p < order.held_rows || !order.Before(last_held, candidate)) {
        e = candidate;
        live = 1;
      }
    }
    tile[i] = e;
  }
  // A tile with every candidate set aside is sorted already (by position).
  if (__syncthreads_or(live)) TopKOfTile(order, k, tile);
  const int keep = RunLength(blockIdx.x, kSortTile, candidates, k);
  for (int i = threadIdx.x; i < keep; i += kSortThreads) {
    runs[static_cast<long long>(blockIdx.x) * stride + i] = tile[i];
  }
}

// One merge pass: input runs (each covering `span` candidates, run r at in[r * in_stride], of
// RunLength(r) elements) merged in pairs into out[(r / 2) * out_stride], keeping the first
// out_stride = min(k, 2 * span) of each pair. A thread per input slot.
template <typename Order>
__device__ __forceinline__ void MergeRuns(const Order& order, int candidates, int k,
                                          long long span, int in_stride,
                                          const typename Order::Element* __restrict__ in,
                                          int out_stride,
                                          typename Order::Element* __restrict__ out) {
  using Element = typename Order::Element;
  // 32-bit indexes (a 64-bit division would be a call): the slots are at most candidates + a
  // run's stride, and CudaTopK keeps candidates below 2^30.
  const int runs = static_cast<int>((candidates + span - 1) / span);
  const int slots = runs * in_stride;
  const int step = gridDim.x * blockDim.x;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < slots; e += step) {
    const int r = e / in_stride;
    const int i = e - r * in_stride;
    if (i >= RunLength(r, span, candidates, k)) continue;
    const Element candidate = in[e];
    int place = i;
    const int other = r ^ 1;
    if (other < runs) {
      const Element* run = in + static_cast<long long>(other) * in_stride;
      int lo = 0;
      int hi = RunLength(other, span, candidates, k);
      while (lo < hi) {  // the other run's candidates before this one
        const int mid = (lo + hi) >> 1;
        if (order.Before(run[mid], candidate)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      place += lo;
    }
    if (place < out_stride) out[static_cast<long long>(r >> 1) * out_stride + place] = candidate;
  }
}

// The kernels' bodies, one instantiation per order (the entry points below).
template <typename Order>
__device__ __forceinline__ void SortTilesKernel(const SortKeyView* __restrict__ keys,
                                                int key_count, int held_rows, int candidates,
                                                int k, int stride,
                                                typename Order::Element* __restrict__ runs) {
  __shared__ SortKeyView shared_keys[kMaxSortKeys];
  __shared__ typename Order::Element tile[kSortTile];
  LoadKeys(keys, key_count, shared_keys);
  SortTile(Order{shared_keys, key_count, held_rows}, candidates, k, stride, runs, tile);
}

template <typename Order>
__device__ __forceinline__ void MergeKernel(const SortKeyView* __restrict__ keys, int key_count,
                                            int held_rows, int candidates, int k,
                                            long long span, int in_stride,
                                            const typename Order::Element* __restrict__ in,
                                            int out_stride,
                                            typename Order::Element* __restrict__ out) {
  __shared__ SortKeyView shared_keys[kMaxSortKeys];
  LoadKeys(keys, key_count, shared_keys);
  MergeRuns(Order{shared_keys, key_count, held_rows}, candidates, k, span, in_stride, in,
            out_stride, out);
}

}  // namespace top_k
}  // namespace tessera

// The entry points: the same arguments for both orders (key_count is 1 for the ordered key).
// Sort: one block of kSortThreads per 1,024 candidates. Merge and positions: any grid.
extern "C" __global__ void __launch_bounds__(tessera::top_k::kSortThreads)
tessera_topk_sort_tiles(const tessera::top_k::SortKeyView* __restrict__ keys, int key_count,
                        int held_rows, int candidates, int k, int stride,
                        unsigned int* __restrict__ runs) {
  using namespace tessera::top_k;
  SortTilesKernel<PositionOrder>(keys, key_count, held_rows, candidates, k, stride, runs);
}

extern "C" __global__ void __launch_bounds__(tessera::top_k::kSortThreads)
tessera_topk_sort_tiles_ordered(const tessera::top_k::SortKeyView* __restrict__ keys,
                                int key_count, int held_rows, int candidates, int k, int stride,
                                tessera::top_k::OrderedKey* __restrict__ runs) {
  using namespace tessera::top_k;
  SortTilesKernel<OrderedKeyOrder>(keys, key_count, held_rows, candidates, k, stride, runs);
}

extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_topk_merge(const tessera::top_k::SortKeyView* __restrict__ keys, int key_count,
                   int held_rows, int candidates, int k, long long span, int in_stride,
                   const unsigned int* __restrict__ in, int out_stride,
                   unsigned int* __restrict__ out) {
  using namespace tessera::top_k;
  MergeKernel<PositionOrder>(keys, key_count, held_rows, candidates, k, span, in_stride, in,
                             out_stride, out);
}

extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_topk_merge_ordered(const tessera::top_k::SortKeyView* __restrict__ keys, int key_count,
                           int held_rows, int candidates, int k, long long span, int in_stride,
                           const tessera::top_k::OrderedKey* __restrict__ in, int out_stride,
                           tessera::top_k::OrderedKey* __restrict__ out) {
  using namespace tessera::top_k;
  MergeKernel<OrderedKeyOrder>(keys, key_count, held_rows, candidates, k, span, in_stride, in,
                               out_stride, out);
}

// positions[i] = the position of ordered candidate run[i], for the gather.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_topk_positions(const tessera::top_k::OrderedKey* __restrict__ run, int n,
                       int* __restrict__ positions) {
  const int step = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    positions[i] = tessera::top_k::OrderedKeyOrder::Position(run[i]);
  }
}
