package dev.tessera.ssb.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The report as CSV, one row per query and input. Times in ms (medians); empty cells for values
 * that do not apply; {@code *_task_ms} are summed over the query's tasks ({@link TaskTimes}). The {@code tessera_timings} column says what the {@code gpu_ms} times are:
 * GPU timings, or {@value BenchReport#HOST_REFERENCE_LABEL}.
 */
public final class CsvReport {
  static final String HEADER = "query,input,rows,cpu_ms,gpu_ms,tessera_timings,speedup,"
      + "gpu_nodes,operator_nodes,gpu_fraction,gpu_bytes_read,gpu_kernel_ms,input_task_ms,"
      + "staging_task_ms,transfer_task_ms,other_copy_task_ms,join_tables_task_ms,"
      + "gpu_wait_task_ms,peak_gbps,floor_ms,times_floor,"
      + "result,mismatch";

  private CsvReport() {}

  public static void write(BenchReport report, Path file) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(HEADER);
    for (QueryResult r : report.results()) {
      PlanProfile p = r.profile();
      TaskTimes t = p.times();
      double peak = report.peakGbps();
      lines.add(String.join(",", r.query(), r.input(), Long.toString(r.rows()),
          Format.fixed(r.cpuMedianMillis(), 3), Format.fixed(r.gpuMedianMillis(), 3),
          quote(report.tesseraLabel()), Format.fixed(r.speedUp(), 3),
          Integer.toString(p.gpuNodes()), Integer.toString(p.operatorNodes()),
          Format.fixed(p.gpuFraction(), 3), Long.toString(p.gpuBytesRead()),
          Format.fixed(p.gpuKernelNanos() / 1e6, 3), Format.fixed(t.inputNanos() / 1e6, 3),
          Format.fixed(t.stagingNanos() / 1e6, 3), Format.fixed(t.transferNanos() / 1e6, 3),
          Format.fixed(t.otherCopyNanos() / 1e6, 3), Format.fixed(t.joinTablesNanos() / 1e6, 3),
          Format.fixed(t.gpuWaitNanos() / 1e6, 3), Format.fixed(peak, 1),
          Format.fixed(r.floorMillis(peak), 4), Format.fixed(r.timesFloor(peak), 2),
          r.matches() ? "equal" : "MISMATCH", r.matches() ? "" : quote(r.mismatch())));
    }
    Files.write(file, lines);
  }

  /** RFC 4180 quoting: in double quotes, inner quotes doubled. */
  static String quote(String value) {
    return "\"" + value.replace("\"", "\"\"") + "\"";
  }
}
