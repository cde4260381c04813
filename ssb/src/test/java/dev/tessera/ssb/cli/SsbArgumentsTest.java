package dev.tessera.ssb.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Bad arguments fail before Spark starts, with exit status 2 and a message naming the value. */
class SsbArgumentsTest {
  private static String failure(String... args) {
    StringWriter err = new StringWriter();
    CommandLine cli = TesseraCli.commandLine();
    cli.setErr(new PrintWriter(err));
    assertEquals(2, cli.execute(args), err.toString());
    return err.toString();
  }

  @Test
  void badScale() {
    assertTrue(failure("ssb", "--scale", "-1").contains("--scale must be a positive number"
        + " (e.g. 0.1 or 1), not '-1.0'"));
    assertTrue(failure("ssb", "--scale", "lots").contains("'lots'"));
    assertTrue(failure("ssb", "--scale", "0").contains("not '0.0'"));
  }

  @Test
  void badInput() {
    assertTrue(failure("ssb", "--input", "disk")
        .contains("--input must be parquet, cached or both, not 'disk'"));
  }

  @Test
  void unknownQuery() {
    String err = failure("ssb", "--queries", "1.1,9.9");
    assertTrue(err.contains("--queries: no query '9.9'; the queries are 1.1,1.2,1.3,2.1"), err);
  }

  @Test
  void badRunsAndBackend() {
    assertTrue(failure("ssb", "--runs", "0").contains("--runs must be at least 1, not '0'"));
    assertTrue(failure("ssb", "--backend", "tpu")
        .contains("--backend must be auto, cuda or host-reference, not 'tpu'"));
  }

  @Test
  void badSparkSettings() {
    assertTrue(failure("ssb", "--conf", "broadcast=64m")
        .contains("--conf takes KEY=VALUE with a Spark setting's key (spark....), not 'broadcast=64m'"));
    assertTrue(failure("ssb", "--conf", "spark.sql.shuffle.partitions")
        .contains("not 'spark.sql.shuffle.partitions'"));
    assertTrue(failure("ssb", "--conf", "spark.tessera.backend=cuda")
        .contains("--conf spark.tessera.backend: the benchmark sets it itself (use --backend)"));
    assertTrue(failure("ssb", "--conf", "spark.tessera.enabled=false")
        .contains("--conf spark.tessera.enabled: the benchmark sets it itself"));
  }

  @Test
  void sqlNeedsExactlyOneStatement() {
    assertTrue(failure("sql").contains("either as an argument or with -f FILE"));
    assertTrue(failure("sql", "-f", "/no/such.sql").contains("-f: no file '/no/such.sql'"));
  }

  @Test
  void noCommand() {
    assertTrue(failure().contains("name a command: ssb or sql"));
  }
}
