package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.cuda.ColumnSumCases.Shape;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * On the host: {@link ColumnSumCases} reaches what {@code CudaColumnSumTest} claims to cover,
 * every GPU-FOR and GPU-DFOR bit width from 0 to the lanes, so a GPU run of that test exercises
 * the decoders at each of them.
 */
class ColumnSumCasesTest {
  private static final int ROWS = 5000;
  private static final int MINIBLOCK_VALUES = 32;

  @ParameterizedTest
  @ValueSource(ints = {32, 64})
  void randomAndNegativeMiniblocksAreExactlyTheWidth(int lanes) {
    ColumnType type = typeOf(lanes);
    int miniblocks = (ROWS + MINIBLOCK_VALUES - 1) / MINIBLOCK_VALUES;
    for (Shape shape : new Shape[] {Shape.RANDOM, Shape.NEGATIVE}) {
      for (int width = 1; width <= lanes; width++) {
        long[] values = ColumnSumCases.values(shape, width, lanes, ROWS, new Random(width));
        int[] widths =
            EncodedColumn.encodeFixed(type, values, null, ROWS, Encoding.FOR).bitWidths();
        // The last block's empty miniblocks count as width 0.
        assertEquals(miniblocks, widths[width], shape + " at " + width + " bits");
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {32, 64})
  void theShapesReachEveryWidthOfBothEncodings(int lanes) {
    ColumnType type = typeOf(lanes);
    for (Encoding encoding : new Encoding[] {Encoding.FOR, Encoding.DFOR}) {
      TreeSet<Integer> reached = new TreeSet<>();
      for (Shape shape : Shape.values()) {
        for (int width = 0; width <= lanes; width++) {
          Random random = new Random(width);
          long[] values = ColumnSumCases.values(shape, width, lanes, ROWS, random);
          boolean[] valid = ColumnSumCases.validity(shape, ROWS, random);
          int[] widths =
              EncodedColumn.encodeFixed(type, values, valid, ROWS, encoding).bitWidths();
          for (int w = 0; w < widths.length; w++) {
            if (widths[w] > 0) {
              reached.add(w);
            }
          }
        }
      }
      assertEquals(lanes + 1, reached.size(), encoding + " widths reached: " + reached);
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {32, 64})
  void valuesAreInTheLongConventionOfTheLanes(int lanes) {
    for (Shape shape : Shape.values()) {
      for (int width = 0; width <= lanes; width++) {
        for (long value : ColumnSumCases.values(shape, width, lanes, ROWS, new Random(7))) {
          assertEquals(lanes == 64 ? value : (int) value, value, shape + " at " + width);
        }
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 127, 5000})
  void nullsIncludeTheFirstAndLastRows(int rows) {
    boolean[] valid = ColumnSumCases.validity(Shape.NULLS, rows, new Random(3));
    assertEquals(false, valid[0]);
    assertEquals(false, valid[rows - 1]);
    assertEquals(null, ColumnSumCases.validity(Shape.RANDOM, rows, new Random(3)));
  }

  static ColumnType typeOf(int lanes) {
    return lanes == 64 ? ColumnType.LONG : ColumnType.INT;
  }
}
