package dev.tessera.ssb.compression;

import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.spark.TesseraConf;
import dev.tessera.ssb.SsbTableRows;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * How well Tessera's cache format compresses the SSB tables: every column of every table
 * generated (without Spark) and encoded on the CPU with the host GPU-FOR encoder in the cache's
 * batches, as {@code bin/tessera compression} prints it. The figures to set beside the Crystal
 * thesis's (GPU-FOR: 0.75 bit per value of overhead over the packed bit widths).
 *
 * @param batchRows rows per batch, as the cache cuts them ({@link #cacheBatchRows})
 * @param seconds the time the generation and encoding took
 */
public record CompressionReport(double scaleFactor, long seed, int batchRows,
    List<TableCompression> tables, double seconds) {
  /** The cache's default batch size, spark.tessera.cache.batchRows's default. */
  public static final int DEFAULT_BATCH_ROWS = TesseraConf.CACHE_BATCH_ROWS.defaultValue();

  public CompressionReport {
    tables = List.copyOf(tables);
  }

  /**
   * Generates and encodes the five tables of {@code scaleFactor} and {@code seed}, in batches of
   * {@code requestedBatchRows} rounded as the cache rounds them; {@code progress} hears of each
   * table as it is done.
   */
  public static CompressionReport measure(double scaleFactor, long seed, int requestedBatchRows,
      Consumer<String> progress) {
    int batchRows = cacheBatchRows(requestedBatchRows);
    long start = System.nanoTime();
    List<TableCompression> tables = new ArrayList<>();
    for (SsbTableRows table : SsbTableRows.all(scaleFactor, seed)) {
      long tableStart = System.nanoTime();
      TableCompression measured =
          new BatchEncoder(table.schema(), batchRows).encode(table.name(), table.rows());
      tables.add(measured);
      progress.accept(String.format(java.util.Locale.ROOT, "%s: %,d rows in %.1f s",
          table.name(), measured.rows(), (System.nanoTime() - tableStart) / 1e9));
    }
    return new CompressionReport(scaleFactor, seed, batchRows, tables,
        (System.nanoTime() - start) / 1e9);
  }

  /**
   * The rows per batch the cache uses for a spark.tessera.cache.batchRows of {@code requested}:
   * rounded up to whole kernel tiles ({@link GpuForLayout#SET_VALUES}), as
   * TesseraCachedBatchSerializer.batchRows does (package-private there).
   */
  public static int cacheBatchRows(int requested) {
    if (requested < 1) {
      throw new IllegalArgumentException("batch rows must be at least 1, not " + requested);
    }
    long tiles = ((long) requested + GpuForLayout.SET_VALUES - 1) / GpuForLayout.SET_VALUES;
    return (int) Math.min(tiles * GpuForLayout.SET_VALUES,
        Integer.MAX_VALUE / GpuForLayout.SET_VALUES * GpuForLayout.SET_VALUES);
  }

  /** Plain bytes of all the tables. */
  public long plainBytes() {
    return tables.stream().mapToLong(TableCompression::plainBytes).sum();
  }

  /** Encoded bytes of all the tables: what their device copies hold. */
  public long encodedBytes() {
    return tables.stream().mapToLong(TableCompression::encodedBytes).sum();
  }

  /** The table called {@code name}. */
  public TableCompression table(String name) {
    return tables.stream().filter(t -> t.name().equals(name)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no table " + name));
  }
}
