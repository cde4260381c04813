package dev.tessera.gpu.column;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ColumnTypeTest {
  @Test
  void decimalsUpTo18DigitsAreDeviceTypes() {
    assertEquals("decimal(18,2)", ColumnType.decimal(18, 2).toString());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ColumnType.decimal(19, 2));
    assertTrue(e.getMessage().contains("decimal(19,2)"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ColumnType.decimal(5, 6));
  }

  @Test
  void validityIsPaddedToWholeWords() {
    assertEquals(0, Validity.bytesFor(0));
    assertEquals(8, Validity.bytesFor(1));
    assertEquals(8, Validity.bytesFor(64));
    assertEquals(16, Validity.bytesFor(65));
  }
}
