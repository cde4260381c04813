package dev.tessera.gpu.cuda;

import java.util.Arrays;
import java.util.Random;

/**
 * The columns {@code CudaColumnSumTest} sums: for a bit width {@code w} of {@code lanes}-bit
 * values, shapes whose GPU-FOR miniblocks are exactly {@code w} bits wide (RANDOM, NEGATIVE,
 * NULLS), whose GPU-DFOR deltas are about {@code w} bits wide (SORTED), or which are 0 bits wide
 * (CONSTANT). Together they reach every GPU-FOR and GPU-DFOR bit width from 0 to {@code lanes}
 * ({@code ColumnSumCasesTest} checks that on the host). Values are in EncodedColumn's long
 * convention: a 32-lane value sign-extended.
 */
final class ColumnSumCases {
  private ColumnSumCases() {}

  /** Lengths around the 128-value block and the 512-row tile: never a whole number of them. */
  static final int[] LENGTHS = {1, 127, 129, 513, 5000};

  /** Values a miniblock holds; RANDOM puts its extremes at these positions of each. */
  private static final int MINIBLOCK_VALUES = 32;
  /** SORTED stays sorted (no wrap) for this many rows: its deltas are at most lanes - 14 bits. */
  private static final int SORTED_HEADROOM_BITS = 14;

  enum Shape {
    /** [lo, lo + 2^w): lo = 0, or the lanes' minimum when w = lanes; both ends in each miniblock. */
    RANDOM,
    /** RANDOM shifted to [-2^w, -1] (w < lanes). */
    NEGATIVE,
    /** A non-decreasing run from the lanes' minimum, deltas in [0, 2^min(w, lanes - 14)). */
    SORTED,
    /** Every row the same value, of width w. */
    CONSTANT,
    /** RANDOM's values with about a quarter of the rows NULL, the first and last among them. */
    NULLS
  }

  /** {@code rows} values of {@code shape} at {@code width} bits (0 to {@code lanes}). */
  static long[] values(Shape shape, int width, int lanes, int rows, Random random) {
    long mask = mask(width);
    long lo = width == lanes ? minimum(lanes)
        : shape == Shape.NEGATIVE ? -mask - 1 : 0;
    long[] values = new long[rows];
    switch (shape) {
      case RANDOM, NEGATIVE, NULLS -> {
        for (int r = 0; r < rows; r++) {
          long offset = switch (r % MINIBLOCK_VALUES) {
            case 0 -> 0;      // every block's minimum is lo: its reference
            case 1 -> mask;   // and every miniblock's maximum lo + 2^w - 1: width w exactly
            default -> random.nextLong() & mask;
          };
          values[r] = narrow(lo + offset, lanes);
        }
      }
      case SORTED -> {
        long deltaMask = mask(Math.min(width, lanes - SORTED_HEADROOM_BITS));
        long value = minimum(lanes);
        for (int r = 0; r < rows; r++) {
          values[r] = narrow(value, lanes);
          value += random.nextLong() & deltaMask;
        }
      }
      case CONSTANT -> Arrays.fill(values, narrow(lo + mask, lanes));
    }
    return values;
  }

  /** Which rows are valid: null (none NULL) except for NULLS. */
  static boolean[] validity(Shape shape, int rows, Random random) {
    if (shape != Shape.NULLS) {
      return null;
    }
    boolean[] valid = new boolean[rows];
    for (int r = 0; r < rows; r++) {
      valid[r] = r != 0 && r != rows - 1 && random.nextInt(4) != 0;
    }
    return valid;
  }

  /** 2^width - 1 (all ones for 64). */
  static long mask(int width) {
    return width == Long.SIZE ? -1L : (1L << width) - 1;
  }

  private static long minimum(int lanes) {
    return lanes == Long.SIZE ? Long.MIN_VALUE : Integer.MIN_VALUE;
  }

  private static long narrow(long value, int lanes) {
    return lanes == Long.SIZE ? value : (int) value;
  }
}
