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
 * <p>Behind {@code -Dtessera.codegen.slicedGroups=true}, off. On an H100 its differential suite
 * passed (CudaSlicedGroupsDifferentialTest) and HashAggregateBench's "long keys, 8 batches" at
 * 10^4 groups (9 slices from the second batch on) took 12% less (4.14 -> 3.64 ms); on by default
 * once other shapes (two keys, a filter, nullable keys, 2 to 8 slices) are measured. The
 * standalone prototype (dev/gpu-profile/prototypes/partitioned_aggregate.cu, H100, 33.5 M
 * rows): 10^4 groups 2,436 us with the global table's atomics; queued, 788 us in 3 slices (its
 * tables held 4,096 entries), 1,106 in 6, 1,404 in 8, 2,271 in 16.
 */
final class GroupSlices {
  /** The switch: {@code -Dtessera.codegen.slicedGroups=true}. */
  static final String PROPERTY = "tessera.codegen.slicedGroups";
  /**
   * The share of a per-block table's entries a slice's groups may take: past it more of a
   * table's lookups walk past their first slots (LocalKeyTable), and a block whose table is full
   * sends its slice's new groups to the global table.
   */
  static final double TABLE_FILL = 0.75;
  /**
   * The most slices: each reads the row group's rows once more (the prototype's slices past the
   * first cost 110-130 us each over 33.5 M rows, about DRAM's time for the keys), so that past
   * some S the global table's atomics are cheaper (the prototype: about 16). HashAggregateBench's
   * four functions at 10^4 groups take 9 slices of 1,628-entry tables on an H100.
   */
  static final int MAX_SLICES = 12;

  private GroupSlices() {}

  /** Whether the switch is on. */
  static boolean enabled() {
    return Boolean.getBoolean(PROPERTY);
  }

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
