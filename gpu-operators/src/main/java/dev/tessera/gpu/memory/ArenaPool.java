package dev.tessera.gpu.memory;

import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A memory arena: takes large chunks from a {@link ChunkAllocator} on demand, up to a cap, and
 * sub-allocates them best-fit with coalescing of neighbouring free blocks. Per-batch buffers come
 * from here, never from cuMemAlloc directly (DESIGN.md §2).
 *
 * <p>Addresses are aligned to {@link #ALIGNMENT} bytes, enough for any vector load a kernel makes.
 * Thread-safe. Chunks are kept until {@link #trim()} or {@link #close()}.
 */
public final class ArenaPool implements AutoCloseable {
  /** Alignment of every block; 256 bytes is what cudaMalloc guarantees too. */
  public static final long ALIGNMENT = 256;

  private static final Logger LOG = LoggerFactory.getLogger(ArenaPool.class);
  private static final Comparator<FreeBlock> BY_SIZE_THEN_ADDRESS =
      Comparator.comparingLong(FreeBlock::size).thenComparingLong(FreeBlock::address);

  private record FreeBlock(long address, long size) {}

  private record Chunk(long address, long size) {
    boolean contains(long a) {
      return a >= address && a < address + size;
    }
  }

  private final String name;
  private final ChunkAllocator chunks;
  private final long capBytes;
  private final String capSetting;
  private final long chunkBytes;

  private final TreeMap<Long, Chunk> chunkByAddress = new TreeMap<>();
  private final TreeMap<Long, Long> freeByAddress = new TreeMap<>();
  private final TreeSet<FreeBlock> freeBySize = new TreeSet<>(BY_SIZE_THEN_ADDRESS);
  private final Map<Long, Long> liveBlocks = new HashMap<>();
  /** The thread that allocated each live block, and the bytes each thread holds. */
  private final Map<Long, Long> ownerByAddress = new HashMap<>();
  private final Map<Long, Long> bytesByOwner = new HashMap<>();
  /**
   * Blocks freed so far, and chunks added with room to spare: a waiter for memory retries when it
   * has grown.
   */
  private long releases;
  private long reservedBytes;
  private long bytesInUse;
  private long highWaterBytes;
  private boolean closed;

  /**
   * @param name what the pool holds, for messages ("device memory", "pinned host memory")
   * @param chunks where chunks come from
   * @param capBytes the most this pool may reserve from {@code chunks}
   * @param capSetting the setting a user changes to raise the cap, named in the error when it is hit
   * @param chunkBytes the usual size of a new chunk (a larger request gets a chunk of its own size)
   */
  public ArenaPool(
      String name, ChunkAllocator chunks, long capBytes, String capSetting, long chunkBytes) {
    if (capBytes <= 0) {
      throw new IllegalArgumentException(capSetting + " must be positive, was " + capBytes);
    }
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size must be positive, was " + chunkBytes);
    }
    this.name = name;
    this.chunks = chunks;
    this.capBytes = capBytes;
    this.capSetting = capSetting;
    this.chunkBytes = alignUp(Math.min(chunkBytes, capBytes));
  }

  /**
   * Allocates {@code bytes} (0 is allowed and returns address 0) and returns the address. When no
   * free block fits, it reserves a new chunk without holding the pool's lock (pinning host memory
   * takes tens of milliseconds per chunk), so other threads' allocations from free blocks and
   * their frees go on meanwhile.
   */
  public long allocate(long bytes) {
    if (bytes < 0) {
      throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
    }
    if (bytes == 0) {
      synchronized (this) {
        checkOpen();
      }
      return 0L;
    }
    long size = alignUp(bytes);
    long chunkSize;
    synchronized (this) {
      checkOpen();
      FreeBlock block = freeBySize.ceiling(new FreeBlock(Long.MIN_VALUE, size));
      if (block != null) {
        return take(block, size);
      }
      chunkSize = chunkSizeFor(size);
      reservedBytes += chunkSize; // counted now, so reservations under way keep to the cap
    }
    long address;
    try {
      address = reserveChunk(chunkSize, size);
    } catch (RuntimeException | Error e) {
      synchronized (this) {
        if (!closed) { // close() has zeroed the count
          reservedBytes -= chunkSize;
        }
      }
      throw e;
    }
    synchronized (this) {
      if (closed) { // while the chunk was reserved: close() has zeroed the count
        chunks.free(address, chunkSize);
        checkOpen();
      }
      chunkByAddress.put(address, new Chunk(address, chunkSize));
      addFree(address, chunkSize);
      if (chunkSize > size) {
        // What this request leaves of the chunk is free memory a waiter may retry for (a request
        // refused while this reservation counted toward the cap, say): as a release is.
        releases++;
        notifyAll();
      }
      // The whole chunk is still free (the lock was not released since it was added): take from
      // it, not from memory another thread freed meanwhile, so the chunk is put to use.
      return take(new FreeBlock(address, chunkSize), size);
    }
  }

  /** Hands out the first {@code size} bytes of free block {@code block}. */
  private long take(FreeBlock block, long size) {
    removeFree(block);
    if (block.size() > size) {
      addFree(block.address() + size, block.size() - size);
    }
    liveBlocks.put(block.address(), size);
    long owner = Thread.currentThread().getId();
    ownerByAddress.put(block.address(), owner);
    bytesByOwner.merge(owner, size, Long::sum);
    bytesInUse += size;
    highWaterBytes = Math.max(highWaterBytes, bytesInUse);
    return block.address();
  }

  /** Returns a block to the pool. Address 0 (a zero-size allocation) is ignored. */
  public synchronized void free(long address) {
    if (address == 0L || closed) {
      return; // after close: the chunks of blocks in use were left allocated (see close)
    }
    Long size = liveBlocks.remove(address);
    if (size == null) {
      throw new IllegalStateException(
          name + ": address 0x" + Long.toHexString(address) + " is not an allocated block"
              + " (freed twice, or from another pool)");
    }
    bytesInUse -= size;
    Long owner = ownerByAddress.remove(address);
    if (owner != null && bytesByOwner.merge(owner, -size, Long::sum) == 0) {
      bytesByOwner.remove(owner);
    }
    releases++;
    notifyAll();
    long start = address;
    long length = size;
    Chunk chunk = chunkOf(address);
    Map.Entry<Long, Long> before = freeByAddress.floorEntry(address);
    if (before != null
        && before.getKey() + before.getValue() == address
        && chunk.contains(before.getKey())) {
      removeFree(new FreeBlock(before.getKey(), before.getValue()));
      start = before.getKey();
      length += before.getValue();
    }
    Long afterSize = freeByAddress.get(address + size);
    if (afterSize != null && chunk.contains(address + size)) {
      removeFree(new FreeBlock(address + size, afterSize));
      length += afterSize;
    }
    addFree(start, length);
  }

  /** Gives wholly free chunks back to the chunk allocator; returns the bytes released. */
  public synchronized long trim() {
    checkOpen();
    long released = 0;
    Iterator<Chunk> it = chunkByAddress.values().iterator();
    while (it.hasNext()) {
      Chunk chunk = it.next();
      Long free = freeByAddress.get(chunk.address());
      if (free != null && free == chunk.size()) {
        removeFree(new FreeBlock(chunk.address(), chunk.size()));
        chunks.free(chunk.address(), chunk.size());
        reservedBytes -= chunk.size();
        released += chunk.size();
        it.remove();
      }
    }
    return released;
  }

  /** Bytes handed out and not yet freed (aligned sizes). */
  public synchronized long bytesInUse() {
    return bytesInUse;
  }

  /**
   * Bytes in use that threads other than the calling one allocated (other tasks, or tables
   * they built): memory that may come back without this thread freeing anything.
   */
  public synchronized long bytesInUseByOtherThreads() {
    return bytesInUse - bytesByOwner.getOrDefault(Thread.currentThread().getId(), 0L);
  }

  /**
   * How many blocks were freed (or chunks added with room to spare) so far; pass it to
   * {@link #awaitRelease}.
   */
  public synchronized long releases() {
    return releases;
  }

  /**
   * Waits until a block is freed after {@link #releases()} returned {@code seen}, at most
   * {@code timeoutMillis}.
   *
   * @return whether a block was freed since then (false on timeout or interrupt)
   */
  public synchronized boolean awaitRelease(long seen, long timeoutMillis) {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (releases == seen && !closed) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        return false;
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return releases != seen;
  }

  /** The setting that raises this pool's cap. */
  public String capSetting() {
    return capSetting;
  }

  /** Number of blocks handed out and not yet freed. */
  public synchronized int liveBlockCount() {
    return liveBlocks.size();
  }

  /** Bytes reserved from the chunk allocator. */
  public synchronized long reservedBytes() {
    return reservedBytes;
  }

  /** The most bytes that were ever in use at once. */
  public synchronized long highWaterBytes() {
    return highWaterBytes;
  }

  public long capBytes() {
    return capBytes;
  }

  public String name() {
    return name;
  }

  /** Frees every chunk. Blocks still in use are reported as leaks and freed with their chunks. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    notifyAll();
    if (liveBlocks.isEmpty()) {
      for (Chunk chunk : chunkByAddress.values()) {
        chunks.free(chunk.address(), chunk.size());
      }
    } else {
      // A task may still run (an executor stopping under a failed job): freeing memory it
      // writes to would crash the JVM, so the chunks are left to the process's exit.
      LOG.error("{}: closed with {} blocks ({} bytes) still in use (a buffer was leaked, or a"
          + " task still runs); its {} bytes of chunks are not freed", name, liveBlocks.size(),
          bytesInUse, reservedBytes);
    }
    chunkByAddress.clear();
    freeByAddress.clear();
    freeBySize.clear();
    liveBlocks.clear();
    ownerByAddress.clear();
    bytesByOwner.clear();
    reservedBytes = 0;
    bytesInUse = 0;
  }

  /**
   * The size of the chunk to reserve for a request of {@code minimumSize} bytes: the usual chunk,
   * or what is left under the cap if that is smaller but enough, or the request's own size.
   */
  private long chunkSizeFor(long minimumSize) {
    long size = Math.max(chunkBytes, minimumSize);
    if (reservedBytes + size > capBytes) {
      // A smaller chunk that still fits the request may fit under the cap.
      size = Math.max(minimumSize, capBytes - reservedBytes);
    }
    if (reservedBytes + size > capBytes) {
      throw new PoolExhaustedException(String.format(
          "%s: cannot allocate %,d bytes: %,d bytes in use and %,d reserved of the cap of %,d bytes."
              + " Raise %s, or use smaller batches.",
          name, minimumSize, bytesInUse, reservedBytes, capBytes, capSetting));
    }
    return size;
  }

  /** Reserves a chunk of {@code size} bytes from the chunk allocator, outside the pool's lock. */
  private long reserveChunk(long size, long minimumSize) {
    long address;
    long started = System.nanoTime();
    try {
      address = chunks.allocate(size);
    } catch (PoolExhaustedException e) {
      throw new PoolExhaustedException(String.format(
          "%s: cannot allocate %,d bytes: %s (%,d bytes in use, %,d reserved)",
          name, minimumSize, e.getMessage(), bytesInUse(), reservedBytes()), e);
    }
    if (address % ALIGNMENT != 0) {
      chunks.free(address, size);
      throw new IllegalStateException(chunks.describe() + " returned a chunk at 0x"
          + Long.toHexString(address) + ", not aligned to " + ALIGNMENT + " bytes");
    }
    // Rare (the pool keeps its chunks); logged where it took long, as the thread that asked waits.
    long millis = (System.nanoTime() - started) / 1_000_000;
    if (millis > 0) {
      LOG.info("Tessera: {}: reserved a chunk of {} bytes in {} ms ({} bytes reserved of the cap"
          + " of {})", name, size, millis, reservedBytes(), capBytes);
    }
    return address;
  }

  private Chunk chunkOf(long address) {
    Map.Entry<Long, Chunk> entry = chunkByAddress.floorEntry(address);
    if (entry == null || !entry.getValue().contains(address)) {
      throw new IllegalStateException(name + ": 0x" + Long.toHexString(address) + " is in no chunk");
    }
    return entry.getValue();
  }

  private void addFree(long address, long size) {
    freeByAddress.put(address, size);
    freeBySize.add(new FreeBlock(address, size));
  }

  private void removeFree(FreeBlock block) {
    freeByAddress.remove(block.address());
    freeBySize.remove(block);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(name + " pool is closed");
    }
  }

  static long alignUp(long bytes) {
    return (bytes + ALIGNMENT - 1) & -ALIGNMENT;
  }
}
