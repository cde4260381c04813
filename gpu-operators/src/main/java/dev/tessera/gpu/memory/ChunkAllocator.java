package dev.tessera.gpu.memory;

/**
 * Where an {@link ArenaPool} gets its large chunks: device memory (cuMemAlloc), pinned host memory
 * (cuMemHostAlloc), or plain off-heap memory for the host reference backend.
 */
public interface ChunkAllocator {
  /**
   * Allocates a chunk of {@code bytes} and returns its address.
   *
   * @throws PoolExhaustedException if the underlying memory cannot supply the chunk
   */
  long allocate(long bytes);

  /** Frees a chunk returned by {@link #allocate}. */
  void free(long address, long bytes);

  /** What kind of memory this is, for messages ("CUDA device 0 memory", "pinned host memory"). */
  String describe();
}
