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
     * Nanoseconds the last update spent generating and compiling its kernel (0 when it found one
     * compiled, or runs none).
     */
    default long lastCompileNanos() {
      return 0;
    }

    /**
     * The groups (keys, then one column per function), in no particular order.
     *
     * @throws dev.tessera.gpu.expr.RowErrorException for an ANSI overflow
     * @throws dev.tessera.gpu.memory.PoolExhaustedException when device memory for the output
     *     runs out; the groups are then as they were, so the caller may retry, or emit them in
     *     parts ({@link #finish(long, int)})
     */
    ColumnBatch<DeviceColumn> finish();

    /**
     * Whether {@link #finish(long, int)} can emit the groups in parts (the host reference can;
     * the CUDA table emits them all at once).
     */
    default boolean canFinishInParts() {
      return false;
    }

    /** How many groups {@link #finish()} would emit (1 for a global aggregate). */
    default long groupCount() {
      throw new UnsupportedOperationException("this aggregation cannot count its groups");
    }

    /**
     * Groups {@code [from, from + count)} of the groups in a fixed order (unchanged while no
     * update runs), so that groups that do not fit in device memory at once come out in parts;
     * the aggregation stays open for the next part.
     *
     * @throws dev.tessera.gpu.memory.PoolExhaustedException when the part does not fit; the
     *     groups are then as they were (as for {@link #finish()}), so a smaller part may follow
     */
    default ColumnBatch<DeviceColumn> finish(long from, int count) {
      throw new UnsupportedOperationException("this aggregation cannot emit its groups in parts");
    }

    @Override
    void close();
  }
}
