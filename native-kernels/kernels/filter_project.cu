// The fused filter-and-project operator (DESIGN.md §3), driven by CudaFilterProject.java, whose
// constants mirror the layouts below (ProgramAbiTest checks them).
//
// Phase 1, tessera_filter_project: one tile of kTileItems rows per block, tiles taken in order
// from a device counter. Every row of the tile is evaluated once by the program interpreter
// (program.cuh); a row is kept when there is no filter or the filter register is valid and
// non-zero. A block-wide exclusive scan of the keep flags (scan.cuh) plus a decoupled look-back
// across tiles (lookback.cuh) gives each kept row its output position, in input order. Fixed-width
// outputs are written there; validity bits are OR-ed into zeroed bitmaps; null counts are summed
// per block and added once per block. String outputs only record each kept row's length and
// source address. Errors: the smallest error row and its code go to the status by one atomicMin.
//
// Phase 2, per string output: tessera_string_offsets scans the lengths into rows + 1 int32
// offsets (again with a look-back) and records the total bytes; the host reads the status, sizes
// the data buffer and launches tessera_string_gather, which copies the bytes.
#include "tessera/program.cuh"
#include "tessera/tile.cuh"

using tessera::kBlockThreads;
using tessera::kItemsPerThread;
using tessera::kTileItems;

namespace tessera {
namespace filter_project {

// One output column (written by CudaFilterProject, 40 bytes a column).
struct OutputColumn {
  unsigned long long data;            // fixed-width values; unused (0) for strings
  unsigned long long validity;        // zeroed Arrow bitmap, rows of the input rounded to words
  unsigned long long string_lengths;  // strings: int32 byte length per kept row
  unsigned long long string_sources;  // strings: address of the bytes per kept row
  int reg;                            // the register holding the output
  int type;                           // TypeId
};
constexpr int kOutputColumnBytes = 40;
static_assert(sizeof(OutputColumn) == kOutputColumnBytes, "CudaFilterProject.OUTPUT_COLUMN_BYTES");

// The status the host reads back after phase 1 (one copy per batch), zeroed before the launch
// except first_error, which starts as kNoError.
struct StatusHeader {
  unsigned long long first_error;   // (input row << kErrorRowShift) | RowError code, the smallest
  unsigned long long kept_rows;     // rows the filter kept (written by the last tile)
  unsigned long long tile_counter;  // phase 1's dynamic tile index
  unsigned long long reserved;
};
constexpr int kStatusHeaderBytes = 32;
static_assert(sizeof(StatusHeader) == kStatusHeaderBytes, "CudaFilterProject.STATUS_HEADER_BYTES");

// Per output, after the header.
struct OutputStatus {
  unsigned long long null_count;          // NULLs among the kept rows
  unsigned long long string_bytes;        // strings: total bytes (written by phase 2)
  unsigned long long string_tile_counter; // strings: phase 2's dynamic tile index
  unsigned long long reserved;
};
constexpr int kOutputStatusBytes = 32;
static_assert(sizeof(OutputStatus) == kOutputStatusBytes, "CudaFilterProject.OUTPUT_STATUS_BYTES");

// Errors are packed as program.cuh's kErrorRowShift says; all ones is no error.
constexpr unsigned long long kNoError = ~0ull;

__device__ __forceinline__ void WriteFixed(const OutputColumn& out, long long position,
                                           const Register& r) {
  const long long value = r.valid ? r.value : 0;  // NULL rows hold 0, as the host writes them
  switch (WidthOf(static_cast<TypeId>(out.type))) {
    case 1:
      reinterpret_cast<unsigned char*>(out.data)[position] = static_cast<unsigned char>(value);
      break;
    case 2:
      reinterpret_cast<unsigned short*>(out.data)[position] = static_cast<unsigned short>(value);
      break;
    case 4:
      reinterpret_cast<unsigned int*>(out.data)[position] = static_cast<unsigned int>(value);
      break;
    default:
      reinterpret_cast<long long*>(out.data)[position] = value;
      break;
  }
}

__device__ __forceinline__ void WriteValid(const OutputColumn& out, long long position) {
  // Arrow's bit i % 8 of byte i / 8 is bit i % 32 of little-endian 32-bit word i / 32.
  constexpr int kWordBits = 32;
  atomicOr(reinterpret_cast<unsigned int*>(out.validity) + position / kWordBits,
           1u << (position % kWordBits));
}

// The first error a row raises, as HostFilterProject checks them: the filter's, then, if the row
// is kept, each output's in output order. 0 when none.
__device__ __forceinline__ int RowErrorCode(const Register* regs, int filter_register, bool keep,
                                            const OutputColumn* outputs, int output_count) {
  if (filter_register >= 0 && regs[filter_register].error != 0) {
    return regs[filter_register].error;
  }
  if (keep) {
    for (int o = 0; o < output_count; ++o) {
      const int error = regs[outputs[o].reg].error;
      if (error != 0) return error;
    }
  }
  return 0;
}

}  // namespace filter_project
}  // namespace tessera

