// Feasibility measurements for issue 14, not Tessera code: where a grouped aggregate's groups do
// not fit a block's shared memory (HashAggregateBench from 10^4 groups), is partitioning the rows
// by their key's hash first, then aggregating each partition in shared memory, faster than
// today's per-row atomics on the global table? How fast is a lean per-block table where they do
// fit, and one whose groups are sliced among blocks so that they fit? (docs/gpu-timings.md,
// 2026-11-30, ninth session; 2026-12-06, third session; 2026-12-07, second session: the
// cluster designs.)
//
// Over N rows of random int64 keys of G groups (rows 0..G-1 hold keys 0..G-1) and int64 values it
// times, with CUDA events (the best of 5), count, sum (exact int128: a low word, and a high word
// on a carry or a negative value), min and max by key:
//   global:      each row finds its group in a global open-addressing table (int32 slots, the
//                groups' keys beside) and updates its accumulators with atomics: the shape of the
//                generated kernel's global row path (the groups inserted before, as a batch's
//                first rows insert most of them);
//   lean:        a per-block table in shared memory found by key, 64-bit shared atomics, the
//                global path for keys that find no place (leanBlockTable);
//   sliced:      the lean table with the groups split among blocks: block b holds slice b % S
//                of them (S = SLICES) and reads its row group's keys, skipping the other slices'
//                rows (slicedBlockTable); with QUEUED=1 a warp's rows of its slice wait in a ring
//                in shared memory and are updated 32 at a time (queuedSlicedBlockTable); ITEMS
//                keys a thread in flight (1, 2, 4 or 8);
//   cluster:     the groups spread over the shared memory of a cluster of C blocks (Hopper's
//                distributed shared memory, C = CLUSTERS): each block reads its own rows
//                (grid-stride, every row read once) and updates the group's entry in the table of
//                the block its key's hash names, with atomics on that block's shared memory
//                (clusterTable); the cluster holds C tables' worth of groups; with EXCHANGE=1
//                each block instead writes each row of its tile into the inbox (shared memory)
//                of the block its key names, and after a cluster barrier every block updates
//                its own table from its inbox with local atomics (clusterExchange);
//   multicast:   the queued sliced table with each row group a cluster of its S blocks that
//                share each tile: block r of the cluster copies its 1/S of the tile's keys and
//                values from global memory into the shared memory of every block of the cluster
//                (a bulk copy, multicast), so L2 serves a tile once instead of S times
//                (MULTICAST=1, multicastSliced; tiles double-buffered, one cluster barrier a tile);
//   partitioned: (1) each block takes tiles of 4,096 rows, ranks them by partition (the hash's
//                top bits) in shared memory, reserves its rows in each partition with one global
//                atomic a partition and tile, and writes keys and values there, directly or
//                staged in shared memory in partition order; (2) blocks a partition aggregate
//                its rows in a shared-memory table of its groups, then merge each group once.
// Every result is compared group by group with the global one. Partitions have a fixed capacity
// here (uniform keys); a real one needs chunks or a count pass for skewed keys.
//
//   nvcc -O3 -arch=sm_90 -o partitioned_aggregate partitioned_aggregate.cu
//   [LEAN_ONLY=1] [ENTRIES=4096] [SLICES=1,2,3,4,6,8,16,32] [QUEUED=1] [ITEMS=4] \
//     [CLUSTERS=1,2,4,8,16] [EXCHANGE=1 | MULTICAST=1] [CLUSTER_ONLY=1: no other design] \
//     ./partitioned_aggregate [rows=33554432] [groups...]
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#include <cub/block/block_scan.cuh>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

typedef unsigned long long u64;
typedef long long s64;

constexpr u64 MULT = 0x9e3779b97f4a7c15ULL;
constexpr int EMPTY = -1;

struct Groups {  // the global accumulators, by group index
  s64* key; u64* count; u64* sumLow; s64* sumHigh; s64* min; s64* max;
  int* slots; u64 mask;  // slots: group index or EMPTY
};

__device__ __forceinline__ u64 hashOf(s64 key) { return (u64) key * MULT; }

__device__ int findGroup(const Groups g, s64 key) {
  u64 slot = (hashOf(key) >> 20) & g.mask;
  while (true) {
    int group = __ldcg(&g.slots[slot]);
    if (group == EMPTY) return -1;
    if (__ldcg(&g.key[group]) == key) return group;
    slot = (slot + 1) & g.mask;
  }
}

// An exact int128 add of (low, high) into the group's sum.
__device__ __forceinline__ void addSum(const Groups g, int group, u64 low, s64 high) {
  u64 old = atomicAdd(&g.sumLow[group], low);
  s64 carry = (old + low < old) ? 1 : 0;
  s64 up = high + carry;
  if (up != 0) atomicAdd((u64*) &g.sumHigh[group], (u64) up);
}

__device__ __forceinline__ void minMax(const Groups g, int group, s64 lo, s64 hi) {
  if (lo < __ldcg(&g.min[group])) atomicMin(&g.min[group], lo);
  if (hi > __ldcg(&g.max[group])) atomicMax(&g.max[group], hi);
}

__global__ void insertGroups(Groups g, const s64* keys, int groups) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  s64 key = keys[i];  // rows 0..G-1 hold keys 0..G-1
  g.key[i] = key; g.count[i] = 0; g.sumLow[i] = 0; g.sumHigh[i] = 0;
  g.min[i] = INT64_MAX; g.max[i] = INT64_MIN;
  u64 slot = (hashOf(key) >> 20) & g.mask;
  while (atomicCAS(&g.slots[slot], EMPTY, i) != EMPTY) slot = (slot + 1) & g.mask;
}

