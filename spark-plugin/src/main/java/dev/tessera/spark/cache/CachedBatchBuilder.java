package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.column.ColumnType;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.UUID;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.columnar.CachedBatch;

/**
 * Cuts one partition's rows into {@link TesseraCachedBatch}es of
 * {@code batchRows} rows, encoding each column as its batch closes.
 */
final class CachedBatchBuilder implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private final List<ColumnType> types;
  private final int batchRows;

  /** @param batchRows rows per batch, a multiple of the kernels' tile (GpuForLayout.SET_VALUES) */
  CachedBatchBuilder(List<ColumnType> types, int batchRows) {
    this.types = List.copyOf(types);
    this.batchRows = batchRows;
  }

  /** The cached batches of a partition's rows. */
  Iterator<CachedBatch> fromRows(Iterator<InternalRow> rows) {
    return new Batches() {
      @Override
      boolean fill(List<ColumnAccumulator> columns) {
        while (rows.hasNext() && columns.get(0).size() < batchRows) {
          InternalRow row = rows.next();
          for (int c = 0; c < columns.size(); c++) {
            columns.get(c).add(row, c);
          }
        }
        return rows.hasNext();
      }
    };
  }

  /** Batches of whatever {@link #fill} adds. */
  private abstract class Batches implements Iterator<CachedBatch> {
    private boolean more = true;
    private CachedBatch ready;

    /** Adds rows until the batch is full or the input ends; returns whether input remains. */
    abstract boolean fill(List<ColumnAccumulator> columns);

    @Override
    public boolean hasNext() {
      if (ready == null && more) {
        List<ColumnAccumulator> columns = new ArrayList<>(types.size());
        for (ColumnType type : types) {
          columns.add(new ColumnAccumulator(type, Math.min(batchRows, 1 << 16)));
        }
        if (columns.isEmpty()) {
          throw new IllegalArgumentException("a cached table has at least one column");
        }
        more = fill(columns);
        if (columns.get(0).size() > 0) {
          ready = close(columns);
        }
      }
      return ready != null;
    }

    @Override
    public CachedBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      CachedBatch batch = ready;
      ready = null;
      return batch;
    }
  }

  private static TesseraCachedBatch close(List<ColumnAccumulator> columns) {
    List<EncodedColumn> encoded = new ArrayList<>(columns.size());
    Object[] stats = new Object[5 * columns.size()];
    for (int c = 0; c < columns.size(); c++) {
      EncodedColumn column = columns.get(c).encode();
      encoded.add(column);
      System.arraycopy(columns.get(c).statistics(column.plainBytes()), 0, stats, 5 * c, 5);
    }
    return new TesseraCachedBatch(UUID.randomUUID(), columns.get(0).size(), encoded,
        new GenericInternalRow(stats));
  }
}
