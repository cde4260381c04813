package dev.tessera.ssb.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.PtxCompiler;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/tessera sql --kernels} and {@code --ptx DIR} in this JVM, on the host-reference
 * backend: generating and compiling kernels needs no GPU.
 */
class SqlKernelsTest {
  @TempDir
  Path dir;

  /** Runs {@code sql} with {@code args}, returning what it printed on stdout. */
  private static String sql(String... args) {
    PrintStream saved = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int status;
    try (PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      System.setOut(capture);
      status = TesseraCli.commandLine().execute(
          Stream.concat(Stream.of("sql", "--backend", "host-reference"), Stream.of(args))
              .toArray(String[]::new));
    } finally {
      System.setOut(saved);
    }
    String out = bytes.toString(StandardCharsets.UTF_8);
    assertEquals(0, status, out);
    return out;
  }

  @Test
  void layoutGeneratesForACachedTablesEncodedColumns() {
    String report = kernels(sql("--layout", "cached-for",
        "SELECT id % 10 AS k, count(*) AS n FROM range(1000) GROUP BY id % 10"));
    assertTrue(report.contains("inputs of GPU-FOR columns"), report);
    assertTrue(report.contains("kernel " + AggregateUpdateGenerator.ENTRY_PREFIX), report);
    assertFalse(report.contains("not generated:"), report);

    PrintStream saved = System.err;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int status;
    try (PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      System.setErr(capture);
      status = TesseraCli.commandLine().execute("sql", "--layout", "packed", "SELECT 1");
    } finally {
      System.setErr(saved);
    }
    assertEquals(2, status);
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains(
        "--layout must be uploaded, cached-for or cached-dfor, not 'packed'"), bytes.toString());
  }

  @Test
  void theReportSaysWhereTheProgramProbesWholeTablesLast() {
    // a is a whole table, b is filtered (5 of range's 100 rows, as the broadcast stage counts
    // them): the program probes b first.
    String report = kernels(sql("--kernels", "SELECT /*+ BROADCAST(a), BROADCAST(b) */"
        + " count(*) FROM (SELECT id AS k, id % 7 AS v FROM range(1000)) f"
        + " JOIN (SELECT id AS ak FROM range(100)) a ON f.k = a.ak"
        + " JOIN (SELECT id AS bk FROM range(100) WHERE id < 5) b ON f.v = b.bk"));
    assertTrue(report.contains(
        "the program probes its tables in the order Probe#1 (keeps 5.0% of its table's rows),"
        + " Probe#0 (a whole table)"), report);
  }

  @Test
  void anAggregateOverAJoinAlsoReportsItsKernelForATableWithAProbeFilter() {
    // The runtime decides at build time whether a join table gets a probe filter (no direct map,
    // few enough keys); an aggregate's kernel of 128-thread blocks (two keys) for such a table
    // splits its rows at the filter.
    String report = kernels(sql("--kernels", "SELECT /*+ BROADCAST(d) */ d.g, d.h,"
        + " count(*) AS n FROM (SELECT id AS k FROM range(1000)) f"
        + " JOIN (SELECT id * 1000 AS dk, id % 3 AS g, id % 5 AS h FROM range(100)) d"
        + " ON f.k = d.dk GROUP BY d.g, d.h"));
    assertTrue(report.contains("TesseraHashAggregateExec"), report);
    int plain = report.indexOf("kernel " + AggregateUpdateGenerator.ENTRY_PREFIX);
    int filtered = report.indexOf("has a probe filter");
    assertTrue(plain >= 0 && filtered > plain, report);
    assertTrue(report.indexOf("kernel " + AggregateUpdateGenerator.ENTRY_PREFIX, filtered) > 0,
        report);
    // A filter-project program has one kernel for both (it tests the filter at run time).
    String project = kernels(sql("--kernels", "SELECT /*+ BROADCAST(d) */ f.k, d.g"
        + " FROM (SELECT id AS k FROM range(1000)) f"
        + " JOIN (SELECT id * 1000 AS dk, id % 3 AS g FROM range(100)) d ON f.k = d.dk"));
    assertFalse(project.contains("has a probe filter"), project);
  }

  /** The part of the output after the kernels' heading. */
  private static String kernels(String out) {
    int at = out.indexOf("Generated kernels (");
    assertTrue(at >= 0, "no kernel report:\n" + out);
    return out.substring(at);
  }

  @Test
  void filterProjectPrintsItsKernelAndWritesThePtxAndAnAggregateGetsAnUpdateKernel() throws Exception {
    Path ptx = dir.resolve("ptx");
    String report = kernels(sql("--kernels", "--ptx", ptx.toString(),
        "SELECT id, id * 2 AS twice FROM range(1000) WHERE id < 500"));
    assertTrue(report.contains("[1] TesseraFusedExec"), report);
    assertTrue(report.contains("plain columns with validity bitmaps"), report);
    assertTrue(report.contains("program: "), report);
    assertTrue(report.contains("kernel " + FilterProjectGenerator.ENTRY_PREFIX), report);
    // The PTX is written whether or not the compiler can run here.
    List<Path> files;
    try (Stream<Path> listing = Files.list(ptx)) {
      files = listing.filter(f -> f.toString().endsWith(".ptx")).toList();
    }
    assertEquals(1, files.size(), files.toString());
    Path file = files.get(0);
    assertTrue(file.getFileName().toString().startsWith(FilterProjectGenerator.ENTRY_PREFIX)
        && file.getFileName().toString().endsWith(".ptx"), file.toString());
    assertTrue(report.contains("PTX: " + file), report);
    // The module opens with nvcc's comment lines, then its first directive: .version.
    String firstDirective = Files.readAllLines(file).stream()
        .filter(line -> !line.isBlank() && !line.startsWith("//")).findFirst().orElse("");
    assertTrue(firstDirective.startsWith(".version"), firstDirective);

    String aggregate = kernels(sql("--kernels",
        "SELECT id % 10 AS k, count(*) AS n FROM range(1000) GROUP BY id % 10"));
    assertTrue(aggregate.contains("TesseraHashAggregateExec"), aggregate);
    assertTrue(aggregate.contains("kernel " + AggregateUpdateGenerator.ENTRY_PREFIX), aggregate);
    assertFalse(aggregate.contains("not generated:"), aggregate);

    assumeTrue(PtxCompiler.available(), "the in-jar PTX compiler cannot be used here: "
        + PtxCompiler.unavailableReason());
    assertTrue(report.contains(" registers, 0 B stack, 0/0 B spilled"), report);
    assertTrue(report.contains("compiled in "), report);
    assertTrue(report.contains("the runtime would use it"), report);
    // Where it was compiled, its cubin beside the PTX: an ELF file.
    Path cubin = ptx.resolve(file.getFileName().toString().replace(".ptx", ".cubin"));
    assertTrue(report.contains("cubin: " + cubin), report);
    byte[] elf = Files.readAllBytes(cubin);
    assertTrue(elf.length > 4 && elf[0] == 0x7f && elf[1] == 'E' && elf[2] == 'L' && elf[3] == 'F',
        "not an ELF file: " + cubin);
  }

  /**
   * A projection of 24 outputs, whose kernel fits its registers only in its last form: the report
   * says so, and the PTX written is the text its cubin was compiled from (it compiles to what
   * the report printed), not the first form's.
   */
  @Test
  void aWideProjectionSaysWhichFormItCompiledAndWritesThatText() throws Exception {
    assumeTrue(PtxCompiler.available(), "the in-jar PTX compiler cannot be used here: "
        + PtxCompiler.unavailableReason());
    Path ptx = dir.resolve("wide");
    StringBuilder columns = new StringBuilder("id AS c0");
    for (int c = 1; c < 24; c++) {
      columns.append(", id + ").append(c).append(" AS c").append(c);
    }
    String report = kernels(sql("--kernels", "--ptx", ptx.toString(),
        "SELECT " + columns + " FROM range(1000) WHERE id % 10 < 5"));
    assertTrue(report.contains("compiled as its form 3 of 3"), report);
    assertTrue(report.contains("the runtime would use it"), report);
    Path file;
    try (Stream<Path> listing = Files.list(ptx)) {
      file = listing.filter(f -> f.toString().endsWith(".ptx")).findFirst().orElseThrow();
    }
    CompileReport again = PtxCompiler.compile(Files.readString(file), "sm_90").report();
    assertTrue(report.contains("kernel " + again.summary() + ";"), again.summary() + "\n" + report);
  }
}
