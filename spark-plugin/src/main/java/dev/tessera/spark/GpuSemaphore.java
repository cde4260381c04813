package dev.tessera.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Admission to the GPU, one per executor (spark-rapids' {@code GpuSemaphore}): at most
 * {@link #limit()} tasks hold device memory at once. A task is admitted before it first takes
 * device memory and keeps its permit until it ends, so the tasks beyond the limit do their CPU
 * work (reading and staging their first batch) and then wait, instead of all filling the device
 * pool and the pinned staging at once and then splitting batches, waiting on each other or
 * falling back to the CPU.
 *
 * <p>Admission is per task, not per thread: a task that holds a permit is admitted again at once.
 * Fair: tasks are admitted in the order they asked.
 */
public final class GpuSemaphore {
  /** Device memory one admitted task is expected to use, in batches of the target size. */
  static final int BATCHES_PER_TASK = 4;

  private final int limit;
  private final Semaphore permits;
  private final Set<Long> holders = ConcurrentHashMap.newKeySet();
  private final AtomicInteger mostHolders = new AtomicInteger();

  /** @throws IllegalArgumentException if {@code limit} is below 1 */
  public GpuSemaphore(int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("a GPU semaphore admits at least 1 task, not " + limit);
    }
    this.limit = limit;
    this.permits = new Semaphore(limit, true);
  }

  /**
   * The limit when {@link TesseraConf#CONCURRENT_GPU_TASKS} is automatic: as many tasks as the
   * device pool holds {@value #BATCHES_PER_TASK} batches of {@code batchSizeBytes} for (a task's
   * input, its output and what its operators build), at least 1.
   */
  public static int automaticLimit(long deviceCapBytes, long batchSizeBytes) {
    long perTask = BATCHES_PER_TASK * Math.max(1, batchSizeBytes);
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, deviceCapBytes / perTask));
  }

  /**
   * Admits task {@code taskId}, waiting for a permit while {@link #limit()} other tasks hold
   * one.
   *
   * @return true when the task got a permit now (the caller arranges its {@link #release}), false
   *     when it already held one
   * @throws InterruptedException if the thread is interrupted while it waits (a killed task)
   */
  public boolean acquire(long taskId) throws InterruptedException {
    if (holders.contains(taskId)) {
      return false;
    }
    permits.acquire();
    if (!holders.add(taskId)) {
      permits.release(); // another thread of the same task was admitted meanwhile
      return false;
    }
    mostHolders.accumulateAndGet(holders.size(), Math::max);
    return true;
  }

  /** Gives back task {@code taskId}'s permit; does nothing if it holds none. */
  public void release(long taskId) {
    if (holders.remove(taskId)) {
      permits.release();
    }
  }

  public int limit() {
    return limit;
  }

  /** The tasks holding a permit now. */
  public int holders() {
    return holders.size();
  }

  /** The most tasks that held a permit at once since the semaphore was made. */
  public int mostHolders() {
    return mostHolders.get();
  }

  @Override
  public String toString() {
    return "GPU semaphore: " + holders() + " of " + limit + " tasks admitted (at most "
        + mostHolders() + " at once so far)";
  }
}
