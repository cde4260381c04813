package dev.tessera.gpu.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.Random;
import java.util.function.IntToLongFunction;
import org.junit.jupiter.api.Test;

/**
 * The host codec against {@link GpuForLayout}'s text: hand-checked layouts, and round trips
 * (bulk and random access) over every bit width, data shape, boundary value and block count.
 */
class GpuForCodecTest {
  private static final int[] COUNTS = {0, 1, 2, 31, 32, 33, 127, 128, 129, 511, 512, 513, 1000};

  // ---- the layout, by hand ----

  @Test
  void forLayoutOfOneBlockWithATwoBitMiniblock() {
    long[] values = new long[128];
    for (int i = 0; i < 128; i++) {
      values[i] = i < 32 ? 100 + i % 4 : 100;
    }
    GpuForCodec.Packed p = GpuForCodec.encodeFor(values, 128, 32);
    // reference; widths (miniblock 0: 2 bits, the others 0); miniblock 0's 2 words
    assertArrayEquals(new int[] {100, 0x00000002, 0xE4E4E4E4, 0xE4E4E4E4}, p.words());
    assertArrayEquals(new int[] {0, 4}, p.blockStarts());
    assertArrayEquals(values, GpuForCodec.decodeFor(p, 128, 32));
    assertEquals(4, GpuForCodec.forWords(values, 128, 32));
  }

  @Test
  void forLayoutWith64BitLanesAndPadding() {
    // 40 values: miniblock 0 has differences 0 and 1 (1 bit), miniblock 1 has 8 values of
    // difference 3 (2 bits), miniblocks 2 and 3 are padding (the reference: 0 bits)
    long[] values = new long[40];
    for (int i = 0; i < 40; i++) {
      values[i] = i < 32 ? -5 + (i & 1) : -2;
    }
    GpuForCodec.Packed p = GpuForCodec.encodeFor(values, 40, 64);
    int[] expected = {
        -5, -1, // reference -5, low word first
        0x00000201, // widths: 1, 2, 0, 0
        0xAAAAAAAA, // miniblock 0: bit j = j & 1
        0x0000FFFF, 0x00000000}; // miniblock 1: eight 3s, then the padding's zeros
    assertArrayEquals(expected, p.words());
    assertArrayEquals(new int[] {0, 6}, p.blockStarts());
    assertArrayEquals(values, GpuForCodec.decodeFor(p, 40, 64));
  }

  @Test
  void dforLayoutOfASortedBlock() {
    long[] values = new long[128];
    for (int i = 0; i < 128; i++) {
      values[i] = 1000 + i;
    }
    GpuForCodec.Packed p = GpuForCodec.encodeDfor(values, 128, 32);
    // the set's first value; then the block of deltas 0, 1, 1, ...: reference 0, 1 bit each
    int[] expected = {1000, 0, 0x01010101, 0xFFFFFFFE, -1, -1, -1};
    assertArrayEquals(expected, p.words());
    assertArrayEquals(new int[] {1, 7}, p.blockStarts());
    assertArrayEquals(values, GpuForCodec.decodeDfor(p, 128, 32));
  }

  @Test
  void dforSetsStoreTheirFirstValueBeforeTheirFirstBlock() {
    long[] values = sequence(1100, i -> 7L * i - (1L << 40));
    GpuForCodec.Packed p = GpuForCodec.encodeDfor(values, values.length, 64);
    int[] starts = p.blockStarts();
    assertEquals(GpuForLayout.blocks(1100) + 1, starts.length);
    for (int set = 0; set * GpuForLayout.SET_VALUES < values.length; set++) {
      int at = starts[set * GpuForLayout.SET_BLOCKS] - 2;
      long first = (p.words()[at] & 0xFFFFFFFFL) | (long) p.words()[at + 1] << 32;
      assertEquals(values[set * GpuForLayout.SET_VALUES], first);
    }
    // blocks inside a set follow each other directly
    assertEquals(starts[0] + 2 + 1 + 4 * 3, starts[1]);
    assertEquals(starts[p.blockStarts().length - 1], p.words().length);
  }

  @Test
  void emptyInputHasNoBlocks() {
    for (int lanes : new int[] {32, 64}) {
      for (GpuForCodec.Packed p : new GpuForCodec.Packed[] {
          GpuForCodec.encodeFor(new long[0], 0, lanes),
          GpuForCodec.encodeDfor(new long[0], 0, lanes)}) {
        assertArrayEquals(new int[0], p.words());
        assertArrayEquals(new int[] {0}, p.blockStarts());
      }
      assertEquals(0, GpuForCodec.forWords(new long[0], 0, lanes));
      assertEquals(0, GpuForCodec.dforWords(new long[0], 0, lanes));
    }
  }

