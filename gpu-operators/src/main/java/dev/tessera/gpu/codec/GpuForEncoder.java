package dev.tessera.gpu.codec;

import static dev.tessera.gpu.codec.GpuForLayout.BLOCK_VALUES;
import static dev.tessera.gpu.codec.GpuForLayout.MINIBLOCKS;
import static dev.tessera.gpu.codec.GpuForLayout.MINIBLOCK_VALUES;
import static dev.tessera.gpu.codec.GpuForLayout.SET_BLOCKS;

import java.util.Arrays;

/**
 * One GPU-FOR or GPU-DFOR encoding of one array ({@link GpuForLayout}), block by block through a
 * scratch block of 128 entries, so that sizing and packing allocate nothing per value. For
 * GPU-DFOR the entries are the deltas within each set; the blocks are the same GPU-FOR blocks.
 */
final class GpuForEncoder {
  private final long[] values;
  private final int count;
  private final int lanes;
  private final boolean delta;
  private final int referenceWords;
  private final long[] block = new long[BLOCK_VALUES];
  /** The loaded block's reference (signed lanes-bit minimum). */
  private long reference;
  /** The loaded block's word of bit widths (byte m: miniblock m). */
  private int widths;

  GpuForEncoder(long[] values, int count, int lanes, boolean delta) {
    GpuForCodec.checkLanes(lanes);
    if (count < 0 || count > values.length) {
      throw new IllegalArgumentException(count + " values asked of an array of " + values.length);
    }
    this.values = values;
    this.count = count;
    this.lanes = lanes;
    this.delta = delta;
    this.referenceWords = GpuForLayout.referenceWords(lanes);
  }

  /** The words the encoding takes (without block starts), computed without packing. */
  long words() {
    long words = 0;
    int blocks = GpuForLayout.blocks(count);
    for (int b = 0; b < blocks; b++) {
      if (delta && b % SET_BLOCKS == 0) {
        words += referenceWords;
      }
      load(b);
      words += referenceWords + 1 + sumOfWidths(widths);
    }
    return words;
  }

  GpuForCodec.Packed encode() {
    int blocks = GpuForLayout.blocks(count);
    int[] starts = new int[blocks + 1];
    int[] words = new int[Math.max(16, blocks * (referenceWords + 2) + count / 2)];
    int at = 0;
    for (int b = 0; b < blocks; b++) {
      if (delta && b % SET_BLOCKS == 0) {
        words = ensure(words, at, referenceWords);
        writeSigned(words, at, narrow(values[b * BLOCK_VALUES]));
        at += referenceWords;
      }
      load(b);
      int size = referenceWords + 1 + sumOfWidths(widths);
      words = ensure(words, at, size);
      starts[b] = at;
      writeSigned(words, at, reference);
      words[at + referenceWords] = widths;
      pack(words, at + referenceWords + 1);
      at += size;
    }
    starts[blocks] = at;
    return new GpuForCodec.Packed(Arrays.copyOf(words, at), starts);
  }

  /** Packs the loaded block's miniblocks from word {@code base}. */
  private void pack(int[] words, int base) {
    long mask = mask(lanes);
    for (int m = 0; m < MINIBLOCKS; m++) {
      int width = (widths >>> (8 * m)) & 255;
      if (width == 0) {
        continue;
      }
      BitPacking.packMiniblock(block, m * MINIBLOCK_VALUES, reference, mask, words, base, width);
      base += width;
    }
  }

  /**
   * Loads block {@code b}'s entries (values, or GPU-DFOR deltas) into the scratch block, padded
   * (GPU-FOR: with the reference; GPU-DFOR: with delta 0), and sets its reference and widths.
   */
  private void load(int b) {
    int start = b * BLOCK_VALUES;
    int n = Math.min(BLOCK_VALUES, count - start);
    long min;
    if (delta) {
      block[0] = b % SET_BLOCKS == 0 ? 0 : narrow(values[start] - values[start - 1]);
      for (int i = 1; i < n; i++) {
        block[i] = narrow(values[start + i] - values[start + i - 1]);
      }
      Arrays.fill(block, n, BLOCK_VALUES, 0L);
      min = min(block, BLOCK_VALUES);
    } else {
      for (int i = 0; i < n; i++) {
        block[i] = narrow(values[start + i]);
      }
      min = min(block, n);
      Arrays.fill(block, n, BLOCK_VALUES, min);
    }
    reference = min;
    long mask = mask(lanes);
    int word = 0;
    for (int m = 0; m < MINIBLOCKS; m++) {
      long bits = 0;
      int first = m * MINIBLOCK_VALUES;
      for (int j = first; j < first + MINIBLOCK_VALUES; j++) {
        bits |= (block[j] - min) & mask;
      }
      word |= BitPacking.width(bits) << (8 * m);
    }
    widths = word;
  }

  private long narrow(long value) {
    return lanes == 32 ? (int) value : value;
  }

  private void writeSigned(int[] words, int at, long value) {
    words[at] = (int) value;
    if (referenceWords == 2) {
      words[at + 1] = (int) (value >>> 32);
    }
  }

  private static long min(long[] entries, int n) {
    long min = entries[0];
    for (int i = 1; i < n; i++) {
      min = Math.min(min, entries[i]);
    }
    return min;
  }

  /** {@code words}, or a larger copy, with room for {@code more} words from {@code at}. */
  private static int[] ensure(int[] words, int at, int more) {
    long needed = (long) at + more;
    if (needed <= words.length) {
      return words;
    }
    if (needed > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("the encoding exceeds 2^31 words");
    }
    long grown = Math.min(Integer.MAX_VALUE - 8, Math.max(needed, 2L * words.length));
    return Arrays.copyOf(words, (int) grown);
  }

  static int sumOfWidths(int widths) {
    return (widths & 255) + ((widths >>> 8) & 255) + ((widths >>> 16) & 255) + (widths >>> 24);
  }

  static long mask(int lanes) {
    return lanes == 64 ? -1L : 0xFFFFFFFFL;
  }
}
