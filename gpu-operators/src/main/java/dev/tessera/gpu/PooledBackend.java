package dev.tessera.gpu;

import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.StagingAllocators;
import org.apache.arrow.memory.BufferAllocator;

/**
 * What both backends hold the same way: a device-memory pool, a pinned-memory pool and the Arrow
 * staging allocator over it, closed in that order (staging first, so a leaked staging buffer is
 * reported before its memory goes).
 */
public abstract class PooledBackend implements Backend {
  private final ArenaPool deviceMemory;
  private final ArenaPool pinnedMemory;
  private final BufferAllocator staging;
  private boolean closed;

  /** Takes ownership of both pools. */
  protected PooledBackend(ArenaPool deviceMemory, ArenaPool pinnedMemory) {
    this.deviceMemory = deviceMemory;
    this.pinnedMemory = pinnedMemory;
    this.staging = StagingAllocators.rootOver(pinnedMemory);
  }

  @Override
  public final ArenaPool deviceMemory() {
    return deviceMemory;
  }

  @Override
  public final ArenaPool pinnedMemory() {
    return pinnedMemory;
  }

  @Override
  public final BufferAllocator stagingAllocator() {
    return staging;
  }

  /** Releases what the backend holds besides its pools (the device); called last by close. */
  protected void releaseDevice() {}

  @Override
  public final synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    // Memory still in use means a task still runs: its device (and the pinned memory that
    // belongs to it) must outlive the backend, or that task would crash the JVM.
    boolean inUse = pinnedMemory.liveBlockCount() > 0 || deviceMemory.liveBlockCount() > 0;
    try {
      staging.close();
    } finally {
      try {
        pinnedMemory.close();
        deviceMemory.close();
      } finally {
        if (!inUse) {
          releaseDevice();
        }
      }
    }
  }
}
