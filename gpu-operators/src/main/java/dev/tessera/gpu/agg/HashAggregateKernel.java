package dev.tessera.gpu.agg;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;

/**
 * The hash aggregation operator (DESIGN.md §3): one aggregation state lives across all batches of
 * a task and is emitted once at the end.
 */
public interface HashAggregateKernel {
  /** Starts an aggregation; the caller closes it. */
  Aggregation open(AggregateSpec spec, ArenaPool pool, GpuStream stream);

  /** The state of one aggregation. */
  interface Aggregation extends AutoCloseable {
    /** Adds a batch (owned by the caller) to the groups. */
    void update(ColumnBatch<DeviceColumn> batch);

    /**
     * The groups (keys, then one column per function), in no particular order.
     *
     * @throws dev.tessera.gpu.expr.RowErrorException for an ANSI overflow
     */
    ColumnBatch<DeviceColumn> finish();

    @Override
    void close();
  }
}