  // ---- every bit width ----

  @Test
  void everyForBitWidthRoundTrips() {
    for (int lanes : new int[] {32, 64}) {
      for (int width = 0; width <= lanes; width++) {
        long[] values = exactWidthValues(new Random(width), 4 * 128, width, lanes);
        GpuForCodec.Packed p = assertRoundTrip(values, lanes);
        int[] histogram = GpuForCodec.bitWidthHistogram(p, values.length, lanes);
        assertEquals(16, histogram[width], "lanes " + lanes + " width " + width);
      }
    }
  }

  @Test
  void everyDforBitWidthRoundTrips() {
    for (int lanes : new int[] {32, 64}) {
      for (int width = 0; width <= lanes; width++) {
        long[] values = exactWidthDeltas(new Random(width), 2 * 512, width, lanes);
        GpuForCodec.Packed p = GpuForCodec.encodeDfor(values, values.length, lanes);
        int[] histogram = GpuForCodec.bitWidthHistogram(p, values.length, lanes);
        assertEquals(32, histogram[width], "lanes " + lanes + " width " + width);
        assertRoundTrip(values, lanes);
      }
    }
  }

  /** Blocks whose minimum is a reference r and whose every miniblock needs exactly width bits. */
  private static long[] exactWidthValues(Random random, int count, int width, int lanes) {
    long[] values = new long[count];
    long span = width == 64 ? -1L : (1L << width) - 1; // the largest difference, unsigned
    long low = lanes == 64 ? Long.MIN_VALUE : Integer.MIN_VALUE;
    long high = (lanes == 64 ? Long.MAX_VALUE : Integer.MAX_VALUE) - span; // signed, for r
    for (int block = 0; block < count / 128; block++) {
      long reference = width == lanes ? low
          : Math.min(lanes == 64 ? random.nextLong() : random.nextInt(), high);
      for (int j = 0; j < 128; j++) {
        long difference = random.nextLong() & span;
        if (j == 0) {
          difference = 0;
        } else if (j % 32 == 5 && width > 0) {
          difference |= 1L << (width - 1);
        }
        values[block * 128 + j] = narrow(reference + difference, lanes);
      }
    }
    return values;
  }

  /**
   * Values whose GPU-DFOR deltas need exactly width bits in every miniblock: deltas from a
   * base (0, or the lanes' minimum when width is all of them), one at the base per block.
   */
  private static long[] exactWidthDeltas(Random random, int count, int width, int lanes) {
    long span = width == 64 ? -1L : (1L << width) - 1;
    long base = width == lanes ? (lanes == 64 ? Long.MIN_VALUE : Integer.MIN_VALUE) : 0;
    long[] values = new long[count];
    for (int i = 0; i < count; i++) {
      if (i % GpuForLayout.SET_VALUES == 0) {
        values[i] = narrow(random.nextLong(), lanes); // its delta is 0 whatever it is
        continue;
      }
      long difference = random.nextLong() & span;
      if (i % 128 == 1) {
        difference = 0;
      } else if (i % 32 == 5 && width > 0) {
        difference |= 1L << (width - 1);
      }
      values[i] = narrow(values[i - 1] + base + difference, lanes);
    }
    return values;
  }

  // ---- shapes and boundaries ----

  @Test
  void shapesRoundTripAtEveryCount() {
    Random random = new Random(42);
    for (int lanes : new int[] {32, 64}) {
      for (int count : COUNTS) {
        assertRoundTrip(sequence(count, i -> random.nextLong()), lanes);
        assertRoundTrip(sequence(count, i -> random.nextInt(1000)), lanes);
        assertRoundTrip(sequence(count, i -> 1_000_000_007L + 3L * i), lanes);
        assertRoundTrip(sequence(count, i -> -7), lanes);
        assertRoundTrip(sequence(count, i -> i % 32 == 17 ? 1L << 30 : random.nextInt(8)),
            lanes);
        assertRoundTrip(sequence(count, i -> -random.nextInt(1 << 20) - (1L << 31)), lanes);
        assertRoundTrip(sequence(count, i -> count - i), lanes);
        long[] sorted = sequence(count, i -> random.nextLong());
        Arrays.sort(sorted);
        assertRoundTrip(sorted, lanes);
      }
    }
  }

