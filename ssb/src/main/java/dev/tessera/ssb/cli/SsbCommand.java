package dev.tessera.ssb.cli;

import dev.tessera.gpu.cuda.CudaAvailability;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.ssb.SsbQuery;
import dev.tessera.ssb.bench.BackendChoice;
import dev.tessera.ssb.bench.BenchReport;
import dev.tessera.ssb.bench.BenchSession;
import dev.tessera.ssb.bench.Benchmark;
import dev.tessera.ssb.bench.ChartReport;
import dev.tessera.ssb.bench.CsvReport;
import dev.tessera.ssb.bench.DeviceBandwidth;
import dev.tessera.ssb.bench.JsonReport;
import dev.tessera.ssb.bench.QueryResult;
import dev.tessera.ssb.bench.ReportTable;
import dev.tessera.ssb.bench.SsbWorkload;
import dev.tessera.ssb.bench.Workload;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code bin/tessera ssb}: the benchmark, Spark's CPU operators against Tessera's. */
@Command(name = "ssb", mixinStandardHelpOptions = true,
    description = {"Runs the Star Schema Benchmark's queries with Tessera off (Spark CPU) and on,",
        "checks the results are equal and reports times, the plan's share on the GPU and the",
        "kernels' bandwidth floor as a table, CSV, JSON and a PNG chart.",
        "Logs only errors and Tessera's warnings on stderr; --verbose adds Spark's log.",
        "Exits 1 when a result differs, 2 on a bad argument."})
