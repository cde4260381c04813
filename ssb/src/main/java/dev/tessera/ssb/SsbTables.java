package dev.tessera.ssb;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
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
   *
   * @throws IllegalArgumentException if a table's directory is missing, naming it
   */
  public static void register(SparkSession spark, Path dataDir, boolean cached) {
    // Check all five before registering any, so a bad directory leaves no half-set session.
    for (String name : NAMES) {
      Path table = dataDir.resolve(name);
      if (!Files.isDirectory(table)) {
        throw new IllegalArgumentException("SSB table " + name + " not found: no directory "
            + table.toAbsolutePath() + " (generate the data first)");
      }
    }
    for (String name : NAMES) {
      Dataset<Row> table = spark.read().parquet(dataDir.resolve(name).toString());
      if (cached) {
        table = table.cache();
        table.count();
      }
      table.createOrReplaceTempView(name);
    }
  }
}