__global__ void resetAccumulators(Groups g, int groups) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  g.count[i] = 0; g.sumLow[i] = 0; g.sumHigh[i] = 0; g.min[i] = INT64_MAX; g.max[i] = INT64_MIN;
}

__device__ void addToGlobal(const Groups g, s64 key, s64 value);

__global__ void __launch_bounds__(1024) globalUpdate(Groups g, const s64* keys, const s64* values,
    long n) {
  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n;
       i += (long) gridDim.x * blockDim.x) {
    addToGlobal(g, keys[i], values[i]);
  }
}

// ---- partitioned ----
constexpr int TILE = 4096;
constexpr int SCATTER_THREADS = 1024;
constexpr int PER_THREAD = TILE / SCATTER_THREADS;

__global__ void __launch_bounds__(SCATTER_THREADS) scatter(const s64* keys, const s64* values,
    long n, int bits, long capacity, unsigned* cursor, s64* outKeys, s64* outValues) {
  extern __shared__ unsigned shared[];
  unsigned* count = shared;               // [P]: the tile's rows per partition
  unsigned* base = shared + (1 << bits);  // [P]: their first place in the partition
  int partitions = 1 << bits;
  for (long tile = blockIdx.x * (long) TILE; tile < n; tile += (long) gridDim.x * TILE) {
    for (int p = threadIdx.x; p < partitions; p += blockDim.x) count[p] = 0;
    __syncthreads();
    s64 k[PER_THREAD], v[PER_THREAD];
    unsigned part[PER_THREAD], rank[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++) {
      long i = tile + j * SCATTER_THREADS + threadIdx.x;
      if (i < n) {
        k[j] = keys[i]; v[j] = values[i];
        part[j] = (unsigned) (hashOf(k[j]) >> (64 - bits));
        rank[j] = atomicAdd(&count[part[j]], 1u);
      }
    }
    __syncthreads();
    for (int p = threadIdx.x; p < partitions; p += blockDim.x) {
      unsigned c = count[p];
      base[p] = c == 0 ? 0 : atomicAdd(&cursor[p], c);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++) {
      long i = tile + j * SCATTER_THREADS + threadIdx.x;
      if (i < n) {
        long at = part[j] * capacity + base[part[j]] + rank[j];
        outKeys[at] = k[j];
        outValues[at] = v[j];
      }
    }
    __syncthreads();
  }
}


// The same partitioning, with each tile's rows first ranked by warp (match.any: one shared atomic
// a partition and warp), then staged in shared memory in partition order, so that consecutive
// threads write consecutive places of a partition.
__global__ void __launch_bounds__(SCATTER_THREADS) scatterStaged(const s64* keys,
    const s64* values, long n, int bits, long capacity, unsigned* cursor, s64* outKeys,
    s64* outValues) {
  typedef cub::BlockScan<unsigned, SCATTER_THREADS> Scan;
  __shared__ typename Scan::TempStorage scanStorage;
  extern __shared__ u64 stagedWords[];
  s64* stagedKey = (s64*) stagedWords;
  s64* stagedValue = stagedKey + TILE;
  unsigned* stagedPart = (unsigned*) (stagedValue + TILE);
  int partitions = 1 << bits;
  unsigned* count = stagedPart + TILE;
  unsigned* start = count + partitions;
  unsigned* base = start + partitions;
  unsigned lane = threadIdx.x & 31;
  unsigned below = (1u << lane) - 1;
  for (long tile = blockIdx.x * (long) TILE; tile < n; tile += (long) gridDim.x * TILE) {
    for (int p = threadIdx.x; p < partitions; p += blockDim.x) count[p] = 0;
    __syncthreads();
    s64 k[PER_THREAD], v[PER_THREAD];
    unsigned part[PER_THREAD], rank[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++) {
      long i = tile + j * SCATTER_THREADS + threadIdx.x;
      bool in = i < n;
      k[j] = in ? keys[i] : 0; v[j] = in ? values[i] : 0;
      part[j] = in ? (unsigned) (hashOf(k[j]) >> (64 - bits)) : 0xffffffffu;
      unsigned peers = __match_any_sync(0xffffffffu, part[j]);
      int leader = __ffs(peers) - 1;
      unsigned first = 0;
      if (in && lane == (unsigned) leader) first = atomicAdd(&count[part[j]], __popc(peers));
      first = __shfl_sync(0xffffffffu, first, leader);
      rank[j] = first + __popc(peers & below);
    }
    __syncthreads();
    unsigned c = threadIdx.x < partitions ? count[threadIdx.x] : 0, s;
    Scan(scanStorage).ExclusiveSum(c, s);
    if (threadIdx.x < partitions) {
      start[threadIdx.x] = s;
      base[threadIdx.x] = c == 0 ? 0 : atomicAdd(&cursor[threadIdx.x], c);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++) {
      if (part[j] != 0xffffffffu) {
        unsigned at = start[part[j]] + rank[j];
        stagedKey[at] = k[j]; stagedValue[at] = v[j]; stagedPart[at] = part[j];
      }
    }
    __syncthreads();
    int tileRows = (int) min((long) TILE, n - tile);
    for (int t = threadIdx.x; t < tileRows; t += SCATTER_THREADS) {
      unsigned p = stagedPart[t];
      long at = p * capacity + base[p] + (t - start[p]);
      outKeys[at] = stagedKey[t];
      outValues[at] = stagedValue[t];
    }
    __syncthreads();
  }
}

// A block's table in shared memory, found by key: `entries` (a power of two) of a key (FREE when
// empty), count, int128 sum (low, high), min and max, as six arrays.
struct LocalTable {
  static constexpr s64 FREE = INT64_MIN;
  s64* key; u64* count; u64* sumLow; s64* sumHigh; s64* min; s64* max;
  unsigned mask;

