package dev.tessera.gpu.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The executor's device store: shared, reference-counted entries under one cap, evicted least
 * recently used first, never under a lease; every object built is closed exactly once.
 */
class DeviceStoreTest {
  private static final long CAP = 1000;

  private final List<Fake> built = new ArrayList<>();
  private final DeviceStore store = new DeviceStore("test store", CAP);

  /** A stored object of a given size that counts its closes. */
  private static final class Fake implements AutoCloseable {
    final String key;
    final long bytes;
    final AtomicInteger closes = new AtomicInteger();

    Fake(String key, long bytes) {
      this.key = key;
      this.bytes = bytes;
    }

    boolean closed() {
      return closes.get() > 0;
    }

    @Override
    public void close() {
      closes.incrementAndGet();
    }
  }

  private DeviceStore.Lease<Fake> acquire(String key, long bytes) {
    return store.acquire(key, () -> build(key, bytes), f -> f.bytes);
  }

  private synchronized Fake build(String key, long bytes) {
    Fake f = new Fake(key, bytes);
    built.add(f);
    return f;
  }

  /** A build of {@code key} that counts {@code building} down, then waits for {@code finish}. */
  private Supplier<Fake> slowBuild(String key, long bytes, CountDownLatch building,
      CountDownLatch finish) {
    return () -> {
      building.countDown();
      await(finish);
      return build(key, bytes);
    };
  }

  /**
   * A lease of {@code key} taken and released on a thread of its own, whose build, once under way
   * (the constructor waits for that), is held until {@link #finish}.
   */
  private final class HeldBuild implements AutoCloseable {
    private final CountDownLatch building = new CountDownLatch(1);
    private final CountDownLatch finish = new CountDownLatch(1);
    private final ExecutorService thread = Executors.newSingleThreadExecutor();
    /** The value the lease held. */
    final Future<Fake> result;

    HeldBuild(String key) throws InterruptedException {
      result = thread.submit(() -> {
        try (DeviceStore.Lease<Fake> l =
            store.acquire(key, slowBuild(key, 10, building, finish), f -> f.bytes)) {
          return l.value();
        }
      });
      assertTrue(building.await(10, TimeUnit.SECONDS));
    }

    void finish() {
      finish.countDown();
    }

    @Override
    public void close() {
      finish.countDown();
      thread.shutdownNow();
    }
  }

  /** Acquires and releases at once: the entry stays, idle. */
  private void touch(String key, long bytes) {
    acquire(key, bytes).close();
  }

  private Fake builtAs(String key) {
    return built.stream().filter(f -> f.key.equals(key)).reduce((a, b) -> b).orElseThrow();
  }

  @AfterEach
  void everythingBuiltIsClosedExactlyOnce() {
    store.close();
    assertEquals(0, store.stats().entries());
    assertEquals(0, store.stats().bytes());
    for (Fake f : built) {
      assertEquals(1, f.closes.get(), f.key + " closed " + f.closes.get() + " times");
    }
  }

  @Test
  void tasksOfOneKeyShareOneObject() {
    try (DeviceStore.Lease<Fake> a = acquire("t", 100);
        DeviceStore.Lease<Fake> b = acquire("t", 100)) {
      assertSame(a.value(), b.value());
    }
    // Idle now, but kept for the next wave of tasks.
    try (DeviceStore.Lease<Fake> c = acquire("t", 100)) {
      assertEquals(1, built.size());
      assertFalse(c.value().closed());
    }
  }

  @Test
  void differentKeysDoNotShare() {
    try (DeviceStore.Lease<Fake> a = acquire("app-1/0", 10);
        DeviceStore.Lease<Fake> b = acquire("app-2/0", 10)) {
      assertNotSame(a.value(), b.value());
    }
  }

  @Test
  void overTheCapTheLeastRecentlyUsedGoFirst() {
    touch("a", 300);
    touch("b", 300);
    touch("c", 300);
    touch("a", 300); // a is now more recent than b
    touch("d", 300); // 1200 > 1000: b goes, the least recently used
    assertTrue(builtAs("b").closed());
    assertFalse(builtAs("a").closed() || builtAs("c").closed() || builtAs("d").closed());
    assertEquals(3, store.stats().entries());
    assertEquals(900, store.stats().bytes());
    touch("e", 300); // then c
    assertTrue(builtAs("c").closed());
    assertFalse(builtAs("a").closed());
  }

