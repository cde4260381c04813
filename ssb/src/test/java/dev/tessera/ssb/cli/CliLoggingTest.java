package dev.tessera.ssb.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.ConsoleAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.ConfigurationSource;
import org.apache.logging.log4j.core.config.properties.PropertiesConfigurationFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** When {@code sql} and {@code ssb} log quietly, and what their quiet configuration shows. */
class CliLoggingTest {
  private static final Map<String, String> NO_ENV = Map.of();

  private static Properties properties(String... nameValues) {
    Properties p = new Properties();
    for (int i = 0; i < nameValues.length; i += 2) {
      p.setProperty(nameValues[i], nameValues[i + 1]);
    }
    return p;
  }

  @Test
  void quietUnlessVerboseOrTheUserNamesAConfiguration() {
    assertEquals(Optional.empty(), CliLogging.whyNotQuiet(false, properties(), NO_ENV));
    assertEquals(Optional.of("--verbose"), CliLogging.whyNotQuiet(true, properties(), NO_ENV));
    assertEquals(Optional.of("-Dlog4j2.configurationFile=my.xml"), CliLogging.whyNotQuiet(false,
        properties("log4j2.configurationFile", "my.xml"), NO_ENV));
    assertEquals(Optional.of("-Dlog4j.configurationFile=my.xml"), CliLogging.whyNotQuiet(false,
        properties("log4j.configurationFile", "my.xml"), NO_ENV));
    assertEquals(Optional.of("LOG4J_CONFIGURATION_FILE=my.xml"), CliLogging.whyNotQuiet(false,
        properties(), Map.of("LOG4J_CONFIGURATION_FILE", "my.xml")));
    // Blank is no configuration, as log4j2 takes it; other settings do not matter.
    assertEquals(Optional.empty(), CliLogging.whyNotQuiet(false,
        properties("log4j2.configurationFile", " ", "log4j2.level", "info"),
        Map.of("LOG4J_CONFIGURATION_FILE", "")));
  }

  @Test
  void configurePointsLog4jAtTheQuietConfigurationOnlyWhenQuiet() {
    Properties quiet = properties();
    assertTrue(CliLogging.configure(false, quiet, NO_ENV));
    assertEquals(CliLogging.quietConfig().toString(),
        quiet.getProperty("log4j2.configurationFile"));

    Properties verbose = properties();
    assertFalse(CliLogging.configure(true, verbose, NO_ENV));
    assertTrue(verbose.isEmpty());

    Properties own = properties("log4j.configurationFile", "my.xml");
    assertFalse(CliLogging.configure(false, own, NO_ENV));
    assertEquals(properties("log4j.configurationFile", "my.xml"), own);

    Properties env = properties();
    assertFalse(CliLogging.configure(false, env, Map.of("LOG4J_CONFIGURATION_FILE", "my.xml")));
    assertTrue(env.isEmpty());
  }

  @Test
  void bothCommandsTakeVerbose() {
    assertTrue(TesseraCli.verbose(
        TesseraCli.commandLine().parseArgs("sql", "--verbose", "SELECT 1")));
    assertFalse(TesseraCli.verbose(TesseraCli.commandLine().parseArgs("sql", "SELECT 1")));
    assertTrue(TesseraCli.verbose(TesseraCli.commandLine().parseArgs("ssb", "--verbose")));
    assertFalse(TesseraCli.verbose(TesseraCli.commandLine().parseArgs("ssb", "--runs", "1")));
    assertFalse(TesseraCli.verbose(TesseraCli.commandLine().parseArgs("--help")));
  }

