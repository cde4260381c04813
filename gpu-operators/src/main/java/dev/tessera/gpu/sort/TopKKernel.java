package dev.tessera.gpu.sort;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;

/**
 * The top-k operator ({@code ORDER BY ... LIMIT k}): a running top-k that takes every batch of a
 * task and holds at most k rows on the device, whatever the input size.
 */
public interface TopKKernel {
  /** A running top-k for {@code spec} on {@code pool} and {@code stream}; the caller closes it. */
  Running open(TopKSpec spec, ArenaPool pool, GpuStream stream);

  /** One task's top-k. */
  interface Running extends AutoCloseable {
    /**
     * Adds {@code batch}'s rows (the batch stays owned by the caller): afterwards the running
     * top-k holds the first {@code limit} rows of everything added, in order.
     */
    void add(ColumnBatch<DeviceColumn> batch);

    /** Rows the running top-k holds now (at most the limit). */
    int rowCount();

    /**
     * The first {@code limit} rows of everything added, in order, in new buffers from the pool
     * (the caller closes them); no rows when nothing was added. The top-k is over after this.
     */
    ColumnBatch<DeviceColumn> finish();

    /** Frees the rows held; the batches {@link #finish} returned stay the caller's. */
    @Override
    void close();
  }
}
