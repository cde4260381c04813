package dev.tessera.gpu.join;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;
import java.util.List;

/**
 * The hash join operator. Probes with unique build keys (and every semi or anti probe) run inside
 * the fused filter/project (and aggregate) program through the PROBE and LOAD_BUILD opcodes;
 * {@link #expand} is the 1:N path for inner and left outer joins whose build keys repeat.
 */
public interface HashJoinKernel {
  /**
   * Builds a join table. The first {@code schema.keyTypes().size()} columns of {@code build} are
   * the keys, the others the payload, with the schema's types. The table copies what it needs
   * into memory from {@code pool}: {@code build} stays owned by the caller and may be closed
   * after this returns. Waits until the table is complete.
   */
  JoinTable build(JoinTableSchema schema, ColumnBatch<DeviceColumn> build, ArenaPool pool,
      GpuStream stream);

  /**
   * The 1:N probe: for each row of {@code probe}, in order, one output row per build row whose
   * keys equal the probe row's key columns {@code probeKeys} (in build-row order); with
   * {@code leftOuter}, a probe row without a match gives one output row with NULL payloads. An
   * output row is the probe row's columns followed by the table's payload columns. The output
   * comes as batches of at most {@code maxRowsPerBatch} rows each (the caller owns and closes
   * them), so an expansion larger than one batch is split.
   */
  List<ColumnBatch<DeviceColumn>> expand(JoinTable table, ColumnBatch<DeviceColumn> probe,
      int[] probeKeys, boolean leftOuter, int maxRowsPerBatch, ArenaPool pool, GpuStream stream);
}
