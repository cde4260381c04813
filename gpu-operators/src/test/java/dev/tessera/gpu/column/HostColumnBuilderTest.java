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
