package dev.tessera.spark.exec;

import dev.tessera.spark.GpuSemaphore;
import dev.tessera.spark.TesseraRuntime;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.metric.SQLMetric;

/** Admits the running Spark task to the GPU through the executor's {@link GpuSemaphore}. */
final class GpuAdmission {
  private GpuAdmission() {}

  /**
   * Before the current task first takes device memory: waits while as many other tasks as the
   * limit hold the GPU, and gives the permit back when the task ends (after the resources it
   * registers later are closed: Spark runs completion listeners in reverse). A task already
   * admitted, or code running outside a task, goes on at once.
   *
   * @param waitTime gets the time spent waiting, in nanoseconds (null: not counted)
   */
  static void admitCurrentTask(SQLMetric waitTime) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      return; // driver-side evaluation: not a task's memory
    }
    GpuSemaphore semaphore = TesseraRuntime.semaphore();
    long taskId = task.taskAttemptId();
    long started = System.nanoTime();
    boolean admitted;
    try {
      admitted = semaphore.acquire(taskId);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      task.killTaskIfInterrupted(); // a killed task ends as killed
      throw new IllegalStateException("Tessera: interrupted while waiting for the GPU ("
          + semaphore + ")", e);
    }
    if (admitted) {
      if (waitTime != null) {
        waitTime.add(System.nanoTime() - started);
      }
      TaskResources.closeAtTaskEnd(() -> semaphore.release(taskId));
    }
  }
}
