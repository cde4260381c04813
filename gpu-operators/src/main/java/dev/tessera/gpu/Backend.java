package dev.tessera.gpu;

import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.join.HashJoinKernel;
import dev.tessera.gpu.kernels.DictionaryKernel;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.sort.TopKKernel;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The device runtime one executor uses: its memory pools, streams and operators. Two
 * implementations share this contract (DESIGN.md §4): {@code CudaBackend} and
 * {@code HostReferenceBackend}. Open one with {@link Backends#open}.
 */
public interface Backend extends AutoCloseable {
  BackendKind kind();

  /** One line for logs and explain output, e.g. "CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90)". */
  String description();

  /** Device memory for columns and operator state. */
  ArenaPool deviceMemory();

  /** Pinned host memory behind {@link #stagingAllocator()}. */
  ArenaPool pinnedMemory();

  /** Arrow allocator for host staging columns; its buffers live in {@link #pinnedMemory()}. */
  BufferAllocator stagingAllocator();

  /** A new stream; the caller closes it. */
  GpuStream newStream();

  /** The diagnostic smoke kernel on this backend. */
  SmokeKernel smokeKernel();

  /** The fused filter-and-project operator on this backend. */
  ProgramKernel programKernel();

  /** The hash aggregation operator on this backend. */
  HashAggregateKernel hashAggregateKernel();

  /** The hash join operator: join tables and the 1:N probe. */
  HashJoinKernel hashJoinKernel();

  /** The top-k operator ({@code ORDER BY ... LIMIT k}). */
  TopKKernel topKKernel();

  /** Dictionary-encoded columns (ids and entries) decoded into plain ones. */
  DictionaryKernel dictionaryKernel();

  /** Releases the pools and the device. Everything allocated from them must be closed first. */
  @Override
  void close();
}
