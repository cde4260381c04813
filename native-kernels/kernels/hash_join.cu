// The hash join's build side (DESIGN.md §3, "Joins"), driven by CudaHashJoin.java. The table is
// program.cuh's JoinTableView: an open-addressing table with linear probing whose int32 slots
// name, for each distinct key, its smallest build row; per build row its key hash, and (filled by
// the host from tessera_join_build_heads' output) the chain of larger rows with equal keys and the
// size of each key's group, which the 1:N expansion walks.
//
// Three launches over the build rows, each reading only what earlier launches wrote (so no fences
// are needed between build rows' data and the slots):
//   tessera_join_build_hash:   hashes[r], and whether row r has a NULL key (never inserted).
//   tessera_join_build_insert: claims a slot per distinct key by atomicCAS, then lowers it to the
//                              key's smallest row by atomicMin; a row that finds its key already
//                              there sets *duplicates. Slots only ever go from -1 to a row of one
//                              key and then down, so the key a slot holds never changes once set.
//   tessera_join_build_heads:  heads[r] = the slot's final row (the key's smallest), -1 for NULL.
// The host sizes the slots at >= 2 x rows (a power of two), so every probe meets an empty slot.
// For one integral key whose values span a small range, two more launches make the direct map
// FindBuildRow reads instead of the slots: tessera_join_build_key_range (the range, which the
// host reads back with the heads) and tessera_join_build_direct (each key's smallest row at
// key - min), and where the map has as many words as rows, tessera_join_direct_identity (whether
// it is the identity, which generated probes then do not read). A table without a map whose
// distinct keys are few gets a probe filter, whose bits a last launch sets
// (tessera_join_build_filter) and which generated probes read before the walk.
//
// The 1:N expansion (HashJoinKernel.expand), for a probe batch:
//   tessera_join_expand_count: per probe row its key's smallest build row (heads) and its output
//     row count (the key's group size; 1 for an unmatched row of a left outer join, else 0),
//     turned into each probe row's first output row by a block scan plus decoupled look-back
//     across tiles (input order kept, as filter_project.cu does), and the total.
//   tessera_join_expand_rows: for one output batch [begin, end), the (probe row, build row) of
//     each output row: each probe row walks its key's chain (ascending build rows).
//   tessera_join_gather: per output column, the values at those rows (build row -1: NULL);
//     strings record lengths and sources for filter_project.cu's string kernels.
#include "tessera/config.cuh"
#include "tessera/program.cuh"
#include "tessera/tile.cuh"  // block scan and decoupled look-back for the expansion

namespace tessera {
namespace hash_join {

// Build row r's key columns as registers (the program's view of them), for hashing and equality.
struct BuildKeys {
  const InputColumn* keys;
  long long row;
};

// The key hash of build row `row`, as FindBuildRow computes it from registers; false when a
// key is NULL.
__device__ __forceinline__ bool BuildRowHash(const JoinTableView& table, long long row,
                                             unsigned long long* hash) {
  const InputColumn* keys = reinterpret_cast<const InputColumn*>(table.keys);
  unsigned long long h = kKeyTupleSeed;
  for (int k = 0; k < table.key_count; ++k) {
    Register r;
    LoadColumn(keys[k], row, r);
    if (!r.valid) return false;
    h = CombineKeyHash(h, JoinValueHash(keys[k], r), k);
  }
  *hash = h;
  return true;
}

// Whether build rows x and y (both without NULL keys) have equal keys.
__device__ __forceinline__ bool BuildRowsEqual(const JoinTableView& table, long long x,
                                               long long y) {
  const InputColumn* keys = reinterpret_cast<const InputColumn*>(table.keys);
  for (int k = 0; k < table.key_count; ++k) {
    Register r;
    LoadColumn(keys[k], y, r);
    if (!JoinValueEquals(keys[k], x, r)) return false;
  }
  return true;
}

}  // namespace hash_join
}  // namespace tessera

// key_null[r] = 1 when row r has a NULL key (hashes[r] = 0 then), else 0. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_hash(const tessera::JoinTableView* __restrict__ table_view,
                        unsigned char* __restrict__ key_null) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  unsigned long long* hashes = reinterpret_cast<unsigned long long*>(table.hashes);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    unsigned long long h = 0;
    const bool has_key = hash_join::BuildRowHash(table, r, &h);
    hashes[r] = has_key ? h : 0;
    key_null[r] = has_key ? 0 : 1;
  }
}

