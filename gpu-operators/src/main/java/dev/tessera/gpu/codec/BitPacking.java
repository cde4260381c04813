package dev.tessera.gpu.codec;

/**
 * Bit fields of 0 to 64 bits in an int32 word array, bit {@code k} being bit {@code k % 32} of
 * word {@code k / 32} ({@link GpuForLayout}'s miniblocks). Touches only the words the field lies
 * in, as gpufor.cuh's ExtractBits does, so a miniblock may end the array.
 */
final class BitPacking {
  private BitPacking() {}

  private static final long WORD = 0xFFFFFFFFL;

  /** Bits {@code [bit, bit + width)} of the words from {@code base}, as an unsigned value. */
  static long extract(int[] words, int base, int bit, int width) {
    if (width == 0) {
      return 0;
    }
    int at = base + (bit >>> 5);
    int shift = bit & 31;
    long bits = (words[at] & WORD) >>> shift;
    if (shift + width > 32) {
      bits |= (words[at + 1] & WORD) << (32 - shift);
      if (shift + width > 64) { // then shift > 0
        bits |= (words[at + 2] & WORD) << (64 - shift);
      }
    }
    return width == 64 ? bits : bits & ((1L << width) - 1);
  }

  /**
   * ORs {@code value} (less than 2^width) into bits {@code [bit, bit + width)} of the words from
   * {@code base}, which must be zero there.
   */
  static void insert(int[] words, int base, int bit, int width, long value) {
    if (width == 0) {
      return;
    }
    int at = base + (bit >>> 5);
    int shift = bit & 31;
    words[at] |= (int) (value << shift);
    if (shift + width > 32) {
      words[at + 1] |= (int) (value >>> (32 - shift));
      if (shift + width > 64) {
        words[at + 2] |= (int) (value >>> (64 - shift));
      }
    }
  }

  /**
   * Packs the differences {@code (entries[from + j] - reference) & mask} (each less than
   * 2^width), j in [0, 32), as a miniblock of {@code width} words from {@code base} (zero there).
   */
  static void packMiniblock(long[] entries, int from, long reference, long mask, int[] words,
      int base, int width) {
    if (width > 32) {
      for (int j = 0; j < 32; j++) {
        insert(words, base, j * width, width, (entries[from + j] - reference) & mask);
      }
      return;
    }
    long buffer = 0;
    int buffered = 0; // below 32 between values
    int out = base;
    for (int j = from; j < from + 32; j++) {
      buffer |= ((entries[j] - reference) & mask) << buffered;
      buffered += width;
      if (buffered >= 32) {
        words[out++] = (int) buffer;
        buffer >>>= 32;
        buffered -= 32;
      }
    }
  }

  /**
   * Unpacks the first {@code n} differences of the miniblock of {@code width} words from
   * {@code base}, adds {@code reference} and stores them, narrowed to {@code lanes} bits, at
   * {@code out[at, at + n)}.
   */
  static void unpackMiniblock(int[] words, int base, int width, int n, long reference,
      int lanes, long[] out, int at) {
    if (width > 32) {
      for (int j = 0; j < n; j++) {
        out[at + j] = reference + extract(words, base, j * width, width); // lanes 64
      }
      return;
    }
    long mask = (1L << width) - 1;
    long buffer = 0;
    int buffered = 0; // below width before a value's read
    int in = base;
    for (int j = at; j < at + n; j++) {
      if (buffered < width) {
        buffer |= (words[in++] & WORD) << buffered;
        buffered += 32;
      }
      long value = reference + (buffer & mask);
      out[j] = lanes == 32 ? (int) value : value;
      buffer >>>= width;
      buffered -= width;
    }
  }

  /** Bits needed for the unsigned {@code value}: 0 for 0, up to 64. */
  static int width(long value) {
    return 64 - Long.numberOfLeadingZeros(value);
  }
}
