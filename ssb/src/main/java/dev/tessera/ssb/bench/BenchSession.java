package dev.tessera.ssb.bench;

import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The embedded local-mode Spark session the commands run in, with Tessera's plugin. */
public final class BenchSession {
  static final String ENABLED = "spark.tessera.enabled";

  private BenchSession() {}

  /**
   * A local[*] session with the plugin on {@code backend}; Tessera's rewrites start enabled and
   * {@link #withTessera} switches them per run, on this same session, as the tests do.
   */
  public static SparkSession start(String backend, String explain) {
    int cores = Runtime.getRuntime().availableProcessors();
    SparkSession spark = SparkSession.builder()
        .master("local[*]")
        .appName("tessera")
        .config("spark.plugins", "dev.tessera.TesseraPlugin")
        .config("spark.tessera.backend", backend)
        .config("spark.tessera.explain", explain)
        .config("spark.ui.enabled", "false")
        // Spark's default of 200 shuffle partitions is for clusters; on one machine a few per
        // core keep every core busy without thousands of tiny tasks.
        .config("spark.sql.shuffle.partitions", Integer.toString(Math.max(4, 2 * cores)))
        .getOrCreate();
    // Spark's default profile logs at INFO; at WARN Tessera's explain report still shows. A
    // quieter configuration (bin/tessera's own, or the user's) is left as it is: setLogLevel
    // would raise its root level.
    if (LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME).isInfoEnabled()) {
      spark.sparkContext().setLogLevel("WARN");
    }
    return spark;
  }

  /** Sets Tessera's runtime switch for the session; the next query is planned with it. */
  public static void withTessera(SparkSession spark, boolean enabled) {
    spark.conf().set(ENABLED, Boolean.toString(enabled));
  }
}