// Phase 1. Launch with one block of kBlockThreads threads per tile of kTileItems rows (rows > 0);
// status, output_status and tile_status zeroed, status->first_error set to all ones.
extern "C" __global__ void __launch_bounds__(kBlockThreads)
tessera_filter_project(const int* __restrict__ code, int instruction_count, int register_count,
                       const long long* __restrict__ constants,
                       const unsigned char* __restrict__ strings,
                       const tessera::InputColumn* __restrict__ inputs,
                       const tessera::JoinTableView* __restrict__ tables,
                       const tessera::filter_project::OutputColumn* __restrict__ outputs,
                       int output_count, int filter_register, int ansi, int rows,
                       tessera::filter_project::StatusHeader* status,
                       tessera::filter_project::OutputStatus* output_status,
                       unsigned long long* tile_status) {
  using namespace tessera;
  using namespace tessera::filter_project;
  __shared__ BlockScanStorage<int, kBlockThreads, kItemsPerThread> scan_storage;
  __shared__ int warp_partials[kBlockThreads / kWarpThreads];
  __shared__ unsigned long long shared_word;

  const long long tile = TakeTile(&status->tile_counter, &shared_word);
  const long long tile_offset = tile * kTileItems;
  // The grid has exactly one block per tile, so every tile taken holds at least one row.
  const long long remaining = rows - tile_offset;
  const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;
  const long long last_tile = (static_cast<long long>(rows) - 1) / kTileItems;

  const ProgramView program{code, instruction_count, constants, strings, inputs, ansi != 0,
                            tables};
  Register regs[kItemsPerThread][kMaxRegisters];
  ResetRegisters<kItemsPerThread>(regs, register_count);
  RunProgram<kBlockThreads, kItemsPerThread>(program, regs, tile_offset, num_tile_items);

  int keep[kItemsPerThread];
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    keep[item] = 0;
    const int index = threadIdx.x + item * kBlockThreads;
    if (index < num_tile_items) {
      const Register* row_regs = regs[item];
      keep[item] = filter_register < 0 ||
                   (row_regs[filter_register].valid && row_regs[filter_register].value != 0);
      const int error =
          RowErrorCode(row_regs, filter_register, keep[item] != 0, outputs, output_count);
      if (error != 0) {
        const unsigned long long row = static_cast<unsigned long long>(tile_offset + index);
        atomicMin(&status->first_error,
                  (row << kErrorRowShift) | static_cast<unsigned long long>(error));
      }
    }
  }

  int position[kItemsPerThread];
  const int tile_kept = BlockExclusiveSum<int, kBlockThreads, kItemsPerThread>(
      keep, position, scan_storage, num_tile_items);
  const long long tile_prefix = static_cast<long long>(BlockTilePrefix(
      tile_status, tile, static_cast<unsigned long long>(tile_kept), &shared_word));
  if (tile == last_tile && threadIdx.x == 0) {
    status->kept_rows = static_cast<unsigned long long>(tile_prefix + tile_kept);
  }

  for (int o = 0; o < output_count; ++o) {  // uniform: every thread walks every output
    const OutputColumn out = outputs[o];
    const bool is_string = static_cast<TypeId>(out.type) == TypeId::STRING;
    int nulls = 0;
    // Not unrolled: unrolled, ptxas spills a few registers around this loop; rolled, keep and
    // position sit in the stack frame next to the register files instead.
#pragma unroll 1
    for (int item = 0; item < kItemsPerThread; ++item) {
      if (!keep[item]) continue;
      const Register& r = regs[item][out.reg];
      const long long at = tile_prefix + position[item];
      if (r.valid) {
        WriteValid(out, at);
      } else {
        ++nulls;
      }
      if (is_string) {
        reinterpret_cast<int*>(out.string_lengths)[at] = r.valid ? r.length : 0;
        reinterpret_cast<unsigned long long*>(out.string_sources)[at] =
            r.valid ? static_cast<unsigned long long>(r.value) : 0ull;
      } else {
        WriteFixed(out, at, r);
      }
    }
    const int block_nulls = BlockSum<int, kBlockThreads>(nulls, warp_partials);
    if (threadIdx.x == 0 && block_nulls != 0) {
      atomicAdd(&output_status[o].null_count, static_cast<unsigned long long>(block_nulls));
    }
  }
}