  @Test
  void boundaryValuesRoundTrip() {
    long[] longs = {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1, 1, Long.MIN_VALUE + 1,
        Long.MAX_VALUE - 1, Integer.MIN_VALUE, Integer.MAX_VALUE};
    long[] ints = {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 1, Integer.MIN_VALUE + 1,
        Integer.MAX_VALUE - 1};
    for (int count : COUNTS) {
      assertRoundTrip(sequence(count, i -> longs[i % longs.length]), 64);
      assertRoundTrip(sequence(count, i -> ints[i % ints.length]), 32);
      assertRoundTrip(sequence(count, i -> i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE), 64);
      assertRoundTrip(sequence(count, i -> i % 2 == 0 ? Integer.MIN_VALUE : Integer.MAX_VALUE),
          32);
      assertRoundTrip(sequence(count, i -> i < count / 2 ? Long.MAX_VALUE : Long.MIN_VALUE), 64);
    }
  }

  @Test
  void thirtyTwoLanesTakeTheLowBitsAndDecodeSignExtended() {
    long[] values = sequence(300, i -> (1L << 32) * i + i - 150);
    long[] expected = sequence(300, i -> i - 150);
    assertArrayEquals(expected,
        GpuForCodec.decodeFor(GpuForCodec.encodeFor(values, 300, 32), 300, 32));
    assertArrayEquals(expected,
        GpuForCodec.decodeDfor(GpuForCodec.encodeDfor(values, 300, 32), 300, 32));
  }

  @Test
  void onlyTheFirstCountValuesAreEncodedAndExtraBlockStartsAreIgnored() {
    long[] values = sequence(1000, i -> i * 3L);
    GpuForCodec.Packed p = GpuForCodec.encodeFor(values, 200, 64);
    assertEquals(3, p.blockStarts().length);
    GpuForCodec.Packed padded = new GpuForCodec.Packed(p.words(),
        Arrays.copyOf(p.blockStarts(), 16));
    assertArrayEquals(Arrays.copyOf(values, 200), GpuForCodec.decodeFor(padded, 200, 64));
    assertArrayEquals(Arrays.copyOf(values, 150), GpuForCodec.decodeFor(padded, 150, 64));
  }

  @Test
  void rejectsBadArguments() {
    assertThrows(IllegalArgumentException.class,
        () -> GpuForCodec.encodeFor(new long[4], 4, 16));
    assertThrows(IllegalArgumentException.class,
        () -> GpuForCodec.encodeFor(new long[4], 5, 32));
    assertThrows(IllegalArgumentException.class,
        () -> GpuForCodec.decode(Encoding.PLAIN, new GpuForCodec.Packed(new int[0],
            new int[] {0}), 0, 32));
    // a bit width above the lanes
    GpuForCodec.Packed corrupt = new GpuForCodec.Packed(new int[] {0, 33}, new int[] {0, 2});
    assertThrows(IllegalArgumentException.class, () -> GpuForCodec.decodeFor(corrupt, 1, 32));
  }

  // ---- helpers ----

  /**
   * Encodes {@code values} both ways, checks the sizes, bulk decode and random access of every
   * row; returns the GPU-FOR encoding.
   */
  private static GpuForCodec.Packed assertRoundTrip(long[] values, int lanes) {
    int count = values.length;
    long[] expected = sequence(count, i -> narrow(values[i], lanes));
    GpuForCodec.Packed f = GpuForCodec.encodeFor(values, count, lanes);
    GpuForCodec.Packed d = GpuForCodec.encodeDfor(values, count, lanes);
    for (GpuForCodec.Packed p : new GpuForCodec.Packed[] {f, d}) {
      assertEquals(GpuForLayout.blocks(count) + 1, p.blockStarts().length);
      assertEquals(p.words().length, p.blockStarts()[p.blockStarts().length - 1]);
    }
    assertEquals(f.words().length, GpuForCodec.forWords(values, count, lanes));
    assertEquals(d.words().length, GpuForCodec.dforWords(values, count, lanes));
    assertArrayEquals(expected, GpuForCodec.decodeFor(f, count, lanes), "FOR " + lanes);
    assertArrayEquals(expected, GpuForCodec.decodeDfor(d, count, lanes), "DFOR " + lanes);
    for (int row = 0; row < count; row++) {
      assertEquals(expected[row], GpuForCodec.valueFor(f, row, lanes), "FOR row " + row);
      assertEquals(expected[row], GpuForCodec.valueDfor(d, row, lanes), "DFOR row " + row);
    }
    return f;
  }

  private static long narrow(long value, int lanes) {
    return lanes == 32 ? (int) value : value;
  }

  private static long[] sequence(int count, IntToLongFunction value) {
    long[] values = new long[count];
    for (int i = 0; i < count; i++) {
      values[i] = value.applyAsLong(i);
    }
    return values;
  }
}
