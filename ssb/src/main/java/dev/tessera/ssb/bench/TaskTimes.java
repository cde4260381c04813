package dev.tessera.ssb.bench;

/**
 * Where the Tessera side's task time went in one query, in nanoseconds summed over its tasks
 * (tasks run side by side, so a sum can exceed the query's wall time): the time metrics of
 * Tessera's nodes, added up by kind.
 *
 * @param inputNanos uploads waiting for their input's batches: Spark decoding Parquet, reading a
 *     shuffle or converting rows ({@code inputTime})
 * @param stagingNanos uploads copying Spark's columns into staging buffers ({@code stagingTime})
 * @param transferNanos uploads' host-to-device transfers, waited for ({@code transferTime})
 * @param kernelNanos the GPU kernels ({@code gpuKernelTime})
 * @param otherCopyNanos downloads to the host and cached columns uploaded ({@code copyTime})
 * @param joinTablesNanos tasks waiting for their join tables, which are built (or another task's
 *     build waited for) on a thread of their own while the task reads its first batch
 *     ({@code joinTablesWaitTime})
 * @param gpuWaitNanos tasks waiting for their turn on the GPU ({@code gpuWaitTime},
 *     spark.tessera.concurrentGpuTasks)
 */
public record TaskTimes(long inputNanos, long stagingNanos, long transferNanos, long kernelNanos,
    long otherCopyNanos, long joinTablesNanos, long gpuWaitNanos) {
  public static final TaskTimes NONE = new TaskTimes(0, 0, 0, 0, 0, 0, 0);

  /** The metric names, in the order of the components. */
  static final String INPUT = "inputTime";
  static final String STAGING = "stagingTime";
  static final String TRANSFER = "transferTime";
  static final String KERNEL = "gpuKernelTime";
  static final String OTHER_COPY = "copyTime";
  static final String JOIN_TABLES = "joinTablesWaitTime";
  static final String GPU_WAIT = "gpuWaitTime";

  /** Whether any time was recorded (a plan with no Tessera node has none). */
  public boolean any() {
    return inputNanos + stagingNanos + transferNanos + kernelNanos + otherCopyNanos
        + joinTablesNanos + gpuWaitNanos > 0;
  }

  /** The component named by {@code metric} raised by {@code nanos}; other metrics are ignored. */
  TaskTimes plus(String metric, long nanos) {
    long[] c = {inputNanos, stagingNanos, transferNanos, kernelNanos, otherCopyNanos,
        joinTablesNanos, gpuWaitNanos};
    int at = switch (metric) {
      case INPUT -> 0;
      case STAGING -> 1;
      case TRANSFER -> 2;
      case KERNEL -> 3;
      case OTHER_COPY -> 4;
      case JOIN_TABLES -> 5;
      case GPU_WAIT -> 6;
      default -> -1;
    };
    if (at < 0) {
      return this;
    }
    c[at] += nanos;
    return new TaskTimes(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
  }
}
