package dev.tessera.ssb.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The report as JSON: the settings, then one object per query and input with every run's time
 * (so that other tools can compute their own statistics) and the medians. Unknown values are
 * null. Written with the Jackson that Spark ships.
 */
public final class JsonReport {
  private JsonReport() {}

  public static void write(BenchReport report, Path file) throws IOException {
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
        .writeValue(file.toFile(), toMap(report));
  }

  static Map<String, Object> toMap(BenchReport report) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("scale_factor", report.scaleFactor());
    root.put("seed", report.seed());
    root.put("runs", report.runs());
    root.put("backend", report.backend());
    root.put("gpu_timings", report.gpuTimings());
    root.put("tessera_timings", report.tesseraLabel());
    root.put("device", report.device());
    root.put("peak_gbps", number(report.peakGbps()));
    root.put("peak_source", report.peakSource());
    root.put("settings", report.settings());
    root.put("mismatches", report.mismatches());
    List<Map<String, Object>> queries = new ArrayList<>();
    for (QueryResult r : report.results()) {
      PlanProfile p = r.profile();
      Map<String, Object> q = new LinkedHashMap<>();
      q.put("query", r.query());
      q.put("input", r.input());
      q.put("rows", r.rows());
      q.put("cpu_ms", r.cpuMedianMillis());
      q.put("gpu_ms", r.gpuMedianMillis());
      q.put("cpu_runs_ms", r.cpuMillis());
      q.put("gpu_runs_ms", r.gpuMillis());
      q.put("speedup", number(r.speedUp()));
      q.put("gpu_nodes", p.gpuNodes());
      q.put("operator_nodes", p.operatorNodes());
      q.put("gpu_fraction", number(p.gpuFraction()));
      q.put("gpu_bytes_read", p.gpuBytesRead());
      q.put("gpu_kernel_ms", p.gpuKernelNanos() / 1e6);
      q.put("input_task_ms", p.times().inputNanos() / 1e6);
      q.put("staging_task_ms", p.times().stagingNanos() / 1e6);
      q.put("transfer_task_ms", p.times().transferNanos() / 1e6);
      q.put("other_copy_task_ms", p.times().otherCopyNanos() / 1e6);
      q.put("join_tables_task_ms", p.times().joinTablesNanos() / 1e6);
      q.put("gpu_wait_task_ms", p.times().gpuWaitNanos() / 1e6);
      q.put("floor_ms", number(r.floorMillis(report.peakGbps())));
      q.put("times_floor", number(r.timesFloor(report.peakGbps())));
      q.put("result", r.matches() ? "equal" : "MISMATCH");
      q.put("mismatch", r.mismatch());
      q.put("plan", p.plan());
      queries.add(q);
    }
    root.put("queries", queries);
    return root;
  }

  private static Double number(double value) {
    return Double.isNaN(value) || Double.isInfinite(value) ? null : value;
  }
}
