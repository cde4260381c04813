package dev.tessera.gpu.bench;

import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.RuntimeOptions;

/**
 * The first four arguments the kernel benchmarks take: {@code [rows] [deviceGBps] [backend]
 * [codegen]}, the last "codegen" to run the pipelines as their generated kernels
 * (spark.tessera.codegen.enabled), anything else for the interpreter.
 *
 * @param rows the rows of the benchmark's batch
 * @param deviceGBps the device bandwidth its floor is computed at (GB/s, the diagnostic's)
 * @param backend the backend to run on
 * @param codegen whether generated kernels run
 */
record BenchArgs(int rows, double deviceGBps, BackendKind backend, boolean codegen) {
  /**
   * {@code args}' first four where given; else {@code defaultRows}, 4,245 GB/s, cuda and the
   * interpreter.
   */
  static BenchArgs parse(String[] args, int defaultRows) {
    return new BenchArgs(args.length > 0 ? Integer.parseInt(args[0]) : defaultRows,
        args.length > 1 ? Double.parseDouble(args[1]) : 4245,
        BackendKind.fromConfigValue("backend", args.length > 2 ? args[2] : "cuda"),
        args.length > 3 && args[3].equals("codegen"));
  }

  /** The backend's options: these memory caps, and generated kernels where asked for. */
  RuntimeOptions options(long deviceMemoryCap, long pinnedMemoryCap) {
    return RuntimeOptions.defaults().withDeviceMemoryCap(deviceMemoryCap)
        .withPinnedMemoryCap(pinnedMemoryCap).withCodegen(codegen);
  }
}
