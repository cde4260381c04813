package dev.tessera.ssb.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tessera.ssb.bench.BenchReport;
import dev.tessera.ssb.bench.SsbData;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bin/tessera ssb} in this JVM at a tiny scale, on the host-reference backend. */
class SsbCommandEndToEndTest {
  @TempDir
  Path dir;

  @Test
  void generatesRunsComparesAndWritesTheReport() throws Exception {
    Path data = dir.resolve("data");
    Path out = dir.resolve("report");
    int status = TesseraCli.commandLine().execute("ssb", "--scale", "0.01", "--runs", "1",
        "--queries", "1.1,2.1", "--backend", "host-reference", "--data", data.toString(),
        "--out", out.toString(), "--conf", "spark.sql.shuffle.partitions=3");
    assertEquals(0, status);

    assertTrue(SsbData.isReusable(data, 0.01, 1));
    assertFalse(SsbData.isReusable(data, 0.01, 2));

    List<String> csv = Files.readAllLines(out.resolve("ssb.csv"));
    assertEquals(3, csv.size(), String.join("\n", csv));
    assertTrue(csv.get(1).startsWith("1.1,parquet,1,"), csv.get(1));
    assertTrue(csv.get(2).startsWith("2.1,parquet,"), csv.get(2));
    for (String line : csv.subList(1, 3)) {
      assertTrue(line.contains(BenchReport.HOST_REFERENCE_LABEL) && line.contains(",equal,"),
          line);
    }

    JsonNode json = new ObjectMapper().readTree(out.resolve("ssb.json").toFile());
    assertEquals("host-reference", json.get("backend").asText());
    assertEquals(0, json.get("mismatches").asInt());
    JsonNode q11 = json.get("queries").get(0);
    assertTrue(q11.get("gpu_nodes").asInt() > 0, "Tessera ran none of 1.1: " + q11.get("plan"));
    assertTrue(q11.get("gpu_nodes").asInt() <= q11.get("operator_nodes").asInt());
    assertTrue(q11.get("input_task_ms").asDouble() > 0, "1.1's upload took no time: " + q11);
    // --conf reached the session: 2.1's group-by exchange has 3 partitions, not the default.
    assertEquals("3", json.get("settings").get("spark.sql.shuffle.partitions").asText());
    String plan21 = json.get("queries").get(1).get("plan").asText();
    assertTrue(plan21.matches("(?s).*hashpartitioning\\([^)]*, 3\\).*"), plan21);
    assertTrue(Files.size(out.resolve("ssb.png")) > 1000);
  }
}
