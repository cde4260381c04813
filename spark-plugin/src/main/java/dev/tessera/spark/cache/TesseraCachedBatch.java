package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.EncodedColumn;
import java.io.Serializable;
import java.util.List;
import java.util.UUID;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.columnar.SimpleMetricsCachedBatch;

/**
 * One batch of a table cached in Tessera's format: its columns encoded with GPU-FOR, GPU-DFOR, a
 * dictionary or plain ({@link EncodedColumn}), and the per-column statistics Spark's batch pruning
 * reads ({@code lowerBound, upperBound, nullCount, count, sizeInBytes} per column, Spark's
 * ColumnStatisticsSchema). Spark's block manager stores it like any cached batch (in memory or
 * serialized to disk); the executor's device store keeps a device copy of its columns, found by
 * {@link #id()}.
 */
public final class TesseraCachedBatch implements SimpleMetricsCachedBatch, Serializable {
  private static final long serialVersionUID = 1L;

  private final UUID id;
  private final int numRows;
  private final EncodedColumn[] columns;
  private final InternalRow stats;

  /**
   * @param id names this batch's device copy: unique per batch built (a batch Spark recomputes
   *     gets a new one, so a device copy never outlives the data it copies)
   */
  TesseraCachedBatch(UUID id, int numRows, List<EncodedColumn> columns, InternalRow stats) {
    this.id = id;
    this.numRows = numRows;
    this.columns = columns.toArray(new EncodedColumn[0]);
    this.stats = stats;
  }

  public UUID id() {
    return id;
  }

  @Override
  public int numRows() {
    return numRows;
  }

  @Override
  public InternalRow stats() {
    return stats;
  }

  /** Column {@code ordinal} of the cached table's schema. */
  public EncodedColumn column(int ordinal) {
    return columns[ordinal];
  }

  public int columnCount() {
    return columns.length;
  }
}
