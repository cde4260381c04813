package dev.tessera.ssb.cli;

import dev.tessera.spark.TesseraConf;
import dev.tessera.ssb.SsbTables;
import dev.tessera.ssb.bench.BackendChoice;
import dev.tessera.ssb.bench.BenchSession;
import dev.tessera.ssb.bench.PlanProfile;
import dev.tessera.ssb.bench.SsbData;
import dev.tessera.gpu.cuda.CudaAvailability;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code bin/tessera sql}: runs one statement with Tessera on and shows its result, the executed
 * plan with Tessera's nodes, and (logged by {@code spark.tessera.explain=NOT_ON_GPU}, at WARN on
 * stderr while the query is planned) why the other nodes stay on the CPU. Spark's own INFO and
 * WARN lines are not shown unless {@code --verbose} is given (see {@link CliLogging}). With
 * {@code --kernels} (or {@code --ptx DIR}) it also prints the generated kernel of each GPU
 * pipeline ({@link KernelReport}).
 */
@Command(name = "sql", mixinStandardHelpOptions = true,
    description = {"Runs a SQL statement with Tessera and prints its result, executed plan and"
        + " CPU fallback reasons.",
        "Logs only errors and Tessera's warnings on stderr; --verbose adds Spark's log."})
public final class SqlCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Parameters(arity = "0..1", paramLabel = "SQL", description = "the statement")
  String sql;

  @Option(names = {"-f", "--file"}, paramLabel = "FILE", description = "read the statement from FILE")
  Path file;

  @Option(names = "--data", paramLabel = "DIR",
      description = "register the SSB tables in DIR first (generated there when --scale is given"
          + " and DIR does not hold that scale)")
  Path data;

  @Option(names = "--cached",
      description = "cache the --data tables (in Tessera's GPU-FOR format) before the statement,"
          + " and print what each cached table the plan reads holds")
  boolean cached;

  @Option(names = "--scale", description = "SSB scale factor to generate into --data if missing")
  Double scale;

  @Option(names = "--seed", defaultValue = "1", description = "generator seed (default: ${DEFAULT-VALUE})")
  long seed;

  @Option(names = "--limit", defaultValue = "20",
      description = "result rows to print (default: ${DEFAULT-VALUE})")
  int limit;

  @Option(names = "--kernels",
      description = "after the plan, print per GPU pipeline the generated kernel's registers,"
          + " stack, spills and compile time (for sm_90; no GPU needed), or why it has none")
  boolean kernels;

  @Option(names = "--ptx", paramLabel = "DIR",
      description = "write each generated kernel's PTX module to DIR/<entry>.ptx (where it was"
          + " compiled, the form compiled) and its sm_90 cubin to DIR/<entry>.cubin"
          + " (implies --kernels)")
  Path ptx;

  @Option(names = "--layout", paramLabel = "LAYOUT",
      description = "the input layout --kernels generates for: uploaded (plain columns with"
          + " validity bitmaps, as uploaded batches are; the default), cached-for or cached-dfor"
          + " (every column the cache can pack as GPU-FOR or GPU-DFOR, without nulls, as cached"
          + " tables' batches are); implies --kernels")
  String layout;

  @Option(names = "--backend", defaultValue = "auto",
      description = "auto, cuda or host-reference (default: ${DEFAULT-VALUE})")
  String backend;

  @CommandLine.Mixin
  CliLogging.VerboseOption logging;

  private CommandLine.ParameterException bad(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  private String statement() throws java.io.IOException {
    if ((sql == null) == (file == null)) {
      throw bad("give the statement either as an argument or with -f FILE (exactly one)");
    }
    if (file != null && !Files.isRegularFile(file)) {
      throw bad("-f: no file '" + file + "'");
    }
    return sql != null ? sql : Files.readString(file);
  }

  @Override
  public Integer call() throws Exception {
    String text = statement().strip();
    if (text.endsWith(";")) {
      text = text.substring(0, text.length() - 1);
    }
    if (limit < 0) {
      throw bad("--limit must be 0 or more, not '" + limit + "'");
    }
    KernelReport.Layout kernelLayout = layout == null ? KernelReport.Layout.UPLOADED
        : KernelReport.Layout.ofOption(layout).orElseThrow(() -> bad("--layout must be"
            + " uploaded, cached-for or cached-dfor, not '" + layout + "'"));
    if (scale != null && !(scale > 0)) {
      throw bad("--scale must be a positive number (e.g. 0.1 or 1), not '" + scale + "'");
    }
    if (scale != null && data == null) {
      data = WorkFolder.data(scale, seed);
    }
    String resolved;
    try {
      resolved = BackendChoice.parse(backend).resolve(CudaAvailability.get());
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage());
    }
    PrintStream out = System.out;
    PrintStream err = System.err;
    if (resolved.equals("host-reference")) {
      err.println("[sql] Tessera runs on the host-reference backend (no GPU): plans and results"
          + " as on a GPU, CPU speed.");
    }
    SparkSession spark = BenchSession.start(resolved, "NONE");
    try {
      if (data != null) {
        if (scale != null) {
          SsbData.ensure(spark, data, scale, seed, line -> err.println("[sql] " + line));
        } else if (!Files.isRegularFile(data.resolve(SsbData.MARKER))) {
          throw bad("--data " + data + " holds no SSB data written by bin/tessera; add --scale to"
              + " generate it there");
        }
        SsbTables.register(spark, data, cached);
      } else if (cached) {
        throw bad("--cached caches the --data tables: give --data");
      }
      // Only now, so that the report is about the statement, not the views' registration.
      spark.conf().set("spark.tessera.explain", "NOT_ON_GPU");
      Dataset<Row> df = spark.sql(text);
      long start = System.nanoTime();
      List<Row> rows = df.collectAsList();
      double millis = (System.nanoTime() - start) / 1e6;
      out.println(String.join("\t", df.columns()));
      rows.stream().limit(limit).forEach(r -> out.println(render(r)));
      out.printf("(%d row(s)%s, %.0f ms)%n", rows.size(),
          rows.size() > limit ? ", first " + limit + " shown" : "", millis);
      PlanProfile profile = PlanProfile.of(df.queryExecution().executedPlan());
      out.println();
      out.printf("Executed plan (%d of %d operator nodes on the GPU; Tessera's nodes are"
          + " dev.tessera.* execs, e.g. TesseraFilterProject):%n", profile.gpuNodes(),
          profile.operatorNodes());
      out.println(profile.plan());
      out.println("Why nodes stay on the CPU: see the 'cannot run on GPU because' lines that"
          + " spark.tessera.explain=NOT_ON_GPU logged on stderr above.");
      CachedTables.print(df, out);
      if (kernels || ptx != null || layout != null) {
        KernelReport.print(df.queryExecution().executedPlan(), kernelLayout,
            Boolean.parseBoolean(spark.conf().get(TesseraConf.CODEGEN_ENABLED.key(),
                String.valueOf(TesseraConf.CODEGEN_ENABLED.defaultValue()))),
            ptx, out);
      }
      return 0;
    } finally {
      spark.stop();
    }
  }

  private static String render(Row row) {
    StringBuilder line = new StringBuilder();
    for (int i = 0; i < row.length(); i++) {
      if (i > 0) {
        line.append('\t');
      }
      line.append(row.isNullAt(i) ? "NULL" : String.valueOf(row.get(i)));
    }
    return line.toString();
  }
}
