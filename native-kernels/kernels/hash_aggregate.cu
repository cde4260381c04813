// The hash aggregation operator, driven by CudaHashAggregate.java, whose constants mirror the
// plan layout below.
//
// The aggregation state (owned by the Java side, living across batches) is an open-addressing hash
// table with linear probing: each Slot holds an int32 group index (kEmpty = -1, kBusy = -2 while a
// thread writes a new group's key) and that group's hash. Per group: its 64-bit hash, its key
// values and key null flags, and per function a value word, a high word (sums are exact 128-bit:
// low word in `value`, high word in `high`) and a seen flag. A fixed-width key value is int64,
// sign-extended from its width (FLOAT/DOUBLE by bits); a STRING key value is the offset of its
// bytes in the key heap (relative to the heap's base, so the host can grow the heap by copying it)
// with the byte length in a per-group int32 array.
//
// tessera_hash_aggregate_update: the fused pipeline (DESIGN.md §3), one launch per batch. A block
// takes tiles of kTileItems rows (grid-stride), runs the expression program over the tile with
// program.cuh's interpreter, and for each row the filter keeps finds or inserts its group and
// accumulates every function straight from the program's registers. Pre-aggregation ("local
// resolution, global propagation"): a warp whose rows all belong to one group first reduces them
// with shuffles (one update for the warp); then a small per-block table in shared memory, keyed
// by the global group index, takes the accumulations of the groups it holds with shared-memory
// atomics; rows of groups it cannot hold go to the global accumulators; at the end the block
// merges its table into the global accumulators, one atomic per (entry, function). The host
// guarantees groups + rows <= group capacity, table capacity >= 2 x group capacity (so a probe
// always ends) and room in the key heap for every string key byte the batch may insert. With
// small dense integer keys a direct group map (Crystal's SSB group-by, see below) goes in front
// of the table.
// tessera_hash_aggregate_rehash: reinserts groups [0, count) into a fresh (all kEmpty) table.
// tessera_hash_aggregate_init: sets accumulators of groups [from, to) to their identity.
// tessera_hash_aggregate_finish: writes groups [0, rows) into the output columns (string keys:
// each group's length and byte address, for tessera_string_offsets and tessera_string_gather),
// counts nulls, and reports overflow (ANSI) as the smallest (row << 8 | RowError code).
#include "tessera/hash_aggregate.cuh"

// The fused update (see the top of the file). Launch with kBlockThreads threads, any number of
// blocks (tiles are taken grid-stride), and header.local_entries * (4 + 20 * functions) bytes of
// dynamic shared memory; rows > 0; *first_error all ones and *heap_overflow 0 before the launch.
// A row whose filter, or (if kept) any program output, raised an error is not aggregated; the
// smallest such row and its first error go to *first_error by atomicMin, as tessera_filter_project
// reports them.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_update(const int* __restrict__ code, int instruction_count,
                              int register_count, const long long* __restrict__ constants,
                              const unsigned char* __restrict__ strings,
                              const tessera::InputColumn* __restrict__ inputs,
                       const tessera::JoinTableView* __restrict__ tables, int filter_register,
                              int program_ansi, int rows,
                              const unsigned long long* __restrict__ plan,
                              unsigned long long* first_error,
                              unsigned long long* heap_overflow) {
  using namespace tessera;
  using namespace tessera::hash_aggregate;
  extern __shared__ unsigned long long local_words[];
  const PlanView view = PlanView::Of(plan);
  const Header& header = *view.header;
  const int function_count = static_cast<int>(header.function_count);
  const int output_count = static_cast<int>(header.output_count);
  const int* output_registers = reinterpret_cast<const int*>(header.output_registers);

  const LocalTable local =
      LocalTable::In(local_words, static_cast<int>(header.local_entries), function_count);
  local.Reset(view.functions, function_count);
  __syncthreads();

  const ProgramView program{code, instruction_count, constants, strings, inputs, program_ansi != 0,
                            tables};
  Register regs[kItemsPerThread][kMaxRegisters];
  const long long tiles = (static_cast<long long>(rows) + kTileItems - 1) / kTileItems;
  for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const long long tile_offset = tile * kTileItems;
    const long long remaining = rows - tile_offset;
    const int num_tile_items = remaining < kTileItems ? static_cast<int>(remaining) : kTileItems;
    ResetRegisters<kItemsPerThread>(regs, register_count);
    RunProgram<kBlockThreads, kItemsPerThread>(program, regs, tile_offset, num_tile_items);
    // Uniform: every lane runs every item (the warp-level step needs the whole warp).
#pragma unroll 1
    for (int item = 0; item < kItemsPerThread; ++item) {
      const int index = threadIdx.x + item * kBlockThreads;
      const Register* row_regs = regs[item];
      bool active = false;  // a row the filter keeps, without an error
      if (index < num_tile_items) {
        const bool keep = filter_register < 0 || (row_regs[filter_register].valid &&
                                                  row_regs[filter_register].value != 0);
        // HostFilterProject's order: the filter's error, then each output's, if the row is kept.
        int error = filter_register >= 0 ? row_regs[filter_register].error : 0;
        for (int o = 0; error == 0 && keep && o < output_count; ++o) {
          error = row_regs[output_registers[o]].error;
        }
        if (error != 0) {
          const unsigned long long row = static_cast<unsigned long long>(tile_offset + index);
          atomicMin(first_error, (row << kErrorRowShift) | static_cast<unsigned long long>(error));
        } else {
          active = keep;
        }
      }
      AggregateItem(view, active, RegisterKeys{view.keys, row_regs},
                    RegisterInputs{view.functions, row_regs}, local, heap_overflow);
    }
  }

  __syncthreads();
  MergeLocal(view, local);
}

extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_rehash(const unsigned long long* __restrict__ hashes, long long groups,
                              tessera::hash_aggregate::Slot* __restrict__ slots,
                              long long table_mask) {
  using namespace tessera::hash_aggregate;
  const long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  const unsigned long long h = hashes[g];
  unsigned long long slot = h & static_cast<unsigned long long>(table_mask);
  while (atomicCAS(&slots[slot].group, kEmpty, static_cast<int>(g)) != kEmpty) {
    slot = (slot + 1) & static_cast<unsigned long long>(table_mask);
  }
  slots[slot].hash = h;  // read by the next launch, after this one ends
}

// Accumulators of groups [from, to) to their identities (value, high, seen per function).
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_init(const unsigned long long* __restrict__ plan, long long from,
                            long long to) {
  using namespace tessera::hash_aggregate;
  const Header& header = *reinterpret_cast<const Header*>(plan);
  const Function* functions =
      reinterpret_cast<const Function*>(plan + kHeaderWords + kColumnWords * header.key_count);
  const long long g = from + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= to) return;
  for (int f = 0; f < header.function_count; ++f) {
    const Function& fn = functions[f];
    const int kind = static_cast<int>(fn.kind);
    reinterpret_cast<long long*>(fn.value)[g] =
        (kind == kMin || kind == kMax) ? Identity(kind, static_cast<int>(fn.type)) : 0;
    reinterpret_cast<unsigned long long*>(fn.high)[g] = 0;
    reinterpret_cast<unsigned int*>(fn.seen)[g] = 0;
  }
}

// Groups [0, rows) into the outputs. Output validity bitmaps arrive zeroed; null_counts (one per
// output column, keys first) arrive zeroed; the error word arrives as all ones. A string key
// writes each group's byte length (0 for NULL) and the address of its bytes in the heap, which
// tessera_string_offsets and tessera_string_gather turn into the output column.
extern "C" __global__ void __launch_bounds__(tessera::kBlockThreads)
tessera_hash_aggregate_finish(const unsigned long long* __restrict__ plan, int ansi,
                              unsigned long long* __restrict__ error,
                              unsigned long long* __restrict__ null_counts) {
  using namespace tessera::hash_aggregate;
  const Header& header = *reinterpret_cast<const Header*>(plan);
  const Key* keys = reinterpret_cast<const Key*>(plan + kHeaderWords);
  const Function* functions =
      reinterpret_cast<const Function*>(plan + kHeaderWords + kColumnWords * header.key_count);
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= header.rows) return;
  for (int k = 0; k < header.key_count; ++k) {
    const Key& key = keys[k];
    const int type = static_cast<int>(key.type);
    const bool null = reinterpret_cast<const unsigned char*>(key.nulls)[r] != 0;
    const long long value = null ? 0 : reinterpret_cast<const long long*>(key.values)[r];
    if (type == kString) {
      reinterpret_cast<int*>(key.string_lengths)[r] =
          null ? 0 : reinterpret_cast<const int*>(key.lengths)[r];
      reinterpret_cast<unsigned long long*>(key.string_sources)[r] =
          null ? 0ull : header.heap + static_cast<unsigned long long>(value);
    } else {
      WriteFixed(key.data, type, r, value);
    }
    if (null) {
      atomicAdd(null_counts + k, 1ull);
    } else {
      atomicOr(reinterpret_cast<unsigned int*>(key.validity) + (r >> 5), 1u << (r & 31));
    }
  }
  for (int f = 0; f < header.function_count; ++f) {
    const Function& fn = functions[f];
    bool valid;
    const long long value = FinalValue(fn, r, ansi != 0, error, &valid);
    WriteFixed(fn.data, static_cast<int>(fn.result_type), r, valid ? value : 0);
    if (valid) {
      atomicOr(reinterpret_cast<unsigned int*>(fn.validity) + (r >> 5), 1u << (r & 31));
    } else {
      atomicAdd(null_counts + header.key_count + f, 1ull);
    }
  }
}
