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
 */
public record TaskTimes(long inputNanos, long stagingNanos, long transferNanos, long kernelNanos,
    long otherCopyNanos) {
  public static final TaskTimes NONE = new TaskTimes(0, 0, 0, 0, 0);

  /** The metric names, in the order of the components. */
  static final String INPUT = "inputTime";
  static final String STAGING = "stagingTime";
  static final String TRANSFER = "transferTime";
  static final String KERNEL = "gpuKernelTime";
  static final String OTHER_COPY = "copyTime";

  /** Whether any time was recorded (a plan with no Tessera node has none). */
  public boolean any() {
    return inputNanos + stagingNanos + transferNanos + kernelNanos + otherCopyNanos > 0;
  }

  /** The component named by {@code metric} raised by {@code nanos}; other metrics are ignored. */
  TaskTimes plus(String metric, long nanos) {
    return switch (metric) {
      case INPUT -> new TaskTimes(inputNanos + nanos, stagingNanos, transferNanos, kernelNanos,
          otherCopyNanos);
      case STAGING -> new TaskTimes(inputNanos, stagingNanos + nanos, transferNanos, kernelNanos,
          otherCopyNanos);
      case TRANSFER -> new TaskTimes(inputNanos, stagingNanos, transferNanos + nanos, kernelNanos,
          otherCopyNanos);
      case KERNEL -> new TaskTimes(inputNanos, stagingNanos, transferNanos, kernelNanos + nanos,
          otherCopyNanos);
      case OTHER_COPY -> new TaskTimes(inputNanos, stagingNanos, transferNanos, kernelNanos,
          otherCopyNanos + nanos);
      default -> this;
    };
  }
}
