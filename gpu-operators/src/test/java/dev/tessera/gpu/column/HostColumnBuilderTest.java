package dev.tessera.gpu.column;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HostColumnBuilderTest {
  private final BufferAllocator allocator = new RootAllocator();

  @AfterEach
  void nothingLeaks() {
    assertEquals(0, allocator.getAllocatedMemory(), "a staging buffer leaked");
    allocator.close();
  }

  /** Starting from one row, every buffer must grow many times and keep what it held. */
  @Test
  void growsFromATinyCapacity() {
    for (ColumnType type : TestColumns.ALL_TYPES) {
      List<Object> values = TestColumns.random(type, 5000, 0.25, 99);
      try (HostColumn column = TestColumns.build(type, values, allocator, 1)) {
        TestColumns.assertHolds(type, values, column);
      }
    }
  }

  /**
   * Bulk appends (appendFixedRows / appendStrings, then setNulls) mixed with value appends, in
   * runs that start and end off byte boundaries and outgrow a one-row capacity, make the same
   * column as value appends alone: the same data bytes (NULLs zeroed), bits, offsets, counts.
   */
  @Test
  void bulkAppendsMakeTheColumnValueAppendsMake() {
    java.util.Random random = new java.util.Random(7);
    for (ColumnType type : TestColumns.ALL_TYPES) {
      List<Object> values = TestColumns.random(type, 3000, 0.2, 5);
      try (HostColumn expected = TestColumns.build(type, values, allocator);
          HostColumnBuilder builder = new HostColumnBuilder(type, 1, allocator)) {
        int row = 0;
        while (row < values.size()) {
          int run = Math.min(values.size() - row, 1 + random.nextInt(200));
          if (random.nextBoolean()) {
            TestColumns.append(type, values.subList(row, row + run), builder);
          } else if (type.isString()) {
            int[] lengths = new int[run];
            for (int i = 0; i < run; i++) {
              lengths[i] = expected.isNull(row + i) ? -1 : expected.getUtf8(row + i).length;
            }
            long to = builder.appendStrings(lengths, run);
            long from = expected.offsets().getInt(4L * row);
            long bytes = expected.offsets().getInt(4L * (row + run)) - from;
            org.apache.arrow.memory.util.MemoryUtil.copyMemory(
                expected.data().memoryAddress() + from, to, bytes);
          } else {
            long to = builder.appendFixedRows(run);
            long width = type.id().width();
            org.apache.arrow.memory.util.MemoryUtil.copyMemory(
                expected.data().memoryAddress() + width * row, to, width * run);
            long[] nullRows = new long[(run + 63) / 64];
            for (int i = 0; i < run; i++) {
              if (values.get(row + i) == null) {
                nullRows[i / 64] |= 1L << i;
              }
            }
            builder.setNulls(row, nullRows);
          }
          row += run;
        }
        try (HostColumn actual = builder.build()) {
          TestColumns.assertHolds(type, values, actual);
          assertEquals(expected.dataBytes(), actual.dataBytes(), type + " data bytes");
          for (long b = 0; b < expected.dataBytes(); b++) {
            assertEquals(expected.data().getByte(b), actual.data().getByte(b), type + " byte " + b);
          }
          if (type.isString()) {
            for (int r = 0; r <= values.size(); r++) {
              assertEquals(expected.offsets().getInt(4L * r), actual.offsets().getInt(4L * r),
                  type + " offset " + r);
            }
          }
        }
      }
    }
  }

  @Test
  void bulkAppendsCheckTheirColumn() {
    try (HostColumnBuilder ints = new HostColumnBuilder(ColumnType.INT, 4, allocator);
        HostColumnBuilder strings = new HostColumnBuilder(ColumnType.STRING, 4, allocator)) {
      assertThrows(IllegalStateException.class, () -> ints.appendStrings(new int[] {1}, 1));
      assertThrows(IllegalStateException.class, () -> strings.appendFixedRows(1));
      ints.appendFixedRows(2);
      assertThrows(IllegalArgumentException.class, () -> ints.setNulls(1, new long[] {2}));
      assertThrows(IllegalStateException.class, () -> strings.setNulls(0, new long[] {1}));
    }
  }

  @Test
  void decimalsMustFitWithoutRounding() {
    try (HostColumnBuilder builder = new HostColumnBuilder(ColumnType.decimal(5, 2), 4, allocator)) {
      builder.appendDecimal(new BigDecimal("123.4"));
      IllegalArgumentException rounding = assertThrows(IllegalArgumentException.class,
          () -> builder.appendDecimal(new BigDecimal("1.234")));
      assertTrue(rounding.getMessage().contains("decimal(5,2)"), rounding.getMessage());
      assertThrows(IllegalArgumentException.class,
          () -> builder.appendDecimal(new BigDecimal("1234.5")));
      try (HostColumn column = builder.build()) {
        assertEquals(1, column.rowCount());
        assertEquals(new BigDecimal("123.40"), column.getDecimal(0));
        assertEquals(12340L, column.getLong(0));
      }
    }
  }

  @Test
  void typedAppendsAndAccessorsCheckTheType() {
    try (HostColumnBuilder builder = new HostColumnBuilder(ColumnType.INT, 4, allocator)) {
      assertThrows(IllegalStateException.class, () -> builder.appendLong(1));
      assertThrows(IllegalStateException.class, () -> builder.appendString("x"));
      builder.appendInt(7);
      try (HostColumn column = builder.build()) {
        assertThrows(IllegalStateException.class, () -> column.getLong(0));
        assertThrows(IndexOutOfBoundsException.class, () -> column.getInt(1));
        assertEquals(7, column.getInt(0));
      }
    }
  }
}
