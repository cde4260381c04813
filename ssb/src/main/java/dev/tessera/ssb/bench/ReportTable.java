package dev.tessera.ssb.bench;

import java.io.PrintStream;

/** The report as a text table on the terminal. */
public final class ReportTable {
  private ReportTable() {}

  public static void print(BenchReport report, PrintStream out) {
    out.printf("SSB scale factor %s, seed %d, median of %d run(s) after 1 warm-up%n",
        report.scaleFactor(), report.seed(), report.runs());
    out.printf("CPU: Spark's own operators (spark.tessera.enabled=false). Tessera side: %s"
        + " on %s%n", report.tesseraLabel(), report.device());
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
    for (QueryResult r : report.results()) {
      if (!r.matches()) {
        out.printf("MISMATCH in query %s (%s): %s%n", r.query(), r.input(), r.mismatch());
      }
    }
  }
}