  __device__ LocalTable(u64* words, int entries) {
    key = (s64*) words;
    count = (u64*) (key + entries);
    sumLow = count + entries;
    sumHigh = (s64*) (sumLow + entries);
    min = sumHigh + entries;
    max = min + entries;
    mask = entries - 1;
  }

  // Every entry empty (the block's threads; a barrier follows).
  __device__ void reset() {
    for (unsigned e = threadIdx.x; e <= mask; e += blockDim.x) {
      key[e] = FREE; count[e] = 0; sumLow[e] = 0; sumHigh[e] = 0;
      min[e] = INT64_MAX; max[e] = INT64_MIN;
    }
  }

  // The entry holding `k`, claimed if need be, within `probes` slots from `first`; -1 if none.
  __device__ int find(s64 k, unsigned first, int probes) {
    unsigned e = first & mask;
    for (int p = 0; p < probes; p++, e = (e + 1) & mask) {
      s64 held = key[e];
      if (held == k) return (int) e;
      if (held == FREE) {
        s64 before = (s64) atomicCAS((u64*) &key[e], (u64) FREE, (u64) k);
        if (before == FREE || before == k) return (int) e;
      }
    }
    return -1;
  }

  __device__ void add(int e, s64 value) {
    atomicAdd(&count[e], 1ULL);
    u64 old = atomicAdd(&sumLow[e], (u64) value);
    s64 up = (value < 0 ? -1 : 0) + ((old + (u64) value < old) ? 1 : 0);
    if (up != 0) atomicAdd((u64*) &sumHigh[e], (u64) up);
    if (value < min[e]) atomicMin(&min[e], value);
    if (value > max[e]) atomicMax(&max[e], value);
  }

  // Each held group into the global accumulators, once (after a barrier).
  __device__ void mergeInto(const Groups g) {
    for (unsigned e = threadIdx.x; e <= mask; e += blockDim.x) {
      if (key[e] == FREE) continue;
      int group = findGroup(g, key[e]);
      atomicAdd(&g.count[group], count[e]);
      addSum(g, group, sumLow[e], sumHigh[e]);
      minMax(g, group, min[e], max[e]);
    }
  }
};

// A row's update of the global accumulators.
__device__ void addToGlobal(const Groups g, s64 key, s64 value) {
  int group = findGroup(g, key);
  atomicAdd(&g.count[group], 1ULL);
  addSum(g, group, (u64) value, value < 0 ? -1 : 0);
  minMax(g, group, value, value);
}

constexpr int AGG_THREADS = 512;

constexpr int LOCAL_ENTRY_BYTES = 48;

// One block a partition (blocksPerPartition of them, each a share of its rows): a shared table of
// `entries` (a power of two), found by key, then each held group merged once into the global one.
__global__ void __launch_bounds__(AGG_THREADS) aggregatePartitions(Groups g, const s64* keys,
    const s64* values, const unsigned* cursor, long capacity, int entries,
    int blocksPerPartition) {
  extern __shared__ u64 sharedWords[];
  LocalTable table(sharedWords, entries);
  table.reset();
  __syncthreads();
  int partition = blockIdx.x / blocksPerPartition;
  int share = blockIdx.x % blocksPerPartition;
  long rows = cursor[partition];
  long from = rows * share / blocksPerPartition, to = rows * (share + 1) / blocksPerPartition;
  const s64* k = keys + partition * capacity;
  const s64* v = values + partition * capacity;
  for (long i = from + threadIdx.x; i < to; i += blockDim.x) {
    int e = table.find(k[i], (unsigned) (hashOf(k[i]) >> 32), entries);
    if (e < 0) __trap();  // sized so that a partition's groups fit
    table.add(e, v[i]);
  }
  __syncthreads();
  table.mergeInto(g);
}

// The reference for a lean per-block table: each block (1,024 threads, one a multiprocessor with
// 4,096 entries) holds the groups its rows meet first in shared memory, found by key, updated with
// 64-bit shared atomics; a row whose key finds no place within 16 slots updates the global
// accumulators. At the end each block merges its entries into the global ones once. Rows are
// taken grid-stride, one a thread at a time.
constexpr int LEAN_THREADS = 1024;

__global__ void __launch_bounds__(LEAN_THREADS) leanBlockTable(Groups g, const s64* keys,
    const s64* values, long n, int entries) {
  extern __shared__ u64 leanWords[];
  LocalTable table(leanWords, entries);
  table.reset();
  __syncthreads();
  for (long i = blockIdx.x * (long) blockDim.x + threadIdx.x; i < n;
       i += (long) gridDim.x * blockDim.x) {
    s64 key = keys[i], value = values[i];
    int e = table.find(key, (unsigned) (hashOf(key) >> 20), 16);
    if (e < 0) {  // no place within 16 slots: the global accumulators
      addToGlobal(g, key, value);
    } else {
      table.add(e, value);
    }
  }
  __syncthreads();
  table.mergeInto(g);
}