  @Test
  void quietConfigurationShowsErrorsAndTesserasWarningsOnStderr() throws Exception {
    LoggerContext context = new LoggerContext("CliLoggingTest");
    Configuration config = new PropertiesConfigurationFactory().getConfiguration(context,
        ConfigurationSource.fromUri(CliLogging.quietConfig().toURI()));
    context.start(config);
    try {
      assertQuiet(context);
      // SparkContext.setLogLevel("WARN") sets only the root's level: Spark and Hadoop stay quiet.
      context.getConfiguration().getRootLogger().setLevel(Level.WARN);
      context.updateLoggers();
      assertQuiet(context);

      ConsoleAppender console = (ConsoleAppender) context.getConfiguration().getAppenders()
          .values().iterator().next();
      assertEquals(ConsoleAppender.Target.SYSTEM_ERR, console.getTarget());
    } finally {
      context.stop();
    }
  }

  private static void assertQuiet(LoggerContext context) {
    for (String noisy : List.of("org.apache.spark.SparkContext", "org.apache.spark.util.Utils",
        "org.apache.hadoop.util.NativeCodeLoader", "org.sparkproject.jetty.server.Server",
        "org.apache.parquet.hadoop.ParquetOutputFormat", "io.netty.util.ResourceLeakDetector")) {
      assertFalse(context.getLogger(noisy).isEnabled(Level.WARN), noisy);
      assertTrue(context.getLogger(noisy).isEnabled(Level.ERROR), noisy);
    }
    for (String tessera : List.of("dev.tessera.spark.ExplainLog",
        "dev.tessera.spark.TesseraRuntime", "dev.tessera.gpu.cuda.CudaAvailability")) {
      assertTrue(context.getLogger(tessera).isEnabled(Level.WARN), tessera);
      assertFalse(context.getLogger(tessera).isEnabled(Level.INFO), tessera);
    }
  }

  /**
   * {@code sql} as bin/tessera runs it, in a JVM of its own (this one's logging has started):
   * stderr holds the explain report and no INFO or WARN line of Spark's or Hadoop's.
   */
  @Test
  void sqlPrintsTheExplainReportAndNotSparksLog(@TempDir Path dir)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      // Surefire's argLine (dev/spark-jvm-flags), not a debugger's agent or a log4j setting.
      if (!arg.startsWith("-agentlib") && !arg.startsWith("-javaagent")
          && !arg.startsWith("-Xrunjdwp") && !arg.startsWith("-Dlog4j")) {
        command.add(arg);
      }
    }
    command.addAll(List.of("-Djava.awt.headless=true", "-Dtessera.work=" + dir,
        "-cp", System.getProperty("java.class.path"), TesseraCli.class.getName(),
        "sql", "--backend", "host-reference",
        // Tessera has no sha2: the report has a line whatever else runs on the GPU.
        "SELECT id, sha2(CAST(id AS STRING), 256) AS h FROM range(1)"));
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile())
        .redirectOutput(dir.resolve("out.txt").toFile())
        .redirectError(dir.resolve("err.txt").toFile());
    builder.environment().remove("LOG4J_CONFIGURATION_FILE");
    Process process = builder.start();
    if (!process.waitFor(3, TimeUnit.MINUTES)) {
      process.destroyForcibly();
    }
    String out = Files.readString(dir.resolve("out.txt"), StandardCharsets.UTF_8);
    String err = Files.readString(dir.resolve("err.txt"), StandardCharsets.UTF_8);
    String both = "stdout:\n" + out + "\nstderr:\n" + err;
    assertEquals(0, process.exitValue(), both);
    assertTrue(out.startsWith(
        "id\th\n0\t5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9\n"), both);
    assertTrue(err.contains("WARN ExplainLog: Tessera plan (spark.tessera.explain=NOT_ON_GPU)"),
        both);
    assertTrue(err.contains("<Sha2>"), both);
    for (String line : err.split("\n")) {
      assertFalse(line.contains("INFO"), both);
      assertFalse(line.startsWith("WARN") && !line.startsWith("WARN ExplainLog"), both);
    }
    assertFalse(err.contains("NativeCodeLoader") || err.contains("log4j profile"), both);
  }
}
