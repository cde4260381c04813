package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.memory.PoolExhaustedException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.junit.jupiter.api.Test;

/**
 * A task's join tables acquired on another thread ({@link TaskJoinTables#acquireInBackground}):
 * the task gets them, or the acquisition's own exception, and the time of each side is counted.
 */
class TaskJoinTablesPendingTest {
  private final SQLMetric acquiring = new SQLMetric("timing", 0L);
  private final SQLMetric waiting = new SQLMetric("timing", 0L);

  @Test
  void aTaskWithoutTablesStartsNothingAndWaitsForNothing() {
    try (TaskJoinTables.Pending pending =
        TaskJoinTables.acquireInBackground(List.of(), List.of(), null)) {
      TaskJoinTables tables = pending.get(acquiring, waiting);
      assertTrue(tables.relations().isEmpty());
      assertEquals(0, acquiring.value());
    }
  }

  @Test
  void theTaskWaitsForAnAcquisitionUnderWayAndCountsBothTimes() throws Exception {
    CountDownLatch asked = new CountDownLatch(1);
    TaskJoinTables none = TaskJoinTables.acquireInBackground(List.of(), List.of(), null)
        .get(new SQLMetric("timing", 0L), new SQLMetric("timing", 0L));
    CompletableFuture<TaskJoinTables.Acquired> future = CompletableFuture.supplyAsync(() -> {
      try {
        assertTrue(asked.await(10, TimeUnit.SECONDS));
        Thread.sleep(50);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      return new TaskJoinTables.Acquired(none, 123_456_789L);
    });
    try (TaskJoinTables.Pending pending = new TaskJoinTables.Pending(future)) {
      asked.countDown();
      assertSame(none, pending.get(acquiring, waiting));
      assertEquals(123_456_789L, acquiring.value(), "the acquisition's own time");
      assertTrue(waiting.value() >= 40_000_000L, "the task waited: " + waiting.value());
    }
  }

  @Test
  void theAcquisitionsExceptionReachesTheTaskAsItself() {
    PoolExhaustedException error = new PoolExhaustedException("no room for the join table");
    CompletableFuture<TaskJoinTables.Acquired> future = CompletableFuture.supplyAsync(() -> {
      throw error;
    });
    try (TaskJoinTables.Pending pending = new TaskJoinTables.Pending(future)) {
      // Memory pressure is handled by what catches PoolExhaustedException: it must not arrive
      // wrapped in the future's CompletionException.
      assertSame(error, assertThrows(PoolExhaustedException.class,
          () -> pending.get(acquiring, waiting)));
    }
  }
}
