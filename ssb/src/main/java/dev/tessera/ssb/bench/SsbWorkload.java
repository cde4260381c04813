package dev.tessera.ssb.bench;

import dev.tessera.spark.cache.CacheSummary;
import dev.tessera.ssb.SsbQueries;
import dev.tessera.ssb.SsbQuery;
import dev.tessera.ssb.SsbTables;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/** The Star Schema Benchmark: generated data in {@code dir} (reused if it matches) and its 13 queries. */
public record SsbWorkload(Path dir, double scale, long seed) implements Workload {
  @Override
  public void register(SparkSession spark, boolean cached, Consumer<String> log) {
    SsbData.ensure(spark, dir, scale, seed, log);
    long start = System.nanoTime();
    SsbTables.register(spark, dir, cached);
    if (cached) {
      log.accept(String.format("cached the tables in %.1f s", (System.nanoTime() - start) / 1e9));
      for (String name : SsbTables.NAMES) {
        CacheSummary summary = CacheSummary.of(spark.table(name));
        if (summary != null) {
          // What the device store holds once every column has been read: the device footprint.
          log.accept(String.format(Locale.ROOT, "%s cached: %s on the device as stored, %s"
              + " uncompressed (%.1f%%)", name, CacheSummary.formatBytes(summary.storedBytes()),
              CacheSummary.formatBytes(summary.plainBytes()), summary.storedPercent()));
        }
      }
    }
  }

  @Override
  public List<SsbQuery> queries() {
    return SsbQueries.all();
  }
}