public final class SsbCommand implements Callable<Integer> {
  /** Exit status when a result with Tessera on differs from Spark's. */
  static final int MISMATCH = 1;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = "--scale", defaultValue = "0.1",
      description = "SSB scale factor, > 0; fractions allowed (default: ${DEFAULT-VALUE})")
  double scale;

  @Option(names = "--seed", defaultValue = "1", description = "generator seed (default: ${DEFAULT-VALUE})")
  long seed;

  @Option(names = "--data", paramLabel = "DIR",
      description = "data folder; reused when it holds the same scale and seed, else generated"
          + " (default: work/ssb-data/sf<scale>-seed<seed>)")
  Path data;

  @Option(names = "--input", defaultValue = "parquet",
      description = "parquet, cached (Spark's cache of the tables) or both (default: ${DEFAULT-VALUE})")
  String input;

  @Option(names = "--runs", defaultValue = "3",
      description = "measured runs per query and side, after 1 warm-up (default: ${DEFAULT-VALUE})")
  int runs;

  @Option(names = "--queries", split = ",", paramLabel = "Q,...",
      description = "queries to run, e.g. 1.1,2.1 (default: all 13)")
  List<String> queries = List.of();

  @Option(names = "--out", paramLabel = "DIR",
      description = "report folder (default: work/ssb-report/<timestamp>)")
  Path out;

  @Option(names = "--backend", defaultValue = "auto",
      description = "auto (cuda when a GPU is usable, else host-reference), cuda or host-reference"
          + " (default: ${DEFAULT-VALUE})")
  String backend;

  @Option(names = "--peak-gbps", paramLabel = "GB/s",
      description = "the device's peak memory bandwidth for the floor; default: measured once"
          + " with a device-to-device copy, as diagnose does")
  Double peakGbps;

  @Option(names = "--conf", paramLabel = "KEY=VALUE", mapFallbackValue = "",
      description = "a Spark setting for both sides, e.g."
          + " spark.sql.autoBroadcastJoinThreshold=64m; repeatable. Tessera's switch, backend"
          + " and plugin are the benchmark's own (see --backend)")
  Map<String, String> conf = new LinkedHashMap<>();

  @CommandLine.Mixin
  CliLogging.VerboseOption logging;

  private final Function<SsbCommand, Workload> workloads;

  /** The command on the SSB workload. */
  public SsbCommand() {
    this(c -> new SsbWorkload(c.dataDir(), c.scale, c.seed));
  }

  /** The command on another workload (tests use small tables of their own). */
  SsbCommand(Function<SsbCommand, Workload> workloads) {
    this.workloads = workloads;
  }

  Path dataDir() {
    return data != null ? data : WorkFolder.data(scale, seed);
  }

  /** The inputs {@code --input} asks for, naming the bad value. */
  List<String> inputs() {
    return switch (input) {
      case "parquet" -> List.of("parquet");
      case "cached" -> List.of("cached");
      case "both" -> Benchmark.INPUTS;
      default -> throw bad("--input must be parquet, cached or both, not '" + input + "'");
    };
  }

  private void validate() {
    if (!(scale > 0) || Double.isInfinite(scale)) {
      throw bad("--scale must be a positive number (e.g. 0.1 or 1), not '" + scale + "'");
    }
    if (runs < 1) {
      throw bad("--runs must be at least 1, not '" + runs + "'");
    }
    if (peakGbps != null && !(peakGbps > 0)) {
      throw bad("--peak-gbps must be a positive bandwidth in GB/s, not '" + peakGbps + "'");
    }
    for (Map.Entry<String, String> setting : conf.entrySet()) {
      String key = setting.getKey();
      if (!key.startsWith("spark.") || setting.getValue().isEmpty()) {
        throw bad("--conf takes KEY=VALUE with a Spark setting's key (spark....), not '" + key
            + (setting.getValue().isEmpty() ? "" : "=" + setting.getValue()) + "'");
      }
      if (BenchSession.OWN_SETTINGS.contains(key)) {
        throw bad("--conf " + key + ": the benchmark sets it itself"
            + (key.equals("spark.tessera.backend") ? " (use --backend)" : ""));
      }
    }
    inputs();
  }

  private CommandLine.ParameterException bad(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  @Override
  public Integer call() throws Exception {
    validate();
    PrintStream err = System.err;
    Workload workload = workloads.apply(this);
    List<SsbQuery> selected;
    BackendChoice choice;
    try {
      selected = Benchmark.select(workload, queries);
      choice = BackendChoice.parse(backend);
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage());
    }
    CudaAvailability cuda = CudaAvailability.get();
    String resolved = choice.resolve(cuda);
    String device;
    double peak = Double.NaN;
    String peakSource = "no GPU: no floor";
    if (resolved.equals("cuda")) {
      DeviceBandwidth.Measured measured = null;
      if (peakGbps != null) {
        peak = peakGbps;
        peakSource = "--peak-gbps";
      } else {
        err.println("[ssb] measuring the device's bandwidth (device-to-device copy)...");
        try {
          measured = DeviceBandwidth.measure();
          peak = measured.gbPerSecond();
          peakSource = "measured: device-to-device copy, read + write";
        } catch (RuntimeException e) {
          // The benchmark itself may still run: only the floor columns are lost.
          err.println("[ssb] could not measure the bandwidth (" + e.getMessage() + "); no floor."
              + " Give it with --peak-gbps.");
          peakSource = "not measured (" + e.getMessage() + "); give --peak-gbps";
        }
      }
      device = measured != null ? measured.deviceName() : "CUDA device 0";
    } else {
      device = choice == BackendChoice.HOST_REFERENCE ? "the CPU (--backend host-reference)"
          : "the CPU (no usable CUDA device: " + cuda.unavailableReason() + ")";
      err.println("[ssb] No usable GPU: Tessera's operators run on the host-reference backend,"
          + " only to check plans and results; its times are not GPU timings.");
    }
    Path outDir = out != null ? out : WorkFolder.get().resolve("ssb-report")
        .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(outDir);

    long start = System.nanoTime();
    SparkSession spark = BenchSession.start(resolved, "NONE", conf);
    List<QueryResult> results;
    try {
      results = new Benchmark(spark, line -> err.println("[ssb] " + line))
          .run(workload, selected, inputs(), runs);
      if (!TesseraRuntime.isUsable()) {
        // Tessera never substitutes a backend: every query ran on Spark's CPU operators.
        err.println("[ssb] WARNING: Tessera's runtime was not usable ("
            + TesseraRuntime.unusableReason() + "): the Tessera side ran on the CPU too.");
        device = device + " (Tessera runtime not usable: " + TesseraRuntime.unusableReason() + ")";
      }
    } finally {
      spark.stop();
    }
    BenchReport report = new BenchReport(scale, seed, runs, resolved, device, peak, peakSource,
        conf, results);
    ReportTable.print(report, System.out);
    CsvReport.write(report, outDir.resolve("ssb.csv"));
    JsonReport.write(report, outDir.resolve("ssb.json"));
    String files = "ssb.csv, ssb.json, ssb.png";
    try {
      ChartReport.write(report, outDir.resolve("ssb.png"));
    } catch (Exception | Error e) {
      // A host without fonts cannot draw text even headless; the numbers are in CSV and JSON.
      err.println("[ssb] the chart ssb.png could not be drawn: " + e);
      files = "ssb.csv, ssb.json; no chart";
    }
    System.out.printf("Report: %s (%s); %.1f s in all%n", outDir, files,
        (System.nanoTime() - start) / 1e9);
    if (report.mismatches() > 0) {
      err.printf("[ssb] FAILED: %d result(s) with Tessera on differ from Spark's; see above.%n",
          report.mismatches());
      return MISMATCH;
    }
    return 0;
  }
}