  @Test
  void aReferencedEntryIsNeverEvicted() {
    try (DeviceStore.Lease<Fake> held = acquire("held", 600)) {
      touch("x", 300);
      touch("y", 300); // 1200: x goes, held stays
      assertTrue(builtAs("x").closed());
      assertFalse(held.value().closed());
      try (DeviceStore.Lease<Fake> big = acquire("big", 900)) {
        // Everything left is referenced: over the cap for a while.
        assertTrue(builtAs("y").closed());
        assertEquals(1500, store.stats().bytes());
        assertFalse(big.value().closed());
      }
      // big's last lease went while over the cap: it is the idle one to go.
      assertTrue(builtAs("big").closed());
      assertFalse(held.value().closed());
      assertEquals(600, store.stats().bytes());
    }
    assertFalse(builtAs("held").closed());
  }

  @Test
  void anEntryLargerThanTheCapServesItsLeasesThenGoes() {
    assertTrue(store.fits(CAP));
    assertFalse(store.fits(CAP + 1));
    touch("small", 100);
    try (DeviceStore.Lease<Fake> a = acquire("huge", 5000);
        DeviceStore.Lease<Fake> b = acquire("huge", 5000)) {
      assertSame(a.value(), b.value());
      assertTrue(builtAs("small").closed(), "the idle entries made room");
      assertFalse(a.value().closed());
    }
    assertTrue(builtAs("huge").closed());
    assertEquals(0, store.stats().entries());
  }

