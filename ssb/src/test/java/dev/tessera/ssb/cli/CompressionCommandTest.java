package dev.tessera.ssb.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.ssb.compression.CompressionReport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code bin/tessera compression} in this JVM: its arguments and its tables. */
class CompressionCommandTest {
  private static String failure(String... args) {
    StringWriter err = new StringWriter();
    CommandLine cli = TesseraCli.commandLine();
    cli.setErr(new PrintWriter(err));
    assertEquals(2, cli.execute(args), err.toString());
    return err.toString();
  }

  @Test
  void badArguments() {
    assertTrue(failure("compression", "--scale", "-1")
        .contains("--scale must be a positive number (e.g. 0.1 or 1), not '-1.0'"));
    assertTrue(failure("compression", "--scale", "5000").contains("do not fit INT keys"));
    assertTrue(failure("compression", "--batch-rows", "0")
        .contains("--batch-rows must be at least 1, not '0'"));
  }

  @Test
  void theDefaultBatchIsTheCaches() {
    assertEquals(CompressionReport.DEFAULT_BATCH_ROWS,
        Integer.parseInt(CompressionCommand.DEFAULT_BATCH_ROWS));
  }

  @Test
  void printsEveryTable() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = System.out;
    int status;
    try {
      System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
      status = TesseraCli.commandLine()
          .execute("compression", "--scale", "0.001", "--batch-rows", "1000");
    } finally {
      System.setOut(out);
    }
    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertEquals(0, status, printed);
    assertTrue(printed.contains("batches of 1,024 rows"), printed);
    for (String table : new String[] {"lineorder", "customer", "supplier", "part", "date"}) {
      assertTrue(printed.contains("\n" + table + ": "), table + " in\n" + printed);
    }
    assertTrue(printed.contains("lo_orderkey        int    DFOR"), printed);
    assertTrue(printed.contains("\nall tables: plain "), printed);
  }
}
