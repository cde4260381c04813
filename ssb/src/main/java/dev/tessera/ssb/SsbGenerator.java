package dev.tessera.ssb;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;

/**
 * The Star Schema Benchmark's data (O'Neil et al., SSB specification, revision 3), generated in
 * Java: the five tables with the specification's schema, row counts per scale factor and value
 * distributions, deterministic for a given seed, generated in parallel by Spark tasks and written
 * as Parquet. Fractional scale factors give quick runs.
 */
public final class SsbGenerator {
  private SsbGenerator() {}

  /**
   * Writes {@code lineorder}, {@code customer}, {@code supplier}, {@code part} and {@code date}
   * as Parquet directories under {@code outDir} (each replaced if present).
   *
   * @param scaleFactor the SSB scale factor, positive; fractions allowed (0.01 is ~60,000
   *     lineorder rows)
   * @param seed the same seed and scale factor give the same rows, whatever the parallelism
   */
  public static void generate(SparkSession spark, double scaleFactor, long seed, Path outDir) {
    throw new UnsupportedOperationException("SSB generator: being written");
  }
}
