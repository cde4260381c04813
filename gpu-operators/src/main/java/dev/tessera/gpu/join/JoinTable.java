package dev.tessera.gpu.join;

/**
 * The build side of a hash join, resident on the device (DESIGN.md §3, "Joins"): the build rows'
 * keys indexed in a hash table (or a direct-indexed array when the keys are dense integers), and
 * their payload columns. Built once per broadcast and executor, probed by every task of the
 * executor (so probing must not modify it), closed when the query is done.
 *
 * <p>Build rows are numbered 0 .. {@link #buildRows()} - 1 in the order of the build batch. A row
 * with a NULL in any key column is kept (left/right outer joins need its payload) but never
 * matches.
 */
public interface JoinTable extends AutoCloseable {
  JoinTableSchema schema();

  /** Rows of the build side, those with NULL keys included. */
  long buildRows();

  /**
   * Whether no two build rows with non-NULL keys have equal keys. Then every probe row matches
   * at most one build row, and the probe can run inside a fused program (PROBE / LOAD_BUILD);
   * otherwise inner and outer joins need {@link HashJoinKernel#expand}.
   */
  boolean uniqueKeys();

  /**
   * The device memory the table holds (hash table, keys, payload columns), so that the executor's
   * device store can weigh it against its cap while the table is kept for later tasks.
   */
  long deviceBytes();

  @Override
  void close();
}