// The lean per-block table with the groups sliced among blocks: block b holds the groups of slice
// b % slices (the hash's bits 40 and up, modulo `slices`) and reads the rows of its row group,
// b / slices, grid-stride among the row groups; the rows of other slices it skips after reading
// their key (not their value). So each block's table holds 1/slices of the groups, and the
// `slices` blocks of a row group read the same keys at about the same time, from L2 after the
// first. slices = 1 is leanBlockTable.
template <int ITEMS>
__global__ void __launch_bounds__(LEAN_THREADS) slicedBlockTable(Groups g, const s64* keys,
    const s64* values, long n, int entries, int slices) {
  extern __shared__ u64 slicedWords[];
  LocalTable table(slicedWords, entries);
  table.reset();
  __syncthreads();
  unsigned slice = blockIdx.x % slices;
  long rowGroup = blockIdx.x / slices, rowGroups = gridDim.x / slices;
  long step = rowGroups * blockDim.x * ITEMS;
  for (long base = rowGroup * blockDim.x * ITEMS + threadIdx.x; base < n; base += step) {
    s64 key[ITEMS], value[ITEMS];
    bool mine[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {  // ITEMS keys in flight at once
      long i = base + (long) j * blockDim.x;
      key[j] = i < n ? keys[i] : 0;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      long i = base + (long) j * blockDim.x;
      mine[j] = i < n && (unsigned) (hashOf(key[j]) >> 40) % slices == slice;
      if (mine[j]) value[j] = values[i];
    }
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      if (!mine[j]) continue;
      int e = table.find(key[j], (unsigned) (hashOf(key[j]) >> 20), 16);
      if (e < 0) {  // no place within 16 slots: the global accumulators
        addToGlobal(g, key[j], value[j]);
      } else {
        table.add(e, value[j]);
      }
    }
  }
  __syncthreads();
  table.mergeInto(g);
}

// slicedBlockTable with each warp's rows of its slice queued in shared memory (a ring of 64 keys
// and values a warp) and updated 32 at a time, so that a warp's update runs with every lane busy
// however few of its rows are of its slice (without the queue a warp runs the whole update for
// every item where any lane has a row of its slice, whatever `slices` is).
constexpr int QUEUE = 64;

// A warp's ring of QUEUE rows of its slice in shared memory (keys, then values), updated into
// the block's table 32 at a time: entries head..tail-1 (mod QUEUE).
struct WarpQueue {
  s64* key;
  s64* value;
  unsigned head = 0, tail = 0;
  unsigned lane = threadIdx.x % 32;
  unsigned below = (1u << (threadIdx.x % 32)) - 1;

  __device__ WarpQueue(s64* keys, s64* values) : key(keys), value(values) {}

  // The rows of the lanes where `mine`, queued; then, once 32 wait, a lane's each updated.
  __device__ void push(bool mine, s64 k, s64 v, LocalTable& table, const Groups& g) {
    unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (mine) {
      unsigned at = (tail + __popc(ballot & below)) % QUEUE;
      key[at] = k;
      value[at] = v;
    }
    tail += __popc(ballot);
    __syncwarp();
    if (tail - head >= 32) {
      update(table, g);
      head += 32;
      __syncwarp();
    }
  }

  // The queue's last rows (fewer than 32), one a lane.
  __device__ void flush(LocalTable& table, const Groups& g) {
    if (lane < tail - head) update(table, g);
  }

  // The lane's row of the queue's first 32 into the table (or the global accumulators).
  __device__ void update(LocalTable& table, const Groups& g) {
    unsigned at = (head + lane) % QUEUE;
    s64 k = key[at], v = value[at];
    int e = table.find(k, (unsigned) (hashOf(k) >> 20), 16);
    if (e < 0) addToGlobal(g, k, v); else table.add(e, v);
  }
};

template <int ITEMS>
__global__ void __launch_bounds__(LEAN_THREADS) queuedSlicedBlockTable(Groups g, const s64* keys,
    const s64* values, long n, int entries, int slices) {
  extern __shared__ u64 queuedWords[];
  LocalTable table(queuedWords, entries);
  int warp = threadIdx.x / 32;
  WarpQueue queue((s64*) (queuedWords + 6 * entries) + warp * QUEUE,
                  (s64*) (queuedWords + 6 * entries) + (blockDim.x / 32) * QUEUE + warp * QUEUE);
  table.reset();
  __syncthreads();
  unsigned slice = blockIdx.x % slices;
  long rowGroup = blockIdx.x / slices, rowGroups = gridDim.x / slices;
  long step = rowGroups * blockDim.x * ITEMS;
  for (long base = rowGroup * blockDim.x * ITEMS + threadIdx.x; base - threadIdx.x < n;
       base += step) {
    s64 key[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      long i = base + (long) j * blockDim.x;
      key[j] = i < n ? keys[i] : 0;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      long i = base + (long) j * blockDim.x;
      bool mine = i < n && (unsigned) (hashOf(key[j]) >> 40) % slices == slice;
      queue.push(mine, key[j], mine ? values[i] : 0, table, g);  // the value read if mine
    }
  }
  queue.flush(table, g);
  __syncthreads();
  table.mergeInto(g);
}

