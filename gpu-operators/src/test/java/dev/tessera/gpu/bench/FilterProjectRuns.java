package dev.tessera.gpu.bench;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.kernels.ProgramKernel;
import java.util.Arrays;

/**
 * The timing loop the filter-project benchmarks share: a program run over one device batch, 2
 * warm-up runs then 10 timed ones (device events on CUDA), and the lines they print.
 *
 * @param medianMillis the median kernel time of the timed runs
 * @param minMillis the fastest
 * @param maxMillis the slowest
 * @param kept the rows the program's filter kept
 */
record FilterProjectRuns(double medianMillis, double minMillis, double maxMillis, long kept) {
  private static final int WARM_UP = 2;
  private static final int RUNS = 10;

  /** Times {@code program} over {@code input} on {@code backend}'s filter-project kernel. */
  static FilterProjectRuns time(Backend backend, GpuStream stream, Program program,
      ColumnBatch<DeviceColumn> input) {
    ProgramKernel kernel = backend.programKernel();
    double[] millis = new double[RUNS];
    long kept = 0;
    for (int i = 0; i < WARM_UP + RUNS; i++) {
      try (ColumnBatch<DeviceColumn> out =
          kernel.run(program, input, backend.deviceMemory(), stream)) {
        kept = out.rowCount();
      }
      if (i >= WARM_UP) {
        millis[i - WARM_UP] = kernel.lastKernelNanos() / 1e6;
      }
    }
    Arrays.sort(millis);
    return new FilterProjectRuns(millis[RUNS / 2], millis[0], millis[RUNS - 1], kept);
  }

  /**
   * Prints the runs' times over {@code run}'s rows, and the bandwidth floor: {@code bytes} (what
   * the kernel must read and write) at {@code run}'s device bandwidth.
   */
  void print(BenchArgs run, long bytes) {
    long rows = run.rows();
    double deviceGBps = run.deviceGBps();
    double floorMillis = bytes / (deviceGBps * 1e9) * 1e3;
    System.out.printf("rows %,d  kept %,d  median %.3f ms (min %.3f, max %.3f)%n", rows, kept,
        medianMillis, minMillis, maxMillis);
    System.out.printf("%.2f G rows/s  %.1f GB/s effective  bandwidth floor %.3f ms"
        + " (%,d bytes at %.0f GB/s): %.1fx the floor%n", rows / medianMillis / 1e6,
        bytes / medianMillis / 1e6, floorMillis, bytes, deviceGBps, medianMillis / floorMillis);
  }
}
