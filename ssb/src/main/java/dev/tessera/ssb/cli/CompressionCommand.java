package dev.tessera.ssb.cli;

import dev.tessera.ssb.SsbTableRows;
import dev.tessera.ssb.compression.CompressionReport;
import dev.tessera.ssb.compression.CompressionTable;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bin/tessera compression}: the SSB tables' compression in Tessera's cache format,
 * generated and encoded on the CPU without Spark or a GPU ({@link CompressionReport}).
 */
@Command(name = "compression", mixinStandardHelpOptions = true,
    description = {"Generates the SSB tables (as 'ssb' does, without Spark) and encodes every",
        "column in the cache's batches with the host GPU-FOR encoder; prints bits per value per",
        "column (plain, NSF, encoded, payload, overhead) and each table's totals.",
        "Needs no GPU. Exits 2 on a bad argument."})
public final class CompressionCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = "--scale", defaultValue = "0.1",
      description = "SSB scale factor, > 0; fractions allowed (default: ${DEFAULT-VALUE})")
  double scale;

  @Option(names = "--seed", defaultValue = "1", description = "generator seed (default: ${DEFAULT-VALUE})")
  long seed;

  /**
   * The cache's default ({@link CompressionReport#DEFAULT_BATCH_ROWS}; a test checks they agree)
   * as a literal: picocli builds every subcommand before TesseraCli.main quiets the logging, and
   * reading it from TesseraConf there would start log4j with Spark's configuration.
   */
  static final String DEFAULT_BATCH_ROWS = "4194304";

  @Option(names = "--batch-rows", paramLabel = "N", defaultValue = DEFAULT_BATCH_ROWS,
      description = "rows per cached batch, as spark.tessera.cache.batchRows, rounded up to a"
          + " multiple of 512 as the cache does (default: the cache's, ${DEFAULT-VALUE})")
  int batchRows;

  @Override
  public Integer call() {
    if (!(scale > 0) || Double.isInfinite(scale)) {
      throw bad("--scale must be a positive number (e.g. 0.1 or 1), not '" + scale + "'");
    }
    try {
      SsbTableRows.all(scale, seed); // checks the scale factor's row counts, generates nothing
    } catch (IllegalArgumentException e) {
      throw bad("--scale: " + e.getMessage());
    }
    if (batchRows < 1) {
      throw bad("--batch-rows must be at least 1, not '" + batchRows + "'");
    }
    CompressionReport report = CompressionReport.measure(scale, seed, batchRows,
        line -> System.err.println("[compression] " + line));
    CompressionTable.print(report, System.out);
    return 0;
  }

  private CommandLine.ParameterException bad(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