// Phase 2a, per string output: offsets[i] = sum of lengths[0 .. i), offsets[kept] = the total,
// which also goes to *total_bytes. The kept row count is read from the device (*num_items), so
// the grid is sized for the input's rows; blocks whose tile lies past the kept rows return at
// once (no tile before them waits on them). tile_counter and tile_status zeroed before the launch.
extern "C" __global__ void __launch_bounds__(kBlockThreads)
tessera_string_offsets(const int* __restrict__ lengths, int* __restrict__ offsets,
                       const unsigned long long* num_items, unsigned long long* tile_counter,
                       unsigned long long* tile_status, unsigned long long* total_bytes) {
  using namespace tessera;
  __shared__ BlockScanStorage<long long, kBlockThreads, kItemsPerThread> scan_storage;
  __shared__ unsigned long long shared_word;

  const long long tile = TakeTile(tile_counter, &shared_word);
  const long long rows = static_cast<long long>(*num_items);
  const long long tile_offset = tile * kTileItems;
  if (rows == 0) {
    if (tile == 0 && threadIdx.x == 0) {
      offsets[0] = 0;
      *total_bytes = 0;
    }
    return;
  }
  if (tile_offset >= rows) return;  // the same for the whole block
  const long long remaining = rows - tile_offset;
  const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;

  int loaded[kItemsPerThread];
  BlockLoad<int, kBlockThreads, kItemsPerThread>(lengths + tile_offset, loaded, num_tile_items);
  long long items[kItemsPerThread];
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    items[item] = threadIdx.x + item * kBlockThreads < num_tile_items ? loaded[item] : 0;
  }
  long long exclusive[kItemsPerThread];
  const long long tile_bytes = BlockExclusiveSum<long long, kBlockThreads, kItemsPerThread>(
      items, exclusive, scan_storage, num_tile_items);
  const long long tile_prefix = static_cast<long long>(BlockTilePrefix(
      tile_status, tile, static_cast<unsigned long long>(tile_bytes), &shared_word));
  // Offsets are int32 (Arrow's string layout); the host refuses totals beyond 2^31 - 1 bytes, so
  // a truncated offset is never used.
  int offset_items[kItemsPerThread];
#pragma unroll
  for (int item = 0; item < kItemsPerThread; ++item) {
    offset_items[item] = static_cast<int>(tile_prefix + exclusive[item]);
  }
  BlockStore<int, kBlockThreads, kItemsPerThread>(offsets + tile_offset, offset_items,
                                                  num_tile_items);
  if (tile_offset + num_tile_items == rows && threadIdx.x == 0) {
    offsets[rows] = static_cast<int>(tile_prefix + tile_bytes);
    *total_bytes = static_cast<unsigned long long>(tile_prefix + tile_bytes);
  }
}

// Phase 2b, per string output: copies each kept row's bytes from its source to
// bytes + offsets[row]. One block per tile of kTileItems rows; each warp copies its rows one at a
// time, its lanes taking consecutive bytes.
extern "C" __global__ void __launch_bounds__(kBlockThreads)
tessera_string_gather(const int* __restrict__ offsets,
                      const unsigned long long* __restrict__ sources,
                      unsigned char* __restrict__ bytes, int rows) {
  using namespace tessera;
  constexpr int kWarps = kBlockThreads / kWarpThreads;
  constexpr int kRowsPerWarp = kTileItems / kWarps;
  const int lane = threadIdx.x % kWarpThreads;
  const int warp = threadIdx.x / kWarpThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kTileItems + warp * kRowsPerWarp;
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const long long row = first + i;
    if (row >= rows) return;  // the same for the whole warp
    const int start = offsets[row];
    const int length = offsets[row + 1] - start;
    const unsigned char* source = reinterpret_cast<const unsigned char*>(sources[row]);
    for (int j = lane; j < length; j += kWarpThreads) bytes[start + j] = source[j];
  }
}