// Inserts every row without a NULL key; slot_of[r] = its key's slot (-1 for NULL keys). Slots all
// -1 and *duplicates 0 before the launch. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_insert(const tessera::JoinTableView* __restrict__ table_view,
                          const unsigned char* __restrict__ key_null, int* __restrict__ slot_of,
                          unsigned int* duplicates) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  int* slots = reinterpret_cast<int*>(table.slots);
  const unsigned long long* hashes = reinterpret_cast<const unsigned long long*>(table.hashes);
  const unsigned long long mask = static_cast<unsigned long long>(table.slot_mask);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    if (key_null[r]) {
      slot_of[r] = -1;
      continue;
    }
    const int row = static_cast<int>(r);  // the host keeps rows below 2^31
    const unsigned long long h = hashes[r];
    for (unsigned long long slot = h & mask;; slot = (slot + 1) & mask) {
      const int holder = atomicCAS(slots + slot, kNoBuildRow, row);
      if (holder == kNoBuildRow) {
        slot_of[r] = static_cast<int>(slot);
        break;
      }
      // holder is some row of the slot's key (hashes and keys were written by earlier launches).
      if (hashes[holder] == h && hash_join::BuildRowsEqual(table, holder, r)) {
        atomicMin(slots + slot, row);
        atomicOr(duplicates, 1u);
        slot_of[r] = static_cast<int>(slot);
        break;
      }
    }
  }
}

// heads[r] = the smallest build row with row r's key, or -1 for a NULL key. Any grid; after
// tessera_join_build_insert has finished (a later launch on the same stream).
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_heads(const tessera::JoinTableView* __restrict__ table_view,
                         const int* __restrict__ slot_of, int* __restrict__ heads) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const int* slots = reinterpret_cast<const int*>(table.slots);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    heads[r] = slot_of[r] < 0 ? -1 : slots[slot_of[r]];
  }
}

// *longest = max(*longest, the longest string of a column of `rows` rows), from its int32
// offsets; *longest 0 before the first launch. Any grid. (The hash aggregate bounds the key heap
// by it when group keys come from a join table's string payloads.)
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_longest_string(const int* __restrict__ offsets, long long rows, int* longest) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  int mine = 0;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    const int length = offsets[r + 1] - offsets[r];
    mine = length > mine ? length : mine;
  }
  if (mine > 0) atomicMax(longest, mine);
}

// range[0] = min(range[0], every non-NULL value of key column 0), range[1] = max(range[1], ...),
// as 64-bit registers (the values a probe compares). The host starts them at (INT64_MAX,
// INT64_MIN) and, when the range is dense, makes the direct map. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_key_range(const tessera::JoinTableView* __restrict__ table_view,
                             long long* range) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const InputColumn& key = reinterpret_cast<const InputColumn*>(table.keys)[0];
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  long long low = 0x7fffffffffffffffll;
  long long high = -low - 1;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    Register v;
    LoadColumn(key, r, v);
    if (!v.valid) continue;
    low = v.value < low ? v.value : low;
    high = v.value > high ? v.value : high;
  }
  if (low <= high) {
    atomicMin(range, low);
    atomicMax(range + 1, high);
  }
}

// The direct map (JoinTableView.direct, all -1 before): direct[key - direct_min] = the key's
// smallest build row, written by that row (heads[r] == r). After tessera_join_build_heads, and
// after the view's direct fields reached the device. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_direct(const tessera::JoinTableView* __restrict__ table_view,
                          const int* __restrict__ heads) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const InputColumn& key = reinterpret_cast<const InputColumn*>(table.keys)[0];
  int* direct = reinterpret_cast<int*>(table.direct);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    if (heads[r] != r) continue;  // NULL keys (-1) and the later rows of a repeated key
    Register v;
    LoadColumn(key, r, v);
    direct[static_cast<unsigned long long>(v.value) -
           static_cast<unsigned long long>(table.direct_min)] = static_cast<int>(r);
  }
}

