package dev.tessera.gpu.column;

import java.util.List;

/**
 * Columns of equal row count that travel together, host or device side. Owns its columns.
 *
 * @param <C> {@link HostColumn} or {@link DeviceColumn}
 */
public final class ColumnBatch<C extends AutoCloseable> implements AutoCloseable {
  private final List<C> columns;
  private final int rowCount;
  private boolean closed;

  /** Takes ownership of {@code columns}. */
  public ColumnBatch(List<C> columns, int rowCount) {
    this.columns = List.copyOf(columns);
    this.rowCount = rowCount;
  }

  public List<C> columns() {
    return columns;
  }

  public C column(int index) {
    return columns.get(index);
  }

  public int rowCount() {
    return rowCount;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    RuntimeException failure = null;
    for (C column : columns) {
      try {
        column.close();
      } catch (Exception e) {
        if (failure == null) {
          failure = new IllegalStateException("closing a column failed", e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
