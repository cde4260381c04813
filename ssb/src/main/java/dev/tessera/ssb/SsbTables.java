package dev.tessera.ssb;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;

/** Registers generated SSB data as the temporary views the queries read. */
public final class SsbTables {
  /** The tables, as the queries name them. */
  public static final java.util.List<String> NAMES =
      java.util.List.of("lineorder", "customer", "supplier", "part", "date");

  private SsbTables() {}

  /**
   * Registers each table under {@code dataDir} (as {@link SsbGenerator} wrote it) as a temporary
   * view of its name; with {@code cached} each is cached and materialised first.
   */
  public static void register(SparkSession spark, Path dataDir, boolean cached) {
    throw new UnsupportedOperationException("SSB tables: being written");
  }
}
