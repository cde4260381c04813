package dev.tessera.gpu.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ArenaPoolTest {
  private static final long MiB = 1L << 20;

  /** Hands out fake, far-apart, aligned addresses and records what is outstanding. */
  private static final class FakeChunks implements ChunkAllocator {
    final Map<Long, Long> live = new HashMap<>();
    long next = 1L << 40;
    int allocations;

    @Override
    public synchronized long allocate(long bytes) {
      long address = next;
      next += bytes + (1L << 30);
      live.put(address, bytes);
      allocations++;
      return address;
    }

    @Override
    public synchronized void free(long address, long bytes) {
      assertEquals(bytes, live.remove(address), "chunk freed with the wrong size");
    }

    @Override
    public String describe() {
      return "fake memory";
    }
  }

  /** FakeChunks whose next chunk waits, once {@link #hold} is called, until {@link #release}. */
  private static final class SlowChunks implements ChunkAllocator {
    final FakeChunks chunks = new FakeChunks();
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch released = new CountDownLatch(1);
    volatile boolean holding;

    void hold() {
      holding = true;
    }

    void release() {
      released.countDown();
    }

    @Override
    public long allocate(long bytes) {
      if (holding) {
        entered.countDown();
        try {
          assertTrue(released.await(10, TimeUnit.SECONDS), "the test never released the chunk");
        } catch (InterruptedException e) {
          throw new AssertionError(e);
        }
      }
      return chunks.allocate(bytes);
    }

    @Override
    public void free(long address, long bytes) {
      chunks.free(address, bytes);
    }

    @Override
    public String describe() {
      return "slow fake memory";
    }
  }

  @Test
  void otherThreadsAllocateAndFreeWhileAChunkIsReserved() throws Exception {
    SlowChunks chunks = new SlowChunks();
    ExecutorService other = Executors.newSingleThreadExecutor();
    try (ArenaPool pool = new ArenaPool("test", chunks, 16 * MiB, "cap.setting", 4 * MiB)) {
      long a = pool.allocate(MiB);
      chunks.hold();
      Future<Long> big = other.submit(() -> pool.allocate(8 * MiB));
      assertTrue(chunks.entered.await(10, TimeUnit.SECONDS));
      // The reservation is under way on the other thread: this one is not held up by it.
      long b = assertTimeoutPreemptively(Duration.ofSeconds(5), () -> pool.allocate(MiB));
      assertTimeoutPreemptively(Duration.ofSeconds(5), () -> pool.free(a));
      assertEquals(12 * MiB, pool.reservedBytes(), "the chunk under way counts toward the cap");
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class,
          () -> pool.allocate(5 * MiB));
      assertTrue(e.getMessage().contains("cap.setting"), e.getMessage());
      chunks.release();
      long c = big.get(10, TimeUnit.SECONDS);
      assertEquals(0, c % ArenaPool.ALIGNMENT);
      assertEquals(2, chunks.chunks.allocations);
      assertEquals(12 * MiB, pool.reservedBytes());
      pool.free(b);
      pool.free(c);
      assertEquals(0, pool.bytesInUse());
    } finally {
      other.shutdownNow();
    }
    assertTrue(chunks.chunks.live.isEmpty(), "closing the pool frees every chunk");
  }

  @Test
  void aRequestRefusedWhileAChunkIsReservedIsWokenWhenTheChunkLeavesRoom() throws Exception {
    SlowChunks chunks = new SlowChunks();
    ExecutorService other = Executors.newSingleThreadExecutor();
    try (ArenaPool pool = new ArenaPool("test", chunks, 8 * MiB, "cap", 4 * MiB)) {
      long full = pool.allocate(4 * MiB);
      chunks.hold();
      Future<Long> small = other.submit(() -> pool.allocate(MiB));
      assertTrue(chunks.entered.await(10, TimeUnit.SECONDS));
      // The chunk under way takes the rest of the cap: this request is refused for now.
      long seen = pool.releases();
      assertThrows(PoolExhaustedException.class, () -> pool.allocate(MiB));
      chunks.release();
      long a = small.get(10, TimeUnit.SECONDS);
      // A waiter (MemoryPressure's) wakes for the 3 MiB the new chunk has left, and fits there.
      assertTrue(pool.awaitRelease(seen, 5000), "no wake-up for the new chunk's room");
      long b = pool.allocate(MiB);
      assertEquals(2, chunks.chunks.allocations);
      pool.free(full);
      pool.free(a);
      pool.free(b);
    } finally {
      other.shutdownNow();
    }
  }

  @Test
  void aChunkReservedWhileThePoolClosesIsFreed() throws Exception {
    SlowChunks chunks = new SlowChunks();
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      ArenaPool pool = new ArenaPool("test", chunks, 16 * MiB, "cap", 4 * MiB);
      chunks.hold();
      Future<Long> pending = other.submit(() -> pool.allocate(MiB));
      assertTrue(chunks.entered.await(10, TimeUnit.SECONDS));
      pool.close();
      chunks.release();
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> pending.get(10, TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof IllegalStateException, e.getCause().toString());
      assertTrue(chunks.chunks.live.isEmpty(), "the late chunk went back");
      assertEquals(0, pool.reservedBytes());
    } finally {
      other.shutdownNow();
    }
  }

  @Test
  void growsOnDemandAndAlignsEveryBlock() {
    FakeChunks chunks = new FakeChunks();
    try (ArenaPool pool = new ArenaPool("test", chunks, 64 * MiB, "cap.setting", 4 * MiB)) {
      assertEquals(0, pool.reservedBytes());
      long a = pool.allocate(100);
      long b = pool.allocate(1);
      assertEquals(0, a % ArenaPool.ALIGNMENT);
      assertEquals(0, b % ArenaPool.ALIGNMENT);
      assertEquals(a + ArenaPool.ALIGNMENT, b, "small blocks are packed into one chunk");
      assertEquals(4 * MiB, pool.reservedBytes());
      assertEquals(1, chunks.allocations);
      long big = pool.allocate(10 * MiB);
      assertEquals(2, chunks.allocations, "a large request gets a chunk of its own");
      assertEquals(14 * MiB, pool.reservedBytes());
      pool.free(a);
      pool.free(b);
      pool.free(big);
      assertEquals(0, pool.bytesInUse());
    }
    assertTrue(chunks.live.isEmpty(), "closing the pool frees every chunk");
  }

  @Test
  void capIsEnforcedWithAMessageNamingTheSetting() {
    try (ArenaPool pool = new ArenaPool("device memory", new FakeChunks(), 8 * MiB,
        "spark.tessera.memory.deviceCapBytes", 4 * MiB)) {
      long a = pool.allocate(6 * MiB);
      PoolExhaustedException e =
          assertThrows(PoolExhaustedException.class, () -> pool.allocate(3 * MiB));
      assertTrue(e.getMessage().contains("spark.tessera.memory.deviceCapBytes"), e.getMessage());
      assertTrue(e.getMessage().contains("device memory"), e.getMessage());
      // Under the cap, a smaller request still fits in the space that is left.
      long b = pool.allocate(2 * MiB);
      pool.free(a);
      pool.free(b);
    }
  }

  @Test
  void freedNeighboursCoalesceSoALargerBlockFitsInTheirPlace() {
    FakeChunks chunks = new FakeChunks();
    try (ArenaPool pool = new ArenaPool("test", chunks, 4 * MiB, "cap", 4 * MiB)) {
      long a = pool.allocate(MiB);
      long b = pool.allocate(MiB);
      long c = pool.allocate(MiB);
      long d = pool.allocate(MiB);
      pool.free(b);
      pool.free(a);
      pool.free(c);
      // a, b and c merged back into one 3 MiB block at a's address: nothing else would fit.
      long merged = pool.allocate(3 * MiB);
      assertEquals(a, merged);
      assertEquals(1, chunks.allocations);
      pool.free(merged);
      pool.free(d);
      assertEquals(4 * MiB, pool.trim());
      assertEquals(0, pool.reservedBytes());
      assertTrue(chunks.live.isEmpty());
    }
  }

  @Test
  void reportsHighWaterMarkAndLiveBlocks() {
    try (ArenaPool pool = new ArenaPool("test", new FakeChunks(), 64 * MiB, "cap", 8 * MiB)) {
      long a = pool.allocate(3 * MiB);
      long b = pool.allocate(2 * MiB);
      assertEquals(2, pool.liveBlockCount());
      pool.free(a);
      long c = pool.allocate(MiB);
      assertEquals(5 * MiB, pool.highWaterBytes());
      assertEquals(3 * MiB, pool.bytesInUse());
      pool.free(b);
      pool.free(c);
      assertEquals(0, pool.liveBlockCount());
      assertEquals(5 * MiB, pool.highWaterBytes(), "the high-water mark stays");
    }
  }

  @Test
  void zeroSizeAllocationsTakeNothing() {
    try (ArenaPool pool = new ArenaPool("test", new FakeChunks(), MiB, "cap", MiB)) {
      assertEquals(0L, pool.allocate(0));
      pool.free(0L);
      assertEquals(0, pool.reservedBytes());
    }
  }

  @Test
  void doubleFreeAndUseAfterCloseAreErrors() {
    ArenaPool pool = new ArenaPool("test", new FakeChunks(), MiB, "cap", MiB);
    long a = pool.allocate(10);
    pool.free(a);
    assertThrows(IllegalStateException.class, () -> pool.free(a));
    pool.close();
    assertThrows(IllegalStateException.class, () -> pool.allocate(10));
  }

  @Test
  void randomAllocationsNeverOverlapAndAllComeBack() {
    FakeChunks chunks = new FakeChunks();
    Random random = new Random(42);
    try (ArenaPool pool = new ArenaPool("test", chunks, 4096 * MiB, "cap", 8 * MiB)) {
      List<long[]> live = new ArrayList<>();
      for (int step = 0; step < 5000; step++) {
        if (!live.isEmpty() && random.nextInt(3) == 0) {
          long[] block = live.remove(random.nextInt(live.size()));
          pool.free(block[0]);
        } else {
          long size = 1 + random.nextInt(random.nextBoolean() ? 4096 : 2 * 1024 * 1024);
          live.add(new long[] {pool.allocate(size), size});
        }
      }
      live.sort((x, y) -> Long.compare(x[0], y[0]));
      for (int i = 1; i < live.size(); i++) {
        assertTrue(live.get(i - 1)[0] + live.get(i - 1)[1] <= live.get(i)[0], "blocks overlap");
      }
      for (long[] block : live) {
        pool.free(block[0]);
      }
      assertEquals(0, pool.bytesInUse());
      pool.trim();
      assertEquals(0, pool.reservedBytes(), "every chunk coalesced back to whole and trimmed");
    }
    assertTrue(chunks.live.isEmpty());
  }
}
