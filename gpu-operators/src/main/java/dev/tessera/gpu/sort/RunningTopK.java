package dev.tessera.gpu.sort;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;

/**
 * What every backend's running top-k does the same way: it checks each batch, skips empty ones,
 * owns the rows held between batches and hands them over once at {@link #finish}. A backend
 * supplies the step (the first k of the rows held and a batch's) and an empty result.
 */
public abstract class RunningTopK implements TopKKernel.Running {
  protected final TopKSpec spec;
  /** The first rows so far, in order; null before the first batch and after finish(). */
  private ColumnBatch<DeviceColumn> held;
  private boolean finished;

  protected RunningTopK(TopKSpec spec) {
    this.spec = spec;
  }

  /**
   * The first {@code spec.limit()} rows of {@code held} (null before the first batch; its rows
   * come first, in order) and then {@code batch}'s (not empty), in new buffers. Both inputs stay
   * the caller's.
   */
  protected abstract ColumnBatch<DeviceColumn> step(ColumnBatch<DeviceColumn> held,
      ColumnBatch<DeviceColumn> batch);

  /** No rows, in the spec's column types, in new buffers. */
  protected abstract ColumnBatch<DeviceColumn> empty();

  @Override
  public final void add(ColumnBatch<DeviceColumn> batch) {
    if (finished) {
      throw new IllegalStateException("the top-k has finished");
    }
    if (batch.columns().size() != spec.columnTypes().size()) {
      throw new IllegalArgumentException("the top-k takes batches of "
          + spec.columnTypes().size() + " columns, got " + batch.columns().size());
    }
    for (DeviceColumn column : batch.columns()) {
      if (column.isEncoded()) {
        throw new IllegalArgumentException("the top-k reads plain columns; decode "
            + column.encoding() + " columns first");
      }
    }
    if (batch.rowCount() == 0) {
      return;
    }
    ColumnBatch<DeviceColumn> next = step(held, batch);
    if (held != null) {
      held.close();
    }
    held = next;
  }

  @Override
  public final int rowCount() {
    return held == null ? 0 : held.rowCount();
  }

  @Override
  public final ColumnBatch<DeviceColumn> finish() {
    if (finished) {
      throw new IllegalStateException("the top-k has finished");
    }
    finished = true;
    ColumnBatch<DeviceColumn> result = held != null ? held : empty();
    held = null;
    return result;
  }

  @Override
  public final void close() {
    if (held != null) {
      held.close();
      held = null;
    }
  }
}
