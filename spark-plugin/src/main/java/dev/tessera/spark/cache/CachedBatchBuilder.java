package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.GpuForLayout;
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
 * Cuts one partition's rows into {@link TesseraCachedBatch}es of {@code batchRows} rows, encoding
 * each column as its batch closes. A batch's values wait on the heap until then, so a batch also
 * closes, at a whole tile, once they take {@code batchHeapBytes}: every task slot of the executor
 * builds a batch at once, and the rows alone do not say how wide a table's rows are.
 */
final class CachedBatchBuilder implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /**
   * The share of the executor's heap one batch's values may take, as a divisor of the heap per
   * task slot: half a slot's share, so that Spark's own use of the heap fits beside it.
   */
  private static final int HEAP_SHARE_DIVISOR = 2;

  private final List<ColumnType> types;
  private final int batchRows;
  private final long batchHeapBytes;

  /**
   * @param batchRows rows per batch, a multiple of the kernels' tile (GpuForLayout.SET_VALUES)
   * @param batchHeapBytes the heap a batch's values may take before it closes early; 0 for
   *     {@link #executorShare()}, taken where the rows are read
   */
  CachedBatchBuilder(List<ColumnType> types, int batchRows, long batchHeapBytes) {
    if (batchHeapBytes < 0) {
      throw new IllegalArgumentException("a batch's heap bound is 0 (automatic) or more, not "
          + batchHeapBytes);
    }
    this.types = List.copyOf(types);
    this.batchRows = batchRows;
    this.batchHeapBytes = batchHeapBytes;
  }

  /**
   * The heap one batch may take on this JVM: the heap per task slot (a core each, as for the
   * pinned pool's automatic cap), halved. SSB's lineorder takes about 227 bytes a row here, 0.95
   * GB a batch of the default 4,194,304 rows, so its batches stay whole from about 1.9 GB of heap
   * a core.
   */
  static long executorShare() {
    Runtime runtime = Runtime.getRuntime();
    return runtime.maxMemory() / ((long) HEAP_SHARE_DIVISOR * runtime.availableProcessors());
  }

  /** The cached batches of a partition's rows. */
  Iterator<CachedBatch> fromRows(Iterator<InternalRow> rows) {
    long heapBound = batchHeapBytes > 0 ? batchHeapBytes : executorShare();
    return new Batches() {
      @Override
      boolean fill(List<ColumnAccumulator> columns) {
        while (rows.hasNext() && !full(columns, heapBound)) {
          InternalRow row = rows.next();
          for (int c = 0; c < columns.size(); c++) {
            columns.get(c).add(row, c);
          }
        }
        return rows.hasNext();
      }
    };
  }

  /**
   * Whether a batch holding {@code columns} is closed: at {@link #batchRows} rows, or at a whole
   * tile once its values take {@code heapBound} bytes (so full batches stay whole tiles).
   */
  private boolean full(List<ColumnAccumulator> columns, long heapBound) {
    int rows = columns.get(0).size();
    if (rows >= batchRows) {
      return true;
    }
    if (rows == 0 || rows % GpuForLayout.SET_VALUES != 0) {
      return false;
    }
    long bytes = 0;
    for (ColumnAccumulator column : columns) {
      bytes += column.heapBytes();
    }
    return bytes >= heapBound;
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
