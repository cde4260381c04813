package dev.tessera.gpu.cuda;

/**
 * Among how many blocks a generated aggregation slices its groups ({@link
 * dev.tessera.gpu.codegen.AggregateUpdateGenerator#slicesGroups}): each block of a row group
 * holds, in its per-block table, only the groups of its slice, so S tables hold S times the
 * groups one holds, and rows that would have taken the global table's atomics stay on chip. The
 * price is that each of the S blocks reads every row of its row group, and that its warps queue
 * the rows of its slice (which take shared memory from its table:
 * AggregateUpdateGenerator.slicedTableEntries). Decided once, from the groups after an
 * aggregation's first batch (as the direct group map is): where they fill more than {@link
 * #TABLE_FILL} of one table and at most {@link #MAX_SLICES} tables' worth.
 *
 * <p>On an H100 (HashAggregateBench's forms in 8 batches, ncu kernel times of the updates from
 * the second batch on, 4.2 M rows each), sliced against not: "long keys" the same at 2 slices,
 * 24-36% faster at 3 to 6, 11% at 9; "filter v > 0" 12-25% faster at 2 to 4 slices,
 * 1-3% at 5 and 6, 26% slower at 9; "two columns" 6-10% faster at 2 to 6 slices, the same at 7,
 * 18% slower at 10; "nullable keys" 1% slower at 2 slices, 7-20% faster at 3 to 6, 12%
 * slower at 9. Each slice past the first costs 15-23 us there (its blocks read the row group
 * again), so past about 6 the global table's atomics are cheaper for most shapes: {@link
 * #MAX_SLICES}. Two keys of which one may be NULL do not slice (slower at every count:
 * AggregateUpdateGenerator.slicesGroups). The standalone prototype
 * (dev/gpu-profile/prototypes/partitioned_aggregate.cu, H100, 33.5 M rows), whose slices cost
 * less: 10^4 groups 2,436 us with the global table's atomics; queued, 788 us in 3 slices (its
 * tables held 4,096 entries), 1,106 in 6, 1,404 in 8, 2,271 in 16.
 */
final class GroupSlices {
  /**
   * The share of a per-block table's entries a slice's groups may take: past it more of a
   * table's lookups walk past their first slots (LocalKeyTable), and a block whose table is full
   * sends its slice's new groups to the global table.
   */
  static final double TABLE_FILL = 0.75;
  /**
   * The most slices: each reads the row group's rows once more, so that past some S the global
   * table's atomics are cheaper. At 9 and 10 slices three of HashAggregateBench's four shapes
   * measured were slower than unsliced; at 6 or fewer none was by more than 1% (above).
   */
  static final int MAX_SLICES = 6;

  private GroupSlices() {}

  /**
   * The slices for {@code groups} groups in per-block tables of {@code entries} entries, on a
   * device of {@code multiprocessors} (a row group's blocks run at once, one a
   * multiprocessor): the fewest whose tables each hold at most {@link #TABLE_FILL} of their
   * entries, or 1 (not sliced) where one table holds them or more than {@link #MAX_SLICES}
   * (or than the multiprocessors) would be needed.
   */
  static int forGroups(long groups, int entries, int multiprocessors) {
    long perTable = (long) (entries * TABLE_FILL);
    if (perTable <= 0 || groups <= perTable) {
      return 1;
    }
    long slices = groups / perTable + (groups % perTable == 0 ? 0 : 1);
    return slices > Math.min(MAX_SLICES, multiprocessors) ? 1 : (int) slices;
  }
}
