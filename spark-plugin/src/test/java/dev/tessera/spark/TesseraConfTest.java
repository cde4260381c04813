package dev.tessera.spark;

import dev.tessera.spark.rewrite.GpuRules;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.RuntimeOptions;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;

class TesseraConfTest {
  private static IllegalArgumentException rejects(Map<String, String> settings) {
    return assertThrows(IllegalArgumentException.class, () -> TesseraConf.from(settings));
  }

  private static void assertContains(String message, String... parts) {
    for (String part : parts) {
      assertTrue(message.contains(part), () -> "'" + part + "' missing from: " + message);
    }
  }

  @Test
  void defaults() {
    TesseraConf conf = TesseraConf.from(Map.of());
    assertTrue(conf.enabled());
    assertEquals(ExplainLevel.NONE, conf.explain());
    assertEquals(BackendKind.CUDA, conf.backend());
    assertEquals(128L << 20, conf.batchSizeBytes());
    assertEquals(0L, conf.deviceCapBytes());
    // Automatic: two default batches per core, at least 1 GiB.
    assertEquals(Math.max(1L << 30, (256L << 20) * Runtime.getRuntime().availableProcessors()),
        conf.pinnedCapBytes());
    assertTrue(conf.isExecEnabled("FilterExec"));
    assertTrue(conf.isExpressionEnabled("Add"));
  }

  @Test
  void parsesEverySetting() {
    TesseraConf conf = TesseraConf.from(Map.of(
        "spark.tessera.enabled", " FALSE ",
        "spark.tessera.explain", "not_on_gpu",
        "spark.tessera.backend", "host-reference",
        "spark.tessera.batchSizeBytes", "64m",
        "spark.tessera.memory.deviceCapBytes", "2g",
        "spark.tessera.memory.pinnedCapBytes", "1048576",
        "spark.tessera.exec.ProjectExec.enabled", "false",
        "spark.tessera.expression.Year.enabled", "false",
        "spark.sql.shuffle.partitions", "4"));
    assertFalse(conf.enabled());
    assertEquals(ExplainLevel.NOT_ON_GPU, conf.explain());
    assertEquals(BackendKind.HOST_REFERENCE, conf.backend());
    assertEquals(64L << 20, conf.batchSizeBytes());
    assertEquals(2L << 30, conf.deviceCapBytes());
    assertEquals(1L << 20, conf.pinnedCapBytes());
    assertFalse(conf.isExecEnabled("ProjectExec"));
    assertTrue(conf.isExecEnabled("FilterExec"));
    assertFalse(conf.isExpressionEnabled("Year"));
  }

  @Test
  void explainIsCaseInsensitive() {
    for (String text : new String[] {"all", "All", "ALL"}) {
      assertEquals(ExplainLevel.ALL,
          TesseraConf.from(Map.of("spark.tessera.explain", text)).explain());
    }
  }

  @Test
  void badExplainNamesKeyValueAndAcceptedValues() {
    assertContains(rejects(Map.of("spark.tessera.explain", "verbose")).getMessage(),
        "spark.tessera.explain", "'verbose'", "NONE, NOT_ON_GPU, ALL");
  }

  @Test
  void badBooleanBackendAndSizes() {
    assertContains(rejects(Map.of("spark.tessera.enabled", "yes")).getMessage(),
        "spark.tessera.enabled", "'yes'", "true, false");
    assertContains(rejects(Map.of("spark.tessera.backend", "gpu")).getMessage(),
        "spark.tessera.backend", "'gpu'", "cuda, host-reference");
    assertContains(rejects(Map.of("spark.tessera.batchSizeBytes", "0")).getMessage(),
        "spark.tessera.batchSizeBytes", "'0'", "greater than 0");
    assertContains(rejects(Map.of("spark.tessera.batchSizeBytes", "lots")).getMessage(),
        "spark.tessera.batchSizeBytes", "'lots'", "whole number of bytes");
    assertContains(rejects(Map.of("spark.tessera.memory.pinnedCapBytes", "-1")).getMessage(),
        "spark.tessera.memory.pinnedCapBytes", "'-1'");
    assertContains(
        rejects(Map.of("spark.tessera.memory.deviceCapBytes", "99999999999t")).getMessage(),
        "spark.tessera.memory.deviceCapBytes");
  }

  @Test
  void typoSuggestsTheClosestKey() {
    assertContains(rejects(Map.of("spark.tessera.explian", "ALL")).getMessage(),
        "spark.tessera.explian", "'ALL'", "did you mean spark.tessera.explain?");
    assertContains(
        rejects(Map.of("spark.tessera.exec.FiltreExec.enabled", "false")).getMessage(),
        "did you mean spark.tessera.exec.FilterExec.enabled?");
  }

