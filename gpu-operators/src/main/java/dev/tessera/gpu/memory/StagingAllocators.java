package dev.tessera.gpu.memory;

import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.RootAllocator;

/**
 * Arrow allocators whose memory comes from a pinned {@link ArenaPool}: host staging columns are
 * ordinary {@link ArrowBuf}s that the device can copy from and to asynchronously. Arrow's own
 * accounting then reports any staging buffer left open when the allocator closes.
 */
public final class StagingAllocators {
  private StagingAllocators() {}

  /**
   * A root allocator over {@code pinned}. The pool's cap is the only limit: Arrow's own limit
   * would throw its OutOfMemoryException, which names no setting, before the pool does; the pool
   * throws {@link PoolExhaustedException} naming the cap's setting, which the operators handle
   * like device memory running out (wait for other tasks, smaller batches).
   */
  public static BufferAllocator rootOver(ArenaPool pinned) {
    return new RootAllocator(
        RootAllocator.configBuilder()
            .allocationManagerFactory(new PinnedFactory(pinned))
            .build());
  }

  private static final class PinnedFactory implements AllocationManager.Factory {
    private final ArenaPool pool;
    // Arrow needs one zero-length buffer per factory; it never dereferences its address.
    private final ArrowBuf empty = new ArrowBuf(ReferenceManager.NO_OP, null, 0, 0L);

    PinnedFactory(ArenaPool pool) {
      this.pool = pool;
    }

    @Override
    public AllocationManager create(BufferAllocator accountingAllocator, long size) {
      return new PinnedAllocation(accountingAllocator, pool, size);
    }

    @Override
    public ArrowBuf empty() {
      return empty;
    }
  }

  private static final class PinnedAllocation extends AllocationManager {
    private final ArenaPool pool;
    private final long address;
    private final long size;

    PinnedAllocation(BufferAllocator accountingAllocator, ArenaPool pool, long size) {
      super(accountingAllocator);
      this.pool = pool;
      this.address = pool.allocate(size);
      this.size = size;
    }

    @Override
    public long getSize() {
      return size;
    }

    @Override
    protected long memoryAddress() {
      return address;
    }

    @Override
    protected void release0() {
      pool.free(address);
    }
  }
}
