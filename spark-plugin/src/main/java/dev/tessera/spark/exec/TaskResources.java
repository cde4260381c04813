package dev.tessera.spark.exec;

import org.apache.spark.TaskContext;

/** Ties a resource's lifetime to the Spark task that uses it. */
final class TaskResources {
  private TaskResources() {}

  /** Closes {@code resource} when the current task ends (now, if there is no task). */
  static void closeAtTaskEnd(AutoCloseable resource) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      return; // driver-side evaluation: the caller closes it
    }
    task.addTaskCompletionListener(context -> {
      try {
        resource.close();
      } catch (Exception e) {
        throw new IllegalStateException("closing a Tessera task resource failed", e);
      }
    });
  }
}