  @Test
  void unknownKeyFarFromAnyListsTheKeys() {
    assertContains(rejects(Map.of("spark.tessera.gpuCount", "2")).getMessage(),
        "spark.tessera.gpuCount", "'2'", "spark.tessera.enabled", "spark.tessera.explain",
        "docs/configs.md");
    assertContains(
        rejects(Map.of("spark.tessera.exec.SortMergeJoinExec.enabled", "true")).getMessage(),
        "FilterExec, ProjectExec");
  }

  @Test
  void registeringASwitchMakesItsKeyKnown() {
    String key = TesseraConf.execEnabledKey("TestOnlyExec");
    rejects(Map.of(key, "false"));
    ConfEntry<Boolean> entry = TesseraConf.registerExec("TestOnlyExec", "a test");
    assertSame(entry, TesseraConf.registerExec("TestOnlyExec", "registered twice"));
    assertFalse(TesseraConf.from(Map.of(key, "false")).isExecEnabled("TestOnlyExec"));
    assertThrows(IllegalArgumentException.class,
        () -> TesseraConf.from(Map.of()).isExpressionEnabled("NeverRegistered"));
  }

  @Test
  void readsSparkConfAndSqlConf() {
    SparkConf sparkConf = new SparkConf(false)
        .set("spark.tessera.explain", "ALL")
        .set("spark.app.name", "x");
    assertEquals(ExplainLevel.ALL, TesseraConf.from(sparkConf).explain());

    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString("spark.tessera.enabled", "false");
    assertFalse(TesseraConf.from(sqlConf).enabled());
    sqlConf.setConfString("spark.tessera.explain", "verbose");
    assertThrows(IllegalArgumentException.class, () -> TesseraConf.from(sqlConf));
  }

  @Test
  void runtimeOptionsCarryTheCapsAndNameTheSettings() {
    RuntimeOptions options = TesseraConf.from(Map.of(
        "spark.tessera.memory.deviceCapBytes", "512m",
        "spark.tessera.memory.pinnedCapBytes", "256m")).runtimeOptions(3);
    assertEquals(3, options.deviceOrdinal());
    assertEquals(512L << 20, options.deviceMemoryCapBytes());
    assertEquals(256L << 20, options.pinnedMemoryCapBytes());
    assertEquals("spark.tessera.memory.deviceCapBytes", options.deviceCapSetting());
  }

  @Test
  void everyRuleHasASwitch() {
    for (var rule : GpuRules.standard().execRules()) {
      assertTrue(TesseraConf.from(Map.of()).isExecEnabled(rule.name()), rule.name());
    }
    for (var rule : GpuRules.standard().expressionRules()) {
      assertTrue(TesseraConf.from(Map.of()).isExpressionEnabled(rule.name()), rule.name());
    }
    assertEquals(5, GpuRules.standard().execRules().size());
    assertEquals(38, GpuRules.standard().expressionRules().size());
  }

  @Test
  void editDistance() {
    assertEquals(0, ConfRegistry.editDistance("abc", "abc"));
    assertEquals(2, ConfRegistry.editDistance("explian", "explain"));
    assertEquals(3, ConfRegistry.editDistance("", "abc"));
  }

  @Test
  void validateChecksOneSettingAsItIsSet() {
    TesseraConf.validate("spark.tessera.explain", "all");
    assertContains(assertThrows(IllegalArgumentException.class,
        () -> TesseraConf.validate("spark.tessera.explain", "bad")).getMessage(),
        "spark.tessera.explain", "'bad'", "NONE, NOT_ON_GPU, ALL");
    assertContains(assertThrows(IllegalArgumentException.class,
        () -> TesseraConf.validate("spark.tessera.explian", "ALL")).getMessage(),
        "spark.tessera.explian", "did you mean spark.tessera.explain?");
  }

  @Test
  void onlyTheRuntimeSettingsAreReadOncePerJvm() {
    java.util.Set<String> readOnce = new java.util.TreeSet<>();
    for (ConfEntry<?> entry : TesseraConf.entries()) {
      if (entry.isReadOncePerJvm()) {
        readOnce.add(entry.key());
      }
    }
    // The runtime's settings (codegen included: the backend is opened with it), and the
    // cache's: the serializer is chosen when the application starts, the device store's cap
    // when the runtime opens, as is the executor's GPU semaphore.
    assertEquals(java.util.Set.of(TesseraConf.BACKEND.key(), TesseraConf.DEVICE_CAP_BYTES.key(),
        TesseraConf.PINNED_CAP_BYTES.key(), TesseraConf.CODEGEN_ENABLED.key(),
        TesseraConf.CACHE_ENABLED.key(), TesseraConf.CACHE_DEVICE_BYTES.key(),
        TesseraConf.CONCURRENT_GPU_TASKS.key(), TesseraConf.CODEGEN_CACHE_DIR.key()), readOnce);
  }
}
