package dev.tessera.ssb.bench;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The embedded local-mode Spark session the commands run in, with Tessera's plugin. */
public final class BenchSession {
  static final String ENABLED = "spark.tessera.enabled";
  /** The settings the session sets itself, which a caller's settings may not replace. */
  public static final Set<String> OWN_SETTINGS =
      Set.of("spark.plugins", "spark.tessera.backend", ENABLED, "spark.master");

  private BenchSession() {}

  /**
   * A local[*] session with the plugin on {@code backend}; Tessera's rewrites start enabled and
   * {@link #withTessera} switches them per run, on this same session, as the tests do.
   */
  public static SparkSession start(String backend, String explain) {
    return start(backend, explain, Map.of());
  }

  /**
   * The same, with Spark settings of the caller's (for both sides of a benchmark) applied last.
   *
   * @throws IllegalArgumentException if {@code settings} names one of {@link #OWN_SETTINGS}
   */
  public static SparkSession start(String backend, String explain, Map<String, String> settings) {
    for (String key : settings.keySet()) {
      if (OWN_SETTINGS.contains(key)) {
        throw new IllegalArgumentException("the session sets " + key + " itself");
      }
    }
    int cores = Runtime.getRuntime().availableProcessors();
    SparkSession.Builder builder = SparkSession.builder()
        .master("local[*]")
        .appName("tessera")
        .config("spark.plugins", "dev.tessera.TesseraPlugin")
        .config("spark.tessera.backend", backend)
        .config("spark.tessera.explain", explain)
        .config("spark.ui.enabled", "false")
        // Spark's default of 200 shuffle partitions is for clusters; on one machine a few per
        // core keep every core busy without thousands of tiny tasks.
        .config("spark.sql.shuffle.partitions", Integer.toString(Math.max(4, 2 * cores)));
    settings.forEach(builder::config);
    SparkSession spark = builder.getOrCreate();
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
