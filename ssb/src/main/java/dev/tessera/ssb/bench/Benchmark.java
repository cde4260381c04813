package dev.tessera.ssb.bench;

import dev.tessera.ssb.SsbQuery;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Runs queries with Tessera off (Spark's CPU operators) and on, on one session: one warm-up of
 * each side, then {@code runs} measured runs of each, alternating so that both see the same
 * machine state. Every result with Tessera on is compared with Spark's.
 */
public final class Benchmark {
  /** The inputs, in the order they run: Parquet first, as caching changes what later scans read. */
  public static final List<String> INPUTS = List.of("parquet", "cached");

  private final SparkSession spark;
  private final Consumer<String> log;

  public Benchmark(SparkSession spark, Consumer<String> log) {
    this.spark = spark;
    this.log = log;
  }

  /**
   * The queries of {@code workload} that {@code names} lists, in the workload's order; all of them
   * when {@code names} is empty.
   *
   * @throws IllegalArgumentException naming the first name the workload does not have
   */
  public static List<SsbQuery> select(Workload workload, List<String> names) {
    Map<String, SsbQuery> byName = new LinkedHashMap<>();
    workload.queries().forEach(q -> byName.put(q.name(), q));
    for (String name : names) {
      if (!byName.containsKey(name)) {
        throw new IllegalArgumentException("--queries: no query '" + name + "'; the queries are "
            + String.join(",", byName.keySet()));
      }
    }
    return names.isEmpty() ? List.copyOf(byName.values())
        : byName.values().stream().filter(q -> names.contains(q.name())).toList();
  }

  /** Runs {@code queries} on each of {@code inputs} (values of {@link #INPUTS}). */
  public List<QueryResult> run(Workload workload, List<SsbQuery> queries, List<String> inputs,
      int runs) {
    if (runs < 1) {
      throw new IllegalArgumentException("--runs must be at least 1, was " + runs);
    }
    List<QueryResult> results = new ArrayList<>();
    for (String input : INPUTS) {
      if (!inputs.contains(input)) {
        continue;
      }
      // A cached table would also serve the Parquet views' scans: start each input clean.
      spark.catalog().clearCache();
      workload.register(spark, input.equals("cached"), log);
      for (SsbQuery query : queries) {
        results.add(runQuery(query, input, runs));
      }
    }
    return results;
  }

  private QueryResult runQuery(SsbQuery query, String input, int runs) {
    String what = "query " + query.name() + " (" + input + ")";
    Run expected = timed(query, false);
    log.accept(String.format("%s: warm-up, CPU %.0f ms", what, expected.millis));
    Run warm = timed(query, true);
    log.accept(String.format("%s: warm-up, Tessera %.0f ms", what, warm.millis));
    String mismatch = compare(expected, warm);
    List<Double> cpu = new ArrayList<>();
    List<Double> gpu = new ArrayList<>();
    Run last = warm;
    for (int i = 1; i <= runs; i++) {
      Run c = timed(query, false);
      cpu.add(c.millis);
      last = timed(query, true);
      gpu.add(last.millis);
      if (mismatch == null) {
        mismatch = compare(expected, last);
      }
      log.accept(String.format("%s: run %d/%d, CPU %.0f ms, Tessera %.0f ms", what, i, runs,
          c.millis, last.millis));
    }
    if (mismatch != null) {
      log.accept("MISMATCH in " + what + ": " + mismatch);
    }
    PlanProfile profile = PlanProfile.of(last.df.queryExecution().executedPlan());
    return new QueryResult(query.name(), input, expected.rows.size(), cpu, gpu, profile,
        mismatch);
  }

  private static String compare(Run expected, Run actual) {
    return ResultComparison.difference(expected.rows, actual.rows,
        ResultComparison.DEFAULT_TOLERANCE);
  }

  private record Run(Dataset<Row> df, List<Row> rows, double millis) {}

  private Run timed(SsbQuery query, boolean tessera) {
    BenchSession.withTessera(spark, tessera);
    long start = System.nanoTime();
    Dataset<Row> df = spark.sql(query.sql());
    List<Row> rows = df.collectAsList();
    return new Run(df, rows, (System.nanoTime() - start) / 1e6);
  }
}
