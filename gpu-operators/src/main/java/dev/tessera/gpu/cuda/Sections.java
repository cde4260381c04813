package dev.tessera.gpu.cuda;

import dev.tessera.gpu.memory.ArenaPool;

/**
 * Byte offsets of the sections of one device or staging buffer (a plan, a work area), each
 * aligned to the pool's alignment so that every section starts where coalesced loads want it.
 */
final class Sections {
  private long size;

  /** Rounds {@code offset} up to the pool's alignment. */
  static long alignUp(long offset) {
    return (offset + ArenaPool.ALIGNMENT - 1) / ArenaPool.ALIGNMENT * ArenaPool.ALIGNMENT;
  }

  /** Adds a section of {@code bytes} and returns its offset. */
  long add(long bytes) {
    long at = alignUp(size);
    size = at + bytes;
    return at;
  }

  /** The bytes the sections need together. */
  long size() {
    return size;
  }
}
