package dev.tessera.ssb.compression;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.cache.ColumnAccumulator;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Function1;

/**
 * Cuts a table's rows into batches of {@code batchRows} rows, as the cache's CachedBatchBuilder
 * does a partition's, encodes each column of each batch with {@link EncodedColumn}'s entry
 * points, and adds the sizes up per column. The whole table is taken as one partition: Spark's
 * cache starts a new batch at each partition, so it may hold a few more partial batches.
 */
final class BatchEncoder {
  private final StructType schema;
  private final List<ColumnType> types = new ArrayList<>();
  private final int batchRows;

  BatchEncoder(StructType schema, int batchRows) {
    if (batchRows < 1) {
      throw new IllegalArgumentException("batch rows must be positive, not " + batchRows);
    }
    this.schema = schema;
    this.batchRows = batchRows;
    for (StructField field : schema.fields()) {
      try {
        types.add(SparkTypes.columnType(field.dataType()));
      } catch (Unsupported e) {
        throw new IllegalArgumentException("column " + field.name() + ": " + e.getMessage(), e);
      }
    }
  }

  /** The table {@code name}'s {@code rows} (of this schema), encoded and measured. */
  TableCompression encode(String name, Iterator<Row> rows) {
    List<ColumnCompression> columns = new ArrayList<>(types.size());
    for (int c = 0; c < types.size(); c++) {
      columns.add(new ColumnCompression(schema.fields()[c].name(), types.get(c)));
    }
    // The cache is fed InternalRows (a scan's rows): convert as Spark's createDataFrame does.
    @SuppressWarnings("unchecked")
    Function1<Object, Object> toInternal =
        (Function1<Object, Object>) CatalystTypeConverters.createToCatalystConverter(schema);
    long total = 0;
    int batches = 0;
    while (rows.hasNext()) {
      List<ColumnAccumulator> batch = newBatch();
      int size = 0;
      while (size < batchRows && rows.hasNext()) {
        InternalRow row = (InternalRow) toInternal.apply(rows.next());
        for (int c = 0; c < batch.size(); c++) {
          batch.get(c).add(row, c);
        }
        size++;
      }
      for (int c = 0; c < batch.size(); c++) {
        columns.get(c).add(batch.get(c).encode());
      }
      total += size;
      batches++;
    }
    return new TableCompression(name, total, batches, columns);
  }

  private List<ColumnAccumulator> newBatch() {
    List<ColumnAccumulator> batch = new ArrayList<>(types.size());
    for (ColumnType type : types) {
      // Grown as needed, as the cache's are: a small table needs no batch-sized arrays.
      batch.add(new ColumnAccumulator(type, Math.min(batchRows, 1 << 16)));
    }
    return batch;
  }
}
