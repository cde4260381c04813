package dev.tessera.ssb.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportWritersTest {
  @TempDir
  Path dir;

  private static BenchReport report(String backend, double peak) {
    QueryResult ok = new QueryResult("1.1", "parquet", 1, List.of(100.0, 120.0, 80.0),
        List.of(10.0, 30.0, 20.0), new PlanProfile(3, 4, 1_000_000_000L,
            new TaskTimes(1_000_000L, 2_000_000L, 3_000_000L, 5_000_000L, 4_000_000L, 6_000_000L,
                7_000_000L), "p"), null);
    QueryResult bad = new QueryResult("2.1", "parquet", 280, List.of(50.0), List.of(60.0),
        new PlanProfile(0, 6, 0, TaskTimes.NONE, "q"), "row 0 \"x\"");
    return new BenchReport(0.01, 1, 3, backend, "dev", peak, "test",
        java.util.Map.of("spark.sql.autoBroadcastJoinThreshold", "64m"), List.of(ok, bad));
  }

  @Test
  void csvHasOneRowPerQueryAndTheLabel() throws Exception {
    Path csv = dir.resolve("r.csv");
    CsvReport.write(report("cuda", 1000), csv);
    List<String> lines = Files.readAllLines(csv);
    assertEquals(3, lines.size());
    assertEquals(CsvReport.HEADER, lines.get(0));
    assertEquals("1.1,parquet,1,100.000,20.000,\"GPU (Tessera, cuda)\",5.000,3,4,0.750,"
        + "1000000000,5.000,1.000,2.000,3.000,4.000,6.000,7.000,1000.0,1.0000,20.00,equal,",
        lines.get(1));
    assertTrue(lines.get(2).endsWith(",MISMATCH,\"row 0 \"\"x\"\"\""), lines.get(2));
  }

  @Test
  void hostReferenceTimesAreLabelledEverywhere() throws Exception {
    BenchReport report = report("host-reference", Double.NaN);
    CsvReport.write(report, dir.resolve("r.csv"));
    JsonReport.write(report, dir.resolve("r.json"));
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    ReportTable.print(report, new PrintStream(text, true, StandardCharsets.UTF_8));
    assertTrue(Files.readString(dir.resolve("r.csv")).contains(BenchReport.HOST_REFERENCE_LABEL));
    JsonNode json = new ObjectMapper().readTree(dir.resolve("r.json").toFile());
    assertEquals(BenchReport.HOST_REFERENCE_LABEL, json.get("tessera_timings").asText());
    assertTrue(!json.get("gpu_timings").asBoolean());
    assertTrue(json.get("peak_gbps").isNull());
    assertTrue(text.toString(StandardCharsets.UTF_8).contains(BenchReport.HOST_REFERENCE_LABEL));
  }

  @Test
  void jsonHasRunsMediansAndMismatches() throws Exception {
    JsonReport.write(report("cuda", 1000), dir.resolve("r.json"));
    JsonNode json = new ObjectMapper().readTree(dir.resolve("r.json").toFile());
    assertEquals(1, json.get("mismatches").asInt());
    assertEquals("64m", json.get("settings").get("spark.sql.autoBroadcastJoinThreshold").asText());
    JsonNode q = json.get("queries").get(0);
    assertEquals(100.0, q.get("cpu_ms").asDouble());
    assertEquals(3, q.get("gpu_runs_ms").size());
    assertEquals(20.0, q.get("times_floor").asDouble(), 1e-9);
    assertEquals(1.0, q.get("input_task_ms").asDouble(), 1e-9);
    assertEquals(2.0, q.get("staging_task_ms").asDouble(), 1e-9);
    assertEquals(3.0, q.get("transfer_task_ms").asDouble(), 1e-9);
    assertEquals(4.0, q.get("other_copy_task_ms").asDouble(), 1e-9);
    assertEquals(6.0, q.get("join_tables_task_ms").asDouble(), 1e-9);
    assertEquals(7.0, q.get("gpu_wait_task_ms").asDouble(), 1e-9);
    assertEquals("MISMATCH", json.get("queries").get(1).get("result").asText());
  }

  @Test
  void tableFlagsMismatches() {
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    ReportTable.print(report("cuda", 1000), new PrintStream(text, true, StandardCharsets.UTF_8));
    String s = text.toString(StandardCharsets.UTF_8);
    assertTrue(s.contains("MISMATCH in query 2.1 (parquet)"), s);
    assertTrue(s.contains("3/4"), s);
    assertTrue(s.contains("Spark settings (both sides): spark.sql.autoBroadcastJoinThreshold=64m"),
        s);
  }

  @Test
  void tableShowsWhereTheTaskTimeWent() {
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    ReportTable.print(report("cuda", 1000), new PrintStream(text, true, StandardCharsets.UTF_8));
    String s = text.toString(StandardCharsets.UTF_8);
    assertTrue(s.contains("staging ms") && s.contains("join tables ms"), s);
    assertTrue(s.matches(
        "(?s).*\\n1\\.1 +parquet +1\\.0 +2\\.0 +3\\.0 +5\\.0 +4\\.0 +6\\.0 +7\\.0\\R.*"), s);
  }

  @Test
  void chartIsAPng() throws Exception {
    Path png = dir.resolve("r.png");
    ChartReport.write(report("host-reference", Double.NaN), png);
    byte[] bytes = Files.readAllBytes(png);
    assertTrue(bytes.length > 1000);
    assertEquals((byte) 0x89, bytes[0]);
    assertEquals('P', bytes[1]);
  }
}
