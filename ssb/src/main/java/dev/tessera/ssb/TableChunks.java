package dev.tessera.ssb;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * One table cut into fixed-size chunks of keys, each generated from its own random stream
 * (seeded by the seed, the table and the chunk index): a chunk's rows never depend on which
 * task generates it or on how many tasks there are.
 */
abstract class TableChunks implements FlatMapFunction<Integer, Row> {
  private static final long serialVersionUID = 1L;

  private final String table;
  private final long seed;
  private final long units;
  private final int unitsPerChunk;

  /**
   * @param units the keys to generate, 1 to {@code units}
   * @param unitsPerChunk keys per chunk; part of the data's definition, since it fixes the
   *     random streams
   */
  TableChunks(String table, long seed, long units, int unitsPerChunk) {
    this.table = table;
    this.seed = seed;
    this.units = units;
    this.unitsPerChunk = unitsPerChunk;
  }

  final String table() {
    return table;
  }

  abstract StructType schema();

  final int chunkCount() {
    return (int) ((units + unitsPerChunk - 1) / unitsPerChunk);
  }

  @Override
  public final Iterator<Row> call(Integer chunk) {
    if (chunk < 0 || chunk >= chunkCount()) {
      throw new IllegalArgumentException("chunk " + chunk + " of table " + table
          + " is outside 0.." + (chunkCount() - 1));
    }
    long first = (long) chunk * unitsPerChunk + 1;
    long last = Math.min(units, first + unitsPerChunk - 1);
    SplittableRandom random = new SplittableRandom(streamSeed(seed, table, chunk));
    List<Row> rows = new ArrayList<>();
    for (long key = first; key <= last; key++) {
      addRows((int) key, random, rows);
    }
    return rows.iterator();
  }

  /** Adds the rows of key {@code key} (one row; an order's lines for lineorder). */
  abstract void addRows(int key, SplittableRandom random, List<Row> rows);

  /** Mixes the three so that neighbouring seeds and chunks get unrelated streams. */
  static long streamSeed(long seed, String table, int chunk) {
    long h = mix(seed ^ 0x5DEECE66DL);
    h = mix(h ^ table.hashCode());
    return mix(h + chunk);
  }

  /** SplitMix64's finaliser. */
  private static long mix(long z) {
    z += 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