// The groups spread over a cluster's blocks: block r of a cluster holds, in its shared memory,
// the groups whose key's hash (bits 40 up, modulo the cluster's blocks) is r; a row is read once,
// by whichever block takes its tile, which finds its group in the table of the block its key
// names (distributed shared memory: the same atomics, on another multiprocessor's shared memory
// over the cluster's network). A key that finds no place within 16 slots updates the global
// accumulators. Each block merges its own table at the end, after every block of its cluster
// has stopped writing into it.
template <int ITEMS>
__global__ void __launch_bounds__(LEAN_THREADS) clusterTable(Groups g, const s64* keys,
    const s64* values, long n, int entries, int /* inboxRows: clusterExchange's */) {
  extern __shared__ u64 clusterWords[];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned ranks = cluster.num_blocks();
  LocalTable own(clusterWords, entries);
  own.reset();
  cluster.sync();  // every table of the cluster empty before any block writes into it
  long step = (long) gridDim.x * blockDim.x * ITEMS;
  for (long base = blockIdx.x * (long) blockDim.x * ITEMS + threadIdx.x; base < n;
       base += step) {
    s64 key[ITEMS], value[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {  // ITEMS rows in flight at once
      long i = base + (long) j * blockDim.x;
      key[j] = i < n ? keys[i] : 0;
      value[j] = i < n ? values[i] : 0;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      long i = base + (long) j * blockDim.x;
      if (i >= n) continue;
      u64 h = hashOf(key[j]);
      unsigned owner = (unsigned) (h >> 40) % ranks;
      LocalTable table((u64*) cluster.map_shared_rank(clusterWords, owner), entries);
      int e = table.find(key[j], (unsigned) (h >> 20), 16);
      if (e < 0) {
        addToGlobal(g, key[j], value[j]);
      } else {
        table.add(e, value[j]);
      }
    }
  }
  cluster.sync();  // no block writes into this one's table any more
  own.mergeInto(g);
}

// The cluster's groups as in clusterTable, the rows exchanged instead of the updates: in each
// round every block of the cluster reads a tile of its own and writes each row (key and value)
// into the inbox of the block its key names (one remote atomic a warp and destination for the
// places, then remote stores); after a cluster barrier each block updates its own table from its
// inbox with local shared atomics, and after a second one the inboxes are empty again. A row
// that finds its inbox full (more than `inboxRows` in a round) updates the global accumulators.
template <int ITEMS>
__global__ void __launch_bounds__(LEAN_THREADS) clusterExchange(Groups g, const s64* keys,
    const s64* values, long n, int entries, int inboxRows) {
  extern __shared__ u64 exchangeWords[];
  __shared__ unsigned inboxCount;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned ranks = cluster.num_blocks();
  unsigned rank = cluster.block_rank();
  LocalTable own(exchangeWords, entries);
  s64* inboxKey = (s64*) (exchangeWords + 6 * entries);
  s64* inboxValue = inboxKey + inboxRows;
  own.reset();
  if (threadIdx.x == 0) inboxCount = 0;
  cluster.sync();
  unsigned lane = threadIdx.x % 32, below = (1u << lane) - 1;
  long tileRows = (long) blockDim.x * ITEMS;
  long step = (long) gridDim.x * tileRows;
  // The cluster's rounds: every block of it takes the same number (each has two barriers).
  for (long round = (long) (blockIdx.x - rank) * tileRows; round < n; round += step) {
    long base = round + rank * tileRows;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      long i = base + (long) j * blockDim.x + threadIdx.x;
      bool in = i < n;
      s64 key = in ? keys[i] : 0, value = in ? values[i] : 0;
      unsigned owner = in ? (unsigned) (hashOf(key) >> 40) % ranks : 0xffffffffu;
      unsigned peers = __match_any_sync(0xffffffffu, owner);
      int leader = __ffs(peers) - 1;
      unsigned first = 0;
      if (in && lane == (unsigned) leader) {
        first = atomicAdd(cluster.map_shared_rank(&inboxCount, owner), __popc(peers));
      }
      first = __shfl_sync(0xffffffffu, first, leader);
      if (in) {
        unsigned at = first + __popc(peers & below);
        if (at < (unsigned) inboxRows) {
          *cluster.map_shared_rank(inboxKey + at, owner) = key;
          *cluster.map_shared_rank(inboxValue + at, owner) = value;
        } else {
          addToGlobal(g, key, value);
        }
      }
    }
    cluster.sync();  // every row of the round in its inbox
    unsigned count = min(inboxCount, (unsigned) inboxRows);
    for (unsigned r = threadIdx.x; r < count; r += blockDim.x) {
      s64 k = inboxKey[r], v = inboxValue[r];
      int e = own.find(k, (unsigned) (hashOf(k) >> 20), 16);
      if (e < 0) addToGlobal(g, k, v); else own.add(e, v);
    }
    __syncthreads();
    if (threadIdx.x == 0) inboxCount = 0;
    cluster.sync();  // the inboxes empty before the next round writes into them
  }
  own.mergeInto(g);
}

// ---- multicast ----
__device__ __forceinline__ unsigned sharedAddress(const void* p) {
  return (unsigned) __cvta_generic_to_shared(p);
}

__device__ __forceinline__ void barrierInit(u64* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sharedAddress(bar)) : "memory");
}