  @Test
  void tasksAskingAtOnceBuildOnce() throws Exception {
    int threads = 8;
    CountDownLatch building = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    AtomicInteger builds = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Fake>> results = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        results.add(pool.submit(() -> {
          Supplier<Fake> slow = slowBuild("k", 10, building, finish);
          try (DeviceStore.Lease<Fake> l = store.acquire("k", () -> {
            builds.incrementAndGet();
            return slow.get();
          }, f -> f.bytes)) {
            return l.value();
          }
        }));
      }
      assertTrue(building.await(10, TimeUnit.SECONDS));
      Thread.sleep(50); // let the others reach the store and wait
      finish.countDown();
      Fake first = results.get(0).get(10, TimeUnit.SECONDS);
      for (Future<Fake> r : results) {
        assertSame(first, r.get(10, TimeUnit.SECONDS));
      }
      assertSame(builtAs("k"), first);
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, builds.get());
    assertEquals(1, store.stats().misses());
    assertEquals(threads - 1, store.stats().hits());
  }

  @Test
  void aTaskThatWillNotWaitSkipsAnEntryUnderConstructionAndBuildsAnother() throws Exception {
    try (HeldBuild builder = new HeldBuild("a")) {
      // "a" is being built by the other thread: no lease, no reference taken, nothing built.
      assertNull(store.acquireUnlessBuilding("a", () -> build("a", 10), f -> f.bytes));
      // "b" is absent: this thread builds it meanwhile.
      try (DeviceStore.Lease<Fake> b =
          store.acquireUnlessBuilding("b", () -> build("b", 20), f -> f.bytes)) {
        assertSame(builtAs("b"), b.value());
        builder.finish();
        Fake a = builder.result.get(10, TimeUnit.SECONDS);
        // Built now: taken without building it again.
        try (DeviceStore.Lease<Fake> again =
            store.acquireUnlessBuilding("a", () -> build("a", 10), f -> f.bytes)) {
          assertSame(a, again.value());
        }
      }
    }
    assertEquals(2, built.size());
    assertEquals(2, store.stats().misses());
    assertEquals(1, store.stats().hits());
    assertEquals(2, store.stats().entries()); // idle, both kept: one release each
  }

  @Test
  void aFailedBuildFailsItsWaitersAndLeavesNothing() throws Exception {
    CountDownLatch building = new CountDownLatch(1);
    CountDownLatch fail = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<?> builder = pool.submit(() -> store.acquire("k", () -> {
        building.countDown();
        await(fail);
        throw new IllegalStateException("no memory");
      }, (Fake f) -> f.bytes));
      assertTrue(building.await(10, TimeUnit.SECONDS));
      Future<?> waiter = pool.submit(() -> acquire("k", 10));
      while (store.stats().hits() == 0) { // the waiter found the entry being built
        Thread.sleep(1);
      }
      fail.countDown();
      for (Future<?> f : List.of(builder, waiter)) {
        Exception e = assertThrows(Exception.class, () -> f.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException, e.toString());
        assertEquals("no memory", e.getCause().getMessage());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(0, store.stats().entries());
    assertTrue(built.isEmpty());
    // The next task builds it afresh.
    try (DeviceStore.Lease<Fake> l = acquire("k", 10)) {
      assertSame(built.get(0), l.value());
    }
  }

  @Test
  void anObjectWhoseSizeCannotBeTakenIsClosed() {
    assertThrows(IllegalArgumentException.class,
        () -> store.acquire("k", () -> build("k", -1), f -> f.bytes));
    assertTrue(builtAs("k").closed());
    assertEquals(0, store.stats().entries());
  }

  @Test
  void removeIfClosesIdleEntriesNowAndHeldOnesOnRelease() {
    touch("table-1/a", 100);
    touch("other", 100);
    DeviceStore.Lease<Fake> held = acquire("table-1/b", 100);
    assertEquals(2, store.removeIf(k -> ((String) k).startsWith("table-1/")));
    assertTrue(builtAs("table-1/a").closed());
    assertFalse(held.value().closed(), "a task still reads it");
    assertFalse(builtAs("other").closed());
    // Not found any more: a new acquire builds a new one.
    try (DeviceStore.Lease<Fake> fresh = acquire("table-1/b", 100)) {
      assertNotSame(held.value(), fresh.value());
    }
    Fake old = held.value();
    held.close();
    assertTrue(old.closed());
    held.close(); // idempotent
    assertEquals(1, old.closes.get());
    assertEquals(2, store.stats().entries()); // other and the new table-1/b
    assertEquals(0, store.stats().evictions());
  }

  @Test
  void evictIdleClosesWhatNoTaskHolds() {
    touch("a", 10);
    touch("b", 10);
    try (DeviceStore.Lease<Fake> held = acquire("c", 10)) {
      assertEquals(2, store.evictIdle());
      assertTrue(builtAs("a").closed() && builtAs("b").closed());
      assertFalse(held.value().closed());
      assertEquals(0, store.evictIdle());
    }
    assertEquals(2, store.stats().evictions());
    assertEquals(1, store.stats().entries());
  }

  @Test
  void statsCountHitsMissesAndEvictions() {
    touch("a", 600);
    touch("a", 600);
    touch("b", 600); // a goes
    touch("a", 600); // built again, b goes
    DeviceStore.Stats s = store.stats();
    assertEquals(1, s.entries());
    assertEquals(600, s.bytes());
    assertEquals(1, s.hits());
    assertEquals(3, s.misses());
    assertEquals(2, s.evictions());
    assertEquals(CAP, s.capBytes());
    assertEquals("test store: 1 entries, 600 B of 1000 B, 1 hits, 3 misses, 2 evictions",
        s.toString());
    assertTrue(new DeviceStore("s", 3L << 30).stats().toString().contains("0 B of 3.0 GiB"));
  }

  @Test
  void closeClosesEverythingOnceEvenUnderALease() {
    touch("idle", 10);
    DeviceStore.Lease<Fake> held = acquire("held", 10);
    store.close();
    assertTrue(builtAs("idle").closed() && builtAs("held").closed());
    held.close(); // after the store: must not close it again
    store.close();
    assertThrows(IllegalStateException.class, () -> acquire("new", 10));
  }

  @Test
  void aBuildThatEndsAfterCloseIsClosedByItsBuilder() throws Exception {
    try (HeldBuild builder = new HeldBuild("k")) {
      store.close();
      builder.finish();
      Exception e = assertThrows(Exception.class, () -> builder.result.get(10, TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof IllegalStateException, e.toString());
    }
    assertTrue(builtAs("k").closed());
  }

  @Test
  void aNegativeCapIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new DeviceStore("s", -1));
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("timed out");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
