package dev.tessera.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.junit.jupiter.api.Test;

class GpuSemaphoreTest {
  @Test
  void sixteenTasksNeverHoldMoreThanTheLimit() throws Exception {
    GpuSemaphore semaphore = new GpuSemaphore(2);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger mostInside = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> tasks = new ArrayList<>();
      for (long task = 0; task < 16; task++) {
        long id = task;
        tasks.add(pool.submit(() -> {
          start.await();
          assertTrue(semaphore.acquire(id));
          try {
            mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
            assertFalse(semaphore.acquire(id), "a task is admitted again without a permit");
            Thread.sleep(5);
            inside.decrementAndGet();
          } finally {
            semaphore.release(id);
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : tasks) {
        f.get(30, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(2, mostInside.get());
    assertEquals(2, semaphore.mostHolders());
    assertEquals(0, semaphore.holders());
  }

  @Test
  void aTaskWaitsForAPlaceAndGetsTheOneGivenBack() throws Exception {
    GpuSemaphore semaphore = new GpuSemaphore(1);
    assertTrue(semaphore.acquire(1));
    CountDownLatch admitted = new CountDownLatch(1);
    Thread second = new Thread(() -> {
      try {
        semaphore.acquire(2);
        admitted.countDown();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    second.start();
    assertFalse(admitted.await(100, TimeUnit.MILLISECONDS), "admitted past the limit");
    semaphore.release(1);
    assertTrue(admitted.await(10, TimeUnit.SECONDS));
    second.join();
    assertEquals(1, semaphore.holders());
    semaphore.release(2);
    semaphore.release(2); // a second release of the same task gives nothing back twice
    semaphore.release(7); // nor does a task that held nothing
    assertEquals(0, semaphore.holders());
    assertTrue(semaphore.acquire(3));
    CountDownLatch waiting = new CountDownLatch(1);
    Thread blocked = new Thread(() -> {
      waiting.countDown();
      assertThrows(InterruptedException.class, () -> semaphore.acquire(4));
    });
    blocked.start();
    waiting.await();
    blocked.interrupt();
    blocked.join();
    assertEquals(1, semaphore.holders(), "an interrupted wait took a place");
  }

  @Test
  void automaticLimitFromTheDevicePoolAndBatchSize() {
    long mib = 1L << 20;
    assertEquals(126, GpuSemaphore.automaticLimit(63L * 1024 * mib, 128 * mib));
    assertEquals(1, GpuSemaphore.automaticLimit(64 * mib, 128 * mib));
    assertEquals(1, GpuSemaphore.automaticLimit(0, 128 * mib));
    assertEquals(Integer.MAX_VALUE, GpuSemaphore.automaticLimit(Long.MAX_VALUE, 1));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new GpuSemaphore(0));
    assertTrue(e.getMessage().contains("at least 1 task, not 0"), e.getMessage());
  }
}
