package dev.tessera.gpu.agg;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import java.util.List;
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
    /**
     * Adds a batch (owned by the caller) to the groups: its columns are the aggregation's input
     * columns, keys first. The same as {@link #update(Program, ColumnBatch)} with a program that
     * loads every column and has no filter.
     */
    void update(ColumnBatch<DeviceColumn> batch);

    /**
     * Adds the rows of {@code input} (owned by the caller) that {@code program}'s filter keeps;
     * the program's outputs, in order, are the aggregation's input columns (keys first), so
     * their types are the spec's input types. This is the fused pipeline (DESIGN.md §3): on CUDA
     * one kernel per batch evaluates the program and updates the groups from registers, writing
     * nothing in between.
     *
     * @throws dev.tessera.gpu.expr.RowErrorException when a row the filter keeps (or the filter
     *     itself) raised an ANSI-mode error; it names the first such row of the batch. The
     *     groups may then hold part of the batch: the caller abandons the aggregation.
     * @throws dev.tessera.gpu.memory.PoolExhaustedException when device memory for the batch or
     *     for growing the groups runs out. The groups are then as they were before the call, so
     *     a partial aggregation may finish() them, and redo the batch in a fresh aggregation.
     */
    default void update(Program program, ColumnBatch<DeviceColumn> input) {
      update(program, List.of(), input);
    }

    /**
     * {@link #update(Program, ColumnBatch)} for a program that probes {@code tables} (in the
     * order of {@link Program#tables()}): the fused filter -> probe -> project -> aggregate.
     */
    void update(Program program, List<JoinTable> tables, ColumnBatch<DeviceColumn> input);

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
