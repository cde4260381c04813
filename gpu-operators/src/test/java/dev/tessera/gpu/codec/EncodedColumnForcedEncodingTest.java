package dev.tessera.gpu.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tessera.gpu.column.ColumnType;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link EncodedColumn#encodeFixed(ColumnType, long[], boolean[], int, Encoding)}: the encoding
 * asked for, whatever its size, with the same values and null slots as the smallest.
 */
class EncodedColumnForcedEncodingTest {
  private static final int ROWS = 1000;

  @ParameterizedTest
  @EnumSource(Encoding.class)
  void keepsTheEncodingAskedFor(Encoding encoding) {
    Random random = new Random(5);
    long[] wide = new long[ROWS];
    boolean[] valid = new boolean[ROWS];
    for (int r = 0; r < ROWS; r++) {
      wide[r] = random.nextLong(); // 64 bits: the smallest would be PLAIN
      valid[r] = r % 9 != 4;
    }
    EncodedColumn forced = EncodedColumn.encodeFixed(ColumnType.LONG, wide, valid, ROWS, encoding);
    EncodedColumn smallest = EncodedColumn.encodeFixed(ColumnType.LONG, wide, valid, ROWS);
    assertEquals(encoding, forced.encoding());
    assertEquals(Encoding.PLAIN, smallest.encoding());
    assertArrayEquals(smallest.decodeFixed(), forced.decodeFixed());
    assertArrayEquals(smallest.validity(), forced.validity());
    assertEquals(smallest.nullCount(), forced.nullCount());
  }

  @Test
  void narrowsLikeTheSmallest() {
    long[] values = {1L << 40, -1, 7, (1L << 32) + 5};
    for (Encoding encoding : Encoding.values()) {
      assertArrayEquals(new long[] {0, -1, 7, 5}, EncodedColumn.encodeFixed(ColumnType.INT,
          values, null, values.length, encoding).decodeFixed(), encoding.name());
    }
  }

  @Test
  void floatingPointAndBooleansArePlainOnly() {
    long[] values = {1, 0, 1};
    for (ColumnType type : new ColumnType[] {ColumnType.FLOAT, ColumnType.DOUBLE,
        ColumnType.BOOLEAN}) {
      assertEquals(Encoding.PLAIN,
          EncodedColumn.encodeFixed(type, values, null, 3, Encoding.PLAIN).encoding());
      assertThrows(IllegalArgumentException.class,
          () -> EncodedColumn.encodeFixed(type, values, null, 3, Encoding.FOR));
      assertThrows(IllegalArgumentException.class,
          () -> EncodedColumn.encodeFixed(type, values, null, 3, Encoding.DFOR));
    }
  }

  @Test
  void anEncodingMustBeNamed() {
    assertThrows(NullPointerException.class,
        () -> EncodedColumn.encodeFixed(ColumnType.INT, new long[1], null, 1, null));
  }
}
