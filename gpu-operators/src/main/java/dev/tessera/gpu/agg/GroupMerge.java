package dev.tessera.gpu.agg;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.memory.ArenaPool;
import java.util.Optional;

/**
 * Merges the output batches of several aggregations of one {@link AggregateSpec} (each over a
 * chunk of the input) into the groups one aggregation of the whole input gives, on one backend's
 * operators: a hash aggregation with {@link MergeSpec#spec()}, then its finisher.
 */
public final class GroupMerge implements AutoCloseable {
  private final MergeSpec merge;
  private final ProgramKernel filterProject;
  private final ArenaPool pool;
  private final GpuStream stream;
  private HashAggregateKernel.Aggregation aggregation;
  private long rowsAdded;

  /** Opens the merging aggregation on {@code pool} and {@code stream}; the caller closes this. */
  public GroupMerge(MergeSpec merge, HashAggregateKernel aggregate,
      ProgramKernel filterProject, ArenaPool pool, GpuStream stream) {
    this.merge = merge;
    this.filterProject = filterProject;
    this.pool = pool;
    this.stream = stream;
    this.aggregation = aggregate.open(merge.spec(), pool, stream);
  }

  /**
   * Adds one aggregation's output (keys, then one column per function of the original spec),
   * owned by the caller.
   */
  public void add(ColumnBatch<DeviceColumn> groups) {
    if (aggregation == null) {
      throw new IllegalStateException("the merge has finished");
    }
    aggregation.update(groups);
    rowsAdded += groups.rowCount();
  }

  /** Group rows added so far (a key counts once per batch it came in). */
  public long rowsAdded() {
    return rowsAdded;
  }

  /**
   * The merged groups in the original spec's output layout, in new buffers from the pool (the
   * caller closes them). The merge is over after this.
   */
  public ColumnBatch<DeviceColumn> finish() {
    if (aggregation == null) {
      throw new IllegalStateException("the merge has finished");
    }
    try (HashAggregateKernel.Aggregation done = aggregation) {
      aggregation = null;
      ColumnBatch<DeviceColumn> merged = done.finish();
      Optional<Program> finisher = merge.finisher();
      if (finisher.isEmpty()) {
        return merged;
      }
      try (merged) {
        return filterProject.run(finisher.get(), merged, pool, stream);
      }
    }
  }

  @Override
  public void close() {
    if (aggregation != null) {
      aggregation.close();
      aggregation = null;
    }
  }
}
