package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** How many slices an aggregation's groups take (GroupSlices), without a GPU. */
class GroupSlicesTest {
  private static final int ENTRIES = 2048; // HashAggregateBench's table: 1,536 groups a slice
  private static final int MULTIPROCESSORS = 132;

  @Test
  void groupsOneTableHoldsAreNotSliced() {
    assertEquals(1, GroupSlices.forGroups(0, ENTRIES, MULTIPROCESSORS));
    assertEquals(1, GroupSlices.forGroups(1, ENTRIES, MULTIPROCESSORS));
    assertEquals(1, GroupSlices.forGroups(1_536, ENTRIES, MULTIPROCESSORS));
  }

  @Test
  void aFewTablesWorthTakeTheFewestSlicesThatHoldThem() {
    assertEquals(2, GroupSlices.forGroups(1_537, ENTRIES, MULTIPROCESSORS));
    assertEquals(4, GroupSlices.forGroups(6_000, ENTRIES, MULTIPROCESSORS));
    assertEquals(GroupSlices.MAX_SLICES,
        GroupSlices.forGroups(1_536L * GroupSlices.MAX_SLICES, ENTRIES, MULTIPROCESSORS));
  }

  @Test
  void moreThanTheMostSlicesHoldTakeTheGlobalTable() {
    assertEquals(1, GroupSlices.forGroups(1_536L * GroupSlices.MAX_SLICES + 1, ENTRIES,
        MULTIPROCESSORS));
    assertEquals(1, GroupSlices.forGroups(10_000, ENTRIES, MULTIPROCESSORS)); // 7 tables' worth
    assertEquals(1, GroupSlices.forGroups(100_000, ENTRIES, MULTIPROCESSORS));
    assertEquals(1, GroupSlices.forGroups(Long.MAX_VALUE, ENTRIES, MULTIPROCESSORS));
    // A device of fewer multiprocessors than slices cannot run a row group's blocks at once.
    assertEquals(1, GroupSlices.forGroups(6_000, ENTRIES, 3));
    assertEquals(1, GroupSlices.forGroups(6_000, 0, MULTIPROCESSORS));
  }
}
