package dev.tessera.gpu.memory;

import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Arrow allocators whose memory comes from a pinned {@link ArenaPool}: host staging columns are
 * ordinary {@link ArrowBuf}s that the device can copy from and to asynchronously. Arrow's own
 * accounting then reports any staging buffer left open when the allocator closes.
 *
 * <p>When the pinned pool is full, a staging buffer comes from ordinary (pageable) off-heap
 * memory instead, as spark-rapids does: copies from and to it are slower (the driver stages them
 * through its own pinned buffers, synchronously) but work, and staging never waits or fails for
 * the pinned cap. A task can hold pinned memory in two places at once (a GPU segment's download
 * feeding, through a CPU operator, the next segment's upload), so a full pool must not block it.
 */
public final class StagingAllocators {
  private static final Logger LOG = LoggerFactory.getLogger(StagingAllocators.class);

  private StagingAllocators() {}

  /**
   * A root allocator over {@code pinned}, falling back to pageable memory when the pool is full.
   * Arrow's own limit is not used: it throws an OutOfMemoryException that names no setting.
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
    private final AtomicBoolean warned = new AtomicBoolean();

    PinnedFactory(ArenaPool pool) {
      this.pool = pool;
    }

    @Override
    public AllocationManager create(BufferAllocator accountingAllocator, long size) {
      try {
        return new StagingAllocation(accountingAllocator, pool, pool.allocate(size), size);
      } catch (PoolExhaustedException e) {
        if (warned.compareAndSet(false, true)) {
          LOG.warn("Tessera: the pinned staging pool is full; staging buffers come from pageable"
              + " memory until it has room, which makes copies to and from the GPU slower"
              + " (logged once; raise {} to avoid it): {}", pool.capSetting(), e.getMessage());
        }
        return new StagingAllocation(accountingAllocator, null, MemoryUtil.allocateMemory(size),
            size);
      }
    }

    @Override
    public ArrowBuf empty() {
      return empty;
    }
  }

  /** One staging buffer's memory: a block of the pinned pool, or pageable when pool is null. */
  private static final class StagingAllocation extends AllocationManager {
    private final ArenaPool pool;
    private final long address;
    private final long size;

    StagingAllocation(BufferAllocator accountingAllocator, ArenaPool pool, long address,
        long size) {
      super(accountingAllocator);
      this.pool = pool;
      this.address = address;
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
      if (pool != null) {
        pool.free(address);
      } else {
        MemoryUtil.freeMemory(address);
      }
    }
  }
}