// *not_identity = 1 where the direct map (direct_span words, as many as the build rows) has a word
// other than its own index: a NULL or repeated key left it -1, or the rows are not in key order.
// After tessera_join_build_direct. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_direct_identity(const tessera::JoinTableView* __restrict__ table_view,
                             int* not_identity) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const int* direct = reinterpret_cast<const int*>(table.direct);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < table.direct_span; i += stride) {
    if (direct[i] != i) *not_identity = 1;
  }
}

// The probe filter (JoinTableView.filter, all 0 before, on tables without a direct map): each
// distinct key's bit, its probe filter hash (CombineFilterHash) >> filter_shift, set by the key's
// smallest row (heads[r] == r). After tessera_join_build_heads, and after the view's filter
// fields reached the device. Any grid.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_build_filter(const tessera::JoinTableView* __restrict__ table_view,
                          const int* __restrict__ heads) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const InputColumn* keys = reinterpret_cast<const InputColumn*>(table.keys);
  unsigned int* filter = reinterpret_cast<unsigned int*>(table.filter);
  const int shift = static_cast<int>(table.filter_shift);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       r < table.rows; r += stride) {
    if (heads[r] != r) continue;  // NULL keys (-1) and the later rows of a repeated key
    unsigned long long h = 0;
    for (int k = 0; k < table.key_count; ++k) {
      Register v;
      LoadColumn(keys[k], r, v);
      h = CombineFilterHash(h, JoinValueHash(keys[k], v));
    }
    const unsigned long long bit = h >> shift;
    atomicOr(filter + (bit >> 5), 1u << (bit & 31));
  }
}

namespace tessera {
namespace hash_join {

// The probe row's key columns, loaded as LOAD_COLUMN loads them.
struct ProbeColumnKeys {
  const InputColumn* columns;
  long long row;
  __device__ __forceinline__ Register operator()(int k) const {
    Register r;
    LoadColumn(columns[k], row, r);
    return r;
  }
};

// Output rows of a probe row whose key's smallest build row is `head`.
__device__ __forceinline__ long long ExpandCount(const JoinTableView& table, int head,
                                                 bool left_outer) {
  if (head == kNoBuildRow) return left_outer ? 1 : 0;
  return __ldg(reinterpret_cast<const int*>(table.group_sizes) + head);
}

}  // namespace hash_join
}  // namespace tessera

// One block of kBlockThreads per tile of kTileItems probe rows (rows > 0); *tile_counter and
// tile_status zeroed before the launch. probe_keys: one InputColumn per table key, in order.
// Writes heads[i], starts[i] (probe row i's first output row) and *total (output rows).
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_expand_count(const tessera::JoinTableView* __restrict__ table_view,
                          const tessera::InputColumn* __restrict__ probe_keys, int left_outer,
                          int rows, int* __restrict__ heads, long long* __restrict__ starts,
                          unsigned long long* tile_counter, unsigned long long* tile_status,
                          unsigned long long* total) {
  using namespace tessera;
  __shared__ BlockScanStorage<long long, kBlockThreads, kItemsPerThread> scan_storage;
  __shared__ unsigned long long shared_word;
  const JoinTableView table = *table_view;

  const long long tile = TakeTile(tile_counter, &shared_word);
  const long long tile_offset = tile * kTileItems;
  const long long remaining = rows - tile_offset;  // >= 1: one block per tile
  const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;

  long long counts[kItemsPerThread];
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    counts[item] = 0;
    const int index = threadIdx.x + item * kBlockThreads;
    if (index < num_tile_items) {
      const long long row = tile_offset + index;
      int error;
      bool any_null;
      const int head = FindBuildRow(table, hash_join::ProbeColumnKeys{probe_keys, row}, &error,
                                    &any_null);
      heads[row] = head;
      counts[item] = hash_join::ExpandCount(table, head, left_outer != 0);
    }
  }
  long long exclusive[kItemsPerThread];
  const long long tile_total = BlockExclusiveSum<long long, kBlockThreads, kItemsPerThread>(
      counts, exclusive, scan_storage, num_tile_items);
  const long long tile_prefix = static_cast<long long>(BlockTilePrefix(
      tile_status, tile, static_cast<unsigned long long>(tile_total), &shared_word));
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    const int index = threadIdx.x + item * kBlockThreads;
    if (index < num_tile_items) starts[tile_offset + index] = tile_prefix + exclusive[item];
  }
  if (tile_offset + num_tile_items == rows && threadIdx.x == 0) {
    *total = static_cast<unsigned long long>(tile_prefix + tile_total);
  }
}

