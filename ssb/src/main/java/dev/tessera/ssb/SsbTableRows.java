package dev.tessera.ssb;

import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Supplier;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * One SSB table's rows generated in this JVM, without Spark: the rows {@link SsbGenerator} writes
 * for the same scale factor and seed, in the same order (chunk after chunk, in key order), one
 * chunk in memory at a time. For tools that measure the data itself, such as the compression
 * report, at scale factors whose tables would not fit in memory as rows.
 */
public final class SsbTableRows {
  private final String name;
  private final StructType schema;
  private final Supplier<Iterator<Row>> rows;

  private SsbTableRows(String name, StructType schema, Supplier<Iterator<Row>> rows) {
    this.name = name;
    this.schema = schema;
    this.rows = rows;
  }

  /** The five tables of {@code scaleFactor} and {@code seed}, in {@link SsbTables#NAMES}' order. */
  public static List<SsbTableRows> all(double scaleFactor, long seed) {
    SsbScale scale = SsbScale.of(scaleFactor);
    return List.of(
        chunked(new LineorderChunks(seed, scale)),
        chunked(new DimensionChunks.Customers(seed, scale.customers())),
        chunked(new DimensionChunks.Suppliers(seed, scale.suppliers())),
        chunked(new DimensionChunks.Parts(seed, scale.parts())),
        new SsbTableRows("date", SsbSchemas.DATE, () -> SsbCalendar.rows().iterator()));
  }

  /** The table's name, as the queries use it. */
  public String name() {
    return name;
  }

  /** The table's schema, as written to Parquet. */
  public StructType schema() {
    return schema;
  }

  /** A new pass over the rows, generated as they are read. */
  public Iterator<Row> rows() {
    return rows.get();
  }

  private static SsbTableRows chunked(TableChunks chunks) {
    return new SsbTableRows(chunks.table(), chunks.schema(), () -> new ChunkIterator(chunks));
  }

  /** The rows of chunk 0, then chunk 1, ...: each chunk generated when the last is used up. */
  private static final class ChunkIterator implements Iterator<Row> {
    private final TableChunks chunks;
    private int nextChunk;
    private Iterator<Row> current = Collections.emptyIterator();

    ChunkIterator(TableChunks chunks) {
      this.chunks = chunks;
    }

    @Override
    public boolean hasNext() {
      while (!current.hasNext() && nextChunk < chunks.chunkCount()) {
        current = chunks.call(nextChunk++);
      }
      return current.hasNext();
    }

    @Override
    public Row next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return current.next();
    }
  }
}
