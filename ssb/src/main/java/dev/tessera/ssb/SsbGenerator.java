package dev.tessera.ssb;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;

/**
 * The Star Schema Benchmark's data (O'Neil et al., SSB specification, revision 3), generated in
 * Java: the five tables with the specification's schema, row counts per scale factor and value
 * distributions, deterministic for a given seed, generated in parallel by Spark tasks and written
 * as Parquet. Fractional scale factors give quick runs.
 *
 * <p>Row counts: 1,500,000 x SF orders of 1 to 7 lines (about 6,000,000 x SF lineorder rows),
 * 30,000 x SF customers, 2,000 x SF suppliers, 200,000 x (1 + floor(log2 SF)) parts (200,000 x
 * SF below SF 1), each at least 1, and the 2,556 days of the date table.
 *
 * <p>Where this differs from ssb-dbgen, for simplicity and with no effect on the 13 queries:
 * order keys are dense (1 to the order count); a line's customer, part and supplier are drawn
 * uniformly (dbgen derives the supplier from the part); prices are in cents as dbgen writes them,
 * from TPC-H's retail price formula, with the supply cost 60% of the retail price; lo_shippriority
 * is always '0'; d_holidayfl marks a fixed list of US holidays. Random streams are split per
 * chunk of keys, so the data is not byte-for-byte dbgen's.
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
    SsbScale.of(scaleFactor); // a bad scale factor is the caller's error, before Spark's
    generate(spark, scaleFactor, seed, outDir, spark.sparkContext().defaultParallelism());
  }

  /**
   * As {@link #generate(SparkSession, double, long, Path)}, in at most {@code tasks} Spark tasks
   * (and so Parquet files) per table; the rows do not depend on it.
   */
  public static void generate(SparkSession spark, double scaleFactor, long seed, Path outDir,
      int tasks) {
    SsbScale scale = SsbScale.of(scaleFactor);
    if (tasks < 1) {
      throw new IllegalArgumentException("SSB generator tasks must be at least 1, got " + tasks);
    }
    write(spark, new LineorderChunks(seed, scale), tasks, outDir);
    write(spark, new DimensionChunks.Customers(seed, scale.customers()), tasks, outDir);
    write(spark, new DimensionChunks.Suppliers(seed, scale.suppliers()), tasks, outDir);
    write(spark, new DimensionChunks.Parts(seed, scale.parts()), tasks, outDir);
    // The date table depends on nothing random; one file.
    spark.createDataFrame(SsbCalendar.rows(), SsbSchemas.DATE).coalesce(1)
        .write().mode(SaveMode.Overwrite).parquet(outDir.resolve("date").toString());
  }

  private static void write(SparkSession spark, TableChunks chunks, int tasks, Path outDir) {
    List<Integer> indices = IntStream.range(0, chunks.chunkCount()).boxed()
        .collect(Collectors.toList());
    JavaRDD<Row> rows = JavaSparkContext.fromSparkContext(spark.sparkContext())
        .parallelize(indices, Math.min(tasks, indices.size()))
        .flatMap(chunks);
    spark.createDataFrame(rows, chunks.schema())
        .write().mode(SaveMode.Overwrite).parquet(outDir.resolve(chunks.table()).toString());
  }
}
