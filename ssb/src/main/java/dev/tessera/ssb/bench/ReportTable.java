package dev.tessera.ssb.bench;

import java.io.PrintStream;
import java.util.stream.Collectors;

/** The report as a text table on the terminal. */
public final class ReportTable {
  private ReportTable() {}

  public static void print(BenchReport report, PrintStream out) {
    out.printf("SSB scale factor %s, seed %d, median of %d run(s) after 1 warm-up%n",
        report.scaleFactor(), report.seed(), report.runs());
    out.printf("CPU: Spark's own operators (spark.tessera.enabled=false). Tessera side: %s"
        + " on %s%n", report.tesseraLabel(), report.device());
    if (!report.settings().isEmpty()) {
      out.println("Spark settings (both sides): " + report.settings().entrySet().stream()
          .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(", ")));
    }
    if (report.gpuTimings()) {
      out.printf("Bandwidth floor: bytes the kernels read / %s GB/s (%s)%n",
          Format.fixed(report.peakGbps(), 0), report.peakSource());
    }
    String tesseraHeader = report.gpuTimings() ? "GPU ms" : "host-ref ms*";
    String header = String.format("%-5s %-7s %9s %10s %12s %8s %11s %10s %10s %8s  %s",
        "query", "input", "rows", "CPU ms", tesseraHeader, "speedup", "plan on GPU",
        "GPU bytes", "floor ms", "x floor", "result");
    out.println(header);
    out.println("-".repeat(header.length()));
    for (QueryResult r : report.results()) {
      PlanProfile p = r.profile();
      out.printf("%-5s %-7s %9d %10s %12s %8s %11s %10s %10s %8s  %s%n", r.query(), r.input(),
          r.rows(), Format.fixed(r.cpuMedianMillis(), 1), Format.fixed(r.gpuMedianMillis(), 1),
          Format.orDash(Format.fixed(r.speedUp(), 2)),
          String.format("%d/%d", p.gpuNodes(), p.operatorNodes()),
          Format.bytes(p.gpuBytesRead()),
          Format.orDash(Format.fixed(r.floorMillis(report.peakGbps()), 3)),
          Format.orDash(Format.fixed(r.timesFloor(report.peakGbps()), 1)),
          r.matches() ? "equal" : "MISMATCH");
    }
    if (!report.gpuTimings()) {
      out.println("* " + BenchReport.HOST_REFERENCE_LABEL + ": the Tessera operators ran as plain"
          + " Java on the CPU, to check plans and results; these times say nothing about a GPU.");
    }
    out.println("plan on GPU: Tessera's operator nodes / all operator nodes of the executed plan"
        + " (wrappers and transitions not counted).");
    printTaskTimes(report, out);
    for (QueryResult r : report.results()) {
      if (!r.matches()) {
        out.printf("MISMATCH in query %s (%s): %s%n", r.query(), r.input(), r.mismatch());
      }
    }
  }

  /** Where the Tessera side's task time went, per query: the way in, the kernels, the rest. */
  private static void printTaskTimes(BenchReport report, PrintStream out) {
    if (report.results().stream().noneMatch(r -> r.profile().times().any())) {
      return;
    }
    out.println();
    out.println("Tessera side's task time in ms, summed over the last run's tasks (they run side"
        + " by side): uploads' input (Spark decoding or computing the batches), staging copy and"
        + " transfer; kernels; other copies (downloads, cached columns uploaded); waiting for the"
        + " join tables (built on a thread of their own while a task reads its first batch);"
        + " waiting for a turn on the GPU");
    String format = "%-5s %-7s %12s %12s %12s %12s %12s %14s %12s";
    String header = String.format(format, "query", "input", "input ms", "staging ms",
        "transfer ms", "kernel ms", "other ms", "join tables ms", "GPU wait ms");
    out.println(header);
    out.println("-".repeat(header.length()));
    for (QueryResult r : report.results()) {
      TaskTimes t = r.profile().times();
      out.printf(format + "%n", r.query(), r.input(),
          Format.fixed(t.inputNanos() / 1e6, 1), Format.fixed(t.stagingNanos() / 1e6, 1),
          Format.fixed(t.transferNanos() / 1e6, 1), Format.fixed(t.kernelNanos() / 1e6, 1),
          Format.fixed(t.otherCopyNanos() / 1e6, 1), Format.fixed(t.joinTablesNanos() / 1e6, 1),
          Format.fixed(t.gpuWaitNanos() / 1e6, 1));
    }
  }
}