// For output rows [begin, end): probe_rows[o - begin] and build_rows[o - begin] (-1: the NULL
// payload of an unmatched left outer row). Any grid; thread per probe row.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_expand_rows(const tessera::JoinTableView* __restrict__ table_view,
                         const int* __restrict__ heads, const long long* __restrict__ starts,
                         int rows, int left_outer, long long begin, long long end,
                         int* __restrict__ probe_rows, int* __restrict__ build_rows) {
  using namespace tessera;
  const JoinTableView table = *table_view;
  const int* next = reinterpret_cast<const int*>(table.next);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += stride) {
    const int head = heads[i];
    const long long first = starts[i];
    const long long count = hash_join::ExpandCount(table, head, left_outer != 0);
    if (count == 0 || first >= end || first + count <= begin) continue;
    if (head == kNoBuildRow) {  // an unmatched left outer row: one output row, inside the batch
      probe_rows[first - begin] = static_cast<int>(i);
      build_rows[first - begin] = kNoBuildRow;
      continue;
    }
    long long at = first;
    for (int b = head; b != kNoBuildRow && at < end; b = __ldg(next + b), ++at) {
      if (at >= begin) {
        probe_rows[at - begin] = static_cast<int>(i);
        build_rows[at - begin] = b;
      }
    }
  }
}

// One output column of `rows` rows (CudaGather): row o is row source_rows[o] of `source`, or,
// from `split` on, row source_rows[o] - split of `second` (-1: NULL). Fixed-width values go to
// data (NULL: 0), validity words are built by warp ballots (each 32-bit word by one warp: no
// atomics; the bitmap must hold whole words), strings record length and byte address per row.
// *null_count (zeroed before) gets the NULLs. Launch with one block of kBlockThreads per
// kTileItems rows.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_join_gather(const tessera::InputColumn* __restrict__ source,
                    const tessera::InputColumn* __restrict__ second, int split,
                    const int* __restrict__ source_rows, long long rows,
                    unsigned long long data, unsigned int* __restrict__ validity,
                    int* __restrict__ string_lengths,
                    unsigned long long* __restrict__ string_sources,
                    unsigned long long* null_count) {
  using namespace tessera;
  const InputColumn column = *source;
  const TypeId type = static_cast<TypeId>(column.type);
  const int lane = threadIdx.x % kWarpThreads;
#pragma unroll 1
  for (int item = 0; item < kItemsPerThread; ++item) {
    // Striped: a warp covers 32 consecutive rows starting at a multiple of 32.
    const long long o = static_cast<long long>(blockIdx.x) * kTileItems + item * kBlockThreads +
                        threadIdx.x;
    const bool in_range = o < rows;
    Register r;
    SetNull(r, 0);
    if (in_range) {
      const int from = source_rows[o];
      if (from >= 0) {
        if (from < split) {
          LoadColumn(column, from, r);
        } else {
          LoadColumn(*second, from - split, r);
        }
      }
      if (type == TypeId::STRING) {
        string_lengths[o] = r.valid ? r.length : 0;
        string_sources[o] = r.valid ? static_cast<unsigned long long>(r.value) : 0ull;
      } else {
        const long long value = r.valid ? r.value : 0;
        switch (WidthOf(type)) {
          case 1: reinterpret_cast<unsigned char*>(data)[o] = static_cast<unsigned char>(value);
                  break;
          case 2: reinterpret_cast<unsigned short*>(data)[o] = static_cast<unsigned short>(value);
                  break;
          case 4: reinterpret_cast<unsigned int*>(data)[o] = static_cast<unsigned int>(value);
                  break;
          default: reinterpret_cast<long long*>(data)[o] = value; break;
        }
      }
    }
    const unsigned valid_bits = __ballot_sync(kFullWarpMask, in_range && r.valid);
    const unsigned null_bits = __ballot_sync(kFullWarpMask, in_range && !r.valid);
    if (lane == 0 && o < rows) {  // lane 0 holds the warp's first row
      validity[o / kWarpThreads] = valid_bits;
      if (null_bits != 0) atomicAdd(null_count, static_cast<unsigned long long>(__popc(null_bits)));
    }
  }
}