__device__ __forceinline__ void barrierExpect(u64* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(sharedAddress(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrierWait(u64* bar, unsigned parity) {
  asm volatile("{\n .reg .pred done;\n wait:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               " @!done bra wait;\n}" :: "r"(sharedAddress(bar)), "r"(parity) : "memory");
}

// `bytes` (a multiple of 16) from `src` to `dst` in the shared memory of every block of `mask`,
// each block's barrier at `bar` told of them.
__device__ __forceinline__ void multicast(void* dst, const void* src, unsigned bytes, u64* bar,
    unsigned short mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1], %2, [%3], %4;"
               :: "r"(sharedAddress(dst)), "l"(src), "r"(bytes), "r"(sharedAddress(bar)),
                  "h"(mask) : "memory");
}

template <int ITEMS>
__global__ void __launch_bounds__(LEAN_THREADS) multicastSliced(Groups g, const s64* keys,
    const s64* values, long n, int entries, int /* inboxRows */) {
  extern __shared__ __align__(128) u64 multicastWords[];
  __shared__ __align__(8) u64 full[2];
  constexpr int TILE_ROWS = LEAN_THREADS * ITEMS;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned slices = cluster.num_blocks();
  unsigned slice = cluster.block_rank();
  LocalTable table(multicastWords, entries);
  s64* tileKeys = (s64*) (multicastWords + 6 * entries);  // [2][TILE_ROWS]
  s64* tileValues = tileKeys + 2 * TILE_ROWS;             // [2][TILE_ROWS]
  int warp = threadIdx.x / 32;
  WarpQueue queue(tileValues + 2 * TILE_ROWS + warp * QUEUE,
                  tileValues + 2 * TILE_ROWS + (blockDim.x / 32) * QUEUE + warp * QUEUE);
  table.reset();
  if (threadIdx.x == 0) {
    barrierInit(&full[0]);
    barrierInit(&full[1]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster.sync();
  unsigned short mask = (unsigned short) ((1u << slices) - 1);
  long rowGroup = blockIdx.x / slices, rowGroups = gridDim.x / slices;
  long step = rowGroups * TILE_ROWS;
  // Tile t's rows (at most TILE_ROWS) into buffer t % 2 of every block: this block's share.
  auto issue = [&](long tileStart, int buffer) {
    long rows = min((long) TILE_ROWS, n - tileStart);
    if (rows <= 0) return;
    if (threadIdx.x == 0) {
      barrierExpect(&full[buffer], (unsigned) rows * 16);
      long share = (rows / slices + 1) & ~1L;  // an even count: 16-byte pieces
      long from = min(rows, share * slice), to = min(rows, share * (slice + 1));
      if (slice == slices - 1) to = rows;
      if (to > from) {
        multicast(tileKeys + buffer * TILE_ROWS + from, keys + tileStart + from,
                  (unsigned) (to - from) * 8, &full[buffer], mask);
        multicast(tileValues + buffer * TILE_ROWS + from, values + tileStart + from,
                  (unsigned) (to - from) * 8, &full[buffer], mask);
      }
    }
  };
  unsigned phase[2] = {0, 0};
  long first = rowGroup * TILE_ROWS;
  issue(first, 0);
  int buffer = 0;
  for (long tileStart = first; tileStart < n; tileStart += step, buffer ^= 1) {
    cluster.sync();  // every block done with the tile before, whose buffer the next one takes
    issue(tileStart + step, buffer ^ 1);
    barrierWait(&full[buffer], phase[buffer]);
    phase[buffer] ^= 1;
    const s64* k = tileKeys + buffer * TILE_ROWS;
    const s64* v = tileValues + buffer * TILE_ROWS;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      int r = j * blockDim.x + threadIdx.x;
      long i = tileStart + r;
      s64 key = i < n ? k[r] : 0;
      bool mine = i < n && (unsigned) (hashOf(key) >> 40) % slices == slice;
      queue.push(mine, key, mine ? v[r] : 0, table, g);
    }
  }
  queue.flush(table, g);
  cluster.sync();  // no copy into this block's buffers is in flight
  table.mergeInto(g);
}

static u64 splitmix(u64& x) {
  u64 z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct HostGroups { std::vector<u64> count, sumLow; std::vector<s64> sumHigh, min, max; };

// The groups whose accumulators differ.
static long countWrong(const HostGroups& got, const HostGroups& expected, long groups) {
  long wrong = 0;
  for (long i = 0; i < groups; i++) {
    if (got.count[i] != expected.count[i] || got.sumLow[i] != expected.sumLow[i]
        || got.sumHigh[i] != expected.sumHigh[i] || got.min[i] != expected.min[i]
        || got.max[i] != expected.max[i]) wrong++;
  }
  return wrong;
}

static HostGroups download(const Groups& g, int groups) {
  HostGroups h;
  h.count.resize(groups); h.sumLow.resize(groups); h.sumHigh.resize(groups);
  h.min.resize(groups); h.max.resize(groups);
  CHECK(cudaMemcpy(h.count.data(), g.count, groups * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(h.sumLow.data(), g.sumLow, groups * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(h.sumHigh.data(), g.sumHigh, groups * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(h.min.data(), g.min, groups * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(h.max.data(), g.max, groups * 8, cudaMemcpyDeviceToHost));
  return h;
}


// The environment's integer `name`, or `fallback`.
static int intSetting(const char* name, int fallback) {
  return getenv(name) ? atoi(getenv(name)) : fallback;
}

// The environment's comma-separated integers `name` ("1,2,4"), or `fallback`.
static std::vector<int> listSetting(const char* name, std::vector<int> fallback) {
  if (!getenv(name)) return fallback;
  std::vector<int> values;
  for (char* s = getenv(name); *s; ) {
    values.push_back((int) strtol(s, &s, 10));
    if (*s) s++;
  }
  return values;
}

// The best of 5 launches' times (ms, CUDA events), the accumulators reset before each.
template <typename Launch>
static float bestOf5(Groups g, long groups, cudaEvent_t start, cudaEvent_t stop, Launch launch) {
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    resetAccumulators<<<(groups + 255) / 256, 256>>>(g, (int) groups);
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop)); CHECK(cudaEventSynchronize(stop));
    float ms; CHECK(cudaEventElapsedTime(&ms, start, stop)); if (ms < best) best = ms;
  }
  CHECK(cudaGetLastError());
  return best;
}

// "equal" where every group's accumulators are the global path's, else "WRONG".
static const char* verdict(const Groups& g, long groups, const HostGroups& expected) {
  return countWrong(download(g, (int) groups), expected, groups) == 0 ? "equal" : "WRONG";
}

static void runLean(Groups g, const s64* keys, const s64* values, long n, long groups,
    const HostGroups& expected, cudaEvent_t start, cudaEvent_t stop) {
  int entries = intSetting("ENTRIES", 4096);  // 48 B each
  int bytes = entries * LOCAL_ENTRY_BYTES;
  CHECK(cudaFuncSetAttribute(leanBlockTable, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  int perSm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, leanBlockTable, LEAN_THREADS,
      bytes));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float best = bestOf5(g, groups, start, stop, [&] {
    leanBlockTable<<<sms * perSm, LEAN_THREADS, bytes>>>(g, keys, values, n, entries);
  });
  printf("  lean per-block table (%d blocks a multiprocessor, %d entries a block): %.1f us (%s)\n",
         perSm, entries, best * 1000, verdict(g, groups, expected));
}

// slicedBlockTable at each slice count of SLICES (default 1,2,3,4,6,8,16,32).
static void runSliced(Groups g, const s64* keys, const s64* values, long n, long groups,
    const HostGroups& expected, cudaEvent_t start, cudaEvent_t stop) {
  int entries = intSetting("ENTRIES", 4096);  // 48 B each
  int bytes = entries * LOCAL_ENTRY_BYTES;
  int items = intSetting("ITEMS", 4);
  bool queued = getenv("QUEUED") != nullptr;
  auto kernel = queued
      ? (items == 8 ? queuedSlicedBlockTable<8> : items == 4 ? queuedSlicedBlockTable<4>
          : items == 2 ? queuedSlicedBlockTable<2> : queuedSlicedBlockTable<1>)
      : (items == 8 ? slicedBlockTable<8> : items == 4 ? slicedBlockTable<4>
          : items == 2 ? slicedBlockTable<2> : slicedBlockTable<1>);
  if (queued) bytes += (LEAN_THREADS / 32) * QUEUE * 16;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  int perSm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, LEAN_THREADS, bytes));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int slices : listSetting("SLICES", {1, 2, 3, 4, 6, 8, 16, 32})) {
    int blocks = sms * perSm / slices * slices;  // whole row groups
    float best = bestOf5(g, groups, start, stop, [&] {
      kernel<<<blocks, LEAN_THREADS, bytes>>>(g, keys, values, n, entries, slices);
    });
    printf("  %ssliced per-block table, %2d slices, %d items (%d blocks, %d entries a block):"
           " %.1f us (%s)\n", queued ? "queued " : "", slices, items, blocks, entries,
           best * 1000, verdict(g, groups, expected));
  }
}

// clusterTable at each cluster size of CLUSTERS (default 1,2,4,8,16), as many clusters as the
// device holds at once.
static void runCluster(Groups g, const s64* keys, const s64* values, long n, long groups,
    const HostGroups& expected, cudaEvent_t start, cudaEvent_t stop) {
  int entries = intSetting("ENTRIES", 4096);  // 48 B each
  int bytes = entries * LOCAL_ENTRY_BYTES;
  int items = intSetting("ITEMS", 4);
  bool exchange = getenv("EXCHANGE") != nullptr;
  bool multicasts = getenv("MULTICAST") != nullptr;
  int inboxRows = 2 * LEAN_THREADS * items;
  if (exchange) bytes += inboxRows * 16;
  if (multicasts) bytes += 2 * LEAN_THREADS * items * 16 + (LEAN_THREADS / 32) * QUEUE * 16;
  auto kernel = multicasts
      ? (items == 4 ? multicastSliced<4> : items == 2 ? multicastSliced<2> : multicastSliced<1>)
      : exchange
      ? (items == 4 ? clusterExchange<4> : items == 2 ? clusterExchange<2> : clusterExchange<1>)
      : (items == 4 ? clusterTable<4> : items == 2 ? clusterTable<2> : clusterTable<1>);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int size : listSetting("CLUSTERS", {1, 2, 4, 8, 16})) {
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = size;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.blockDim = dim3(LEAN_THREADS);
    config.dynamicSmemBytes = bytes;
    config.attrs = &attribute;
    config.numAttrs = 1;
    config.gridDim = dim3(size);
    int clusters = 0;
    cudaError_t asked = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
    if (asked != cudaSuccess || clusters == 0) {
      printf("  cluster table, %2d blocks a cluster: none fit (%s)\n", size,
             cudaGetErrorString(asked));
      cudaGetLastError();
      continue;
    }
    config.gridDim = dim3(clusters * size);
    float best = bestOf5(g, groups, start, stop, [&] {
      CHECK(cudaLaunchKernelEx(&config, kernel, g, keys, values, n, entries, inboxRows));
    });
    const char* design = exchange ? "exchange" : multicasts ? "multicast sliced" : "table";
    printf("  cluster %s, %2d blocks a cluster, %d items (%d clusters of %d SMs, %d entries a"
           " block): %.1f us (%s)\n", design, size, items, clusters, sms, entries,
           best * 1000, verdict(g, groups, expected));
  }
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 33554432L;
  std::vector<long> groupCounts;
  for (int a = 2; a < argc; a++) groupCounts.push_back(atol(argv[a]));
  if (groupCounts.empty()) groupCounts = {10000, 100000, 1000000};
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  printf("%s, %d SMs; %ld rows; floor (16 B a row at 4.06 TB/s) %.1f us\n", prop.name, sms, n,
         n * 16.0 / 4.06e6);

  s64 *keys, *values, *outKeys, *outValues;
  CHECK(cudaMalloc(&keys, n * 8)); CHECK(cudaMalloc(&values, n * 8));
  std::vector<s64> hk(n), hv(n);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop));
  const int REPS = 5;

  for (long groups : groupCounts) {
    u64 seed = 4268 + groups;
    for (long i = 0; i < n; i++) {
      hk[i] = i < groups ? i : (s64) (splitmix(seed) % (u64) groups);
      hv[i] = (s64) (splitmix(seed) % 2000001ULL) - 1000000;
    }
    CHECK(cudaMemcpy(keys, hk.data(), n * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(values, hv.data(), n * 8, cudaMemcpyHostToDevice));

    Groups g;
    u64 slots = 1; while (slots < 2 * (u64) groups) slots <<= 1;
    g.mask = slots - 1;
    CHECK(cudaMalloc(&g.slots, slots * 4)); CHECK(cudaMemset(g.slots, 0xff, slots * 4));
    CHECK(cudaMalloc(&g.key, groups * 8)); CHECK(cudaMalloc(&g.count, groups * 8));
    CHECK(cudaMalloc(&g.sumLow, groups * 8)); CHECK(cudaMalloc(&g.sumHigh, groups * 8));
    CHECK(cudaMalloc(&g.min, groups * 8)); CHECK(cudaMalloc(&g.max, groups * 8));
    insertGroups<<<(groups + 255) / 256, 256>>>(g, keys, (int) groups);
    CHECK(cudaDeviceSynchronize());

    float best = 1e30f;
    for (int r = 0; r < REPS; r++) {
      resetAccumulators<<<(groups + 255) / 256, 256>>>(g, (int) groups);
      CHECK(cudaEventRecord(start));
      globalUpdate<<<sms * 2, 1024>>>(g, keys, values, n);
      CHECK(cudaEventRecord(stop)); CHECK(cudaEventSynchronize(stop));
      float ms; CHECK(cudaEventElapsedTime(&ms, start, stop)); if (ms < best) best = ms;
    }
    CHECK(cudaGetLastError());
    HostGroups expected = download(g, (int) groups);
    printf("groups %ld: global %.1f us\n", groups, best * 1000);
    runCluster(g, keys, values, n, groups, expected, start, stop);
    if (getenv("CLUSTER_ONLY")) continue;
    runLean(g, keys, values, n, groups, expected, start, stop);
    runSliced(g, keys, values, n, groups, expected, start, stop);
    if (getenv("LEAN_ONLY")) continue;

    for (int staged = 0; staged < 2; staged++)
    for (int bits : {6, 7, 8, 9, 10}) {
      int partitions = 1 << bits;
      double perPartition = (double) groups / partitions;
      int entries = 64; while (entries < 2 * perPartition) entries <<= 1;
      int aggBytes = entries * LOCAL_ENTRY_BYTES;
      if (aggBytes > 200 * 1024) continue;
      long capacity = (long) (n / partitions * 1.1) + 65536;
      CHECK(cudaMalloc(&outKeys, capacity * partitions * 8));
      CHECK(cudaMalloc(&outValues, capacity * partitions * 8));
      unsigned* cursor;
      CHECK(cudaMalloc(&cursor, partitions * 4));
      int scatterBytes = 2 * partitions * 4;
      int stagedBytes = TILE * 20 + 3 * partitions * 4;
      CHECK(cudaFuncSetAttribute(scatterStaged, cudaFuncAttributeMaxDynamicSharedMemorySize,
          stagedBytes));
      CHECK(cudaFuncSetAttribute(aggregatePartitions,
          cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
      int perSm = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, aggregatePartitions,
          AGG_THREADS, aggBytes));
      int blocksPerPartition = (sms * perSm + partitions - 1) / partitions;
      float bestScatter = 1e30f, bestAgg = 1e30f, bestBoth = 1e30f;
      cudaEvent_t mid; CHECK(cudaEventCreate(&mid));
      for (int r = 0; r < REPS; r++) {
        resetAccumulators<<<(groups + 255) / 256, 256>>>(g, (int) groups);
        CHECK(cudaMemset(cursor, 0, partitions * 4));
        CHECK(cudaEventRecord(start));
        if (staged) {
          scatterStaged<<<sms * 2, SCATTER_THREADS, stagedBytes>>>(keys, values, n, bits,
              capacity, cursor, outKeys, outValues);
        } else {
          scatter<<<sms * 2, SCATTER_THREADS, scatterBytes>>>(keys, values, n, bits, capacity,
              cursor, outKeys, outValues);
        }
        CHECK(cudaEventRecord(mid));
        aggregatePartitions<<<partitions * blocksPerPartition, AGG_THREADS, aggBytes>>>(g,
            outKeys, outValues, cursor, capacity, entries, blocksPerPartition);
        CHECK(cudaEventRecord(stop)); CHECK(cudaEventSynchronize(stop));
        float a, c, t;
        CHECK(cudaEventElapsedTime(&a, start, mid)); CHECK(cudaEventElapsedTime(&c, mid, stop));
        CHECK(cudaEventElapsedTime(&t, start, stop));
        if (a < bestScatter) bestScatter = a;
        if (c < bestAgg) bestAgg = c;
        if (t < bestBoth) bestBoth = t;
      }
      CHECK(cudaGetLastError());
      HostGroups got = download(g, (int) groups);
      long wrong = countWrong(got, expected, groups);
      printf("  %s %4d partitions, %5d entries, %d blocks/partition: scatter %.1f + aggregate %.1f"
             " = %.1f us (%s)\n", staged ? "staged" : "direct", partitions, entries, blocksPerPartition, bestScatter * 1000,
             bestAgg * 1000, bestBoth * 1000, wrong == 0 ? "equal" : "WRONG");
      CHECK(cudaFree(outKeys)); CHECK(cudaFree(outValues)); CHECK(cudaFree(cursor));
      CHECK(cudaEventDestroy(mid));
    }
    CHECK(cudaFree(g.slots)); CHECK(cudaFree(g.key)); CHECK(cudaFree(g.count));
    CHECK(cudaFree(g.sumLow)); CHECK(cudaFree(g.sumHigh)); CHECK(cudaFree(g.min));
    CHECK(cudaFree(g.max));
  }
  return 0;
}
