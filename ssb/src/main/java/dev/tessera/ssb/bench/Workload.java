package dev.tessera.ssb.bench;

import dev.tessera.ssb.SsbQuery;
import java.util.List;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/** What the benchmark runs: tables to register (generating them if needed) and the queries. */
public interface Workload {
  /** Makes the tables the queries read visible in {@code spark}, as cached tables or not. */
  void register(SparkSession spark, boolean cached, Consumer<String> log);

  /** Every query the workload has, in order. */
  List<SsbQuery> queries();
}
