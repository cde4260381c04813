package dev.tessera.gpu.codec;

import static dev.tessera.gpu.codec.GpuForLayout.BLOCK_VALUES;
import static dev.tessera.gpu.codec.GpuForLayout.MINIBLOCKS;
import static dev.tessera.gpu.codec.GpuForLayout.MINIBLOCK_VALUES;
import static dev.tessera.gpu.codec.GpuForLayout.SET_BLOCKS;
import static dev.tessera.gpu.codec.GpuForLayout.SET_VALUES;

/**
 * The host reference codec of GPU-FOR and GPU-DFOR, bit for bit {@link GpuForLayout}'s format.
 * Cached columns are encoded once, on the CPU, here; the CUDA kernels decode as they load
 * (gpufor.cuh), and the host decodes here where it needs the values (Spark's CPU operators over
 * a cached batch, the host reference operators, and tests of the kernels' loads).
 *
 * <p>Values are integers of {@code lanes} (32 or 64) bits held in longs: a 32-lane value is
 * taken as its low 32 bits, and decoded sign-extended. Arithmetic is modulo 2^lanes.
 */
public final class GpuForCodec {
  private GpuForCodec() {}

  /**
   * An encoded array: the int32 words and, per block, the word where it starts, plus the total.
   * The arrays are shared, not copied. {@code blockStarts} may hold more entries than the blocks
   * of the rows decoded (a device buffer's padding): only the first ones are read.
   */
  public record Packed(int[] words, int[] blockStarts) {
    public Packed {
      if (words == null || blockStarts == null || blockStarts.length == 0) {
        throw new IllegalArgumentException("words and at least one block start are needed");
      }
    }

    /** Bytes stored: the words and the block starts, 4 bytes each. */
    public long sizeBytes() {
      return 4L * (words.length + blockStarts.length);
    }
  }

  /** GPU-FOR of {@code values[0, count)}. */
  public static Packed encodeFor(long[] values, int count, int lanes) {
    return new GpuForEncoder(values, count, lanes, false).encode();
  }

  /** GPU-DFOR of {@code values[0, count)}. */
  public static Packed encodeDfor(long[] values, int count, int lanes) {
    return new GpuForEncoder(values, count, lanes, true).encode();
  }

  /** {@code encodeFor} or {@code encodeDfor}, by {@code encoding} (FOR or DFOR). */
  public static Packed encode(Encoding encoding, long[] values, int count, int lanes) {
    return new GpuForEncoder(values, count, lanes, isDelta(encoding)).encode();
  }

  /** Words of {@code encodeFor}'s result (block starts not counted), without packing. */
  public static long forWords(long[] values, int count, int lanes) {
    return new GpuForEncoder(values, count, lanes, false).words();
  }

  /** Words of {@code encodeDfor}'s result (block starts not counted), without packing. */
  public static long dforWords(long[] values, int count, int lanes) {
    return new GpuForEncoder(values, count, lanes, true).words();
  }

  /** Bytes an encoding of {@code count} values in {@code words} words takes, block starts too. */
  public static long packedBytes(long words, int count) {
    return 4L * (words + GpuForLayout.blocks(count) + 1);
  }

  /** The first {@code count} values of GPU-FOR {@code p}. */
  public static long[] decodeFor(Packed p, int count, int lanes) {
    return decodeFor(p, 0, count, lanes);
  }

  /** The first {@code count} values of GPU-DFOR {@code p}. */
  public static long[] decodeDfor(Packed p, int count, int lanes) {
    return decodeDfor(p, 0, count, lanes);
  }

  /** {@code decodeFor} or {@code decodeDfor}, by {@code encoding} (FOR or DFOR). */
  public static long[] decode(Encoding encoding, Packed p, int count, int lanes) {
    return decode(encoding, p, 0, count, lanes);
  }

  /**
   * Values {@code [from, from + count)} of {@code p}, GPU-FOR or GPU-DFOR by {@code encoding}:
   * a slice of the rows, decoded without the ones before it. {@code from} must start a GPU-DFOR
   * set (a multiple of {@link GpuForLayout#SET_VALUES}), where both encodings' blocks start.
   */
  public static long[] decode(Encoding encoding, Packed p, int from, int count, int lanes) {
    return isDelta(encoding) ? decodeDfor(p, from, count, lanes) : decodeFor(p, from, count, lanes);
  }

  private static long[] decodeFor(Packed p, int from, int count, int lanes) {
    checkLanes(lanes);
    checkSlice(from, count);
    long[] out = new long[count];
    decodeBlocks(p, from, count, lanes, out);
    return out;
  }

  private static long[] decodeDfor(Packed p, int from, int count, int lanes) {
    checkLanes(lanes);
    checkSlice(from, count);
    long[] out = new long[count];
    decodeBlocks(p, from, count, lanes, out);
    int referenceWords = GpuForLayout.referenceWords(lanes);
    for (int start = 0; start < count; start += SET_VALUES) {
      int first = p.blockStarts()[(from + start) / BLOCK_VALUES] - referenceWords;
      long sum = readSigned(p.words(), first, referenceWords);
      int end = Math.min(count, start + SET_VALUES);
      for (int i = start; i < end; i++) {
        sum += out[i];
        out[i] = narrow(sum, lanes);
      }
    }
    return out;
  }

  private static void checkSlice(int from, int count) {
    if (from < 0 || count < 0 || from % SET_VALUES != 0) {
      throw new IllegalArgumentException("a slice of GPU-FOR values starts at a multiple of "
          + SET_VALUES + " and has 0 or more rows, not " + count + " from " + from);
    }
  }

  /**
   * Value {@code row} of GPU-FOR {@code p}, reading only its block's header and the words that
   * hold it (the thesis's Algorithm 6; gpufor.cuh's ForValue).
   */
  public static long valueFor(Packed p, int row, int lanes) {
    checkLanes(lanes);
    int referenceWords = GpuForLayout.referenceWords(lanes);
    int at = p.blockStarts()[row / BLOCK_VALUES];
    int[] words = p.words();
    long reference = readSigned(words, at, referenceWords);
    int widths = words[at + referenceWords];
    int miniblock = (row % BLOCK_VALUES) / MINIBLOCK_VALUES;
    int offset = GpuForEncoder.sumOfWidths(widths & (int) ((1L << (8 * miniblock)) - 1));
    int width = checkWidth((widths >>> (8 * miniblock)) & 255, lanes);
    long difference = BitPacking.extract(words, at + referenceWords + 1 + offset,
        (row % MINIBLOCK_VALUES) * width, width);
    return narrow(reference + difference, lanes);
  }

  /**
   * Value {@code row} of GPU-DFOR {@code p}: its set's first value plus the deltas of the set up
   * to the row (up to {@link GpuForLayout#SET_VALUES} of them; prefer {@link #decodeDfor} for
   * many rows).
   */
  public static long valueDfor(Packed p, int row, int lanes) {
    checkLanes(lanes);
    int referenceWords = GpuForLayout.referenceWords(lanes);
    int firstBlock = row / SET_VALUES * SET_BLOCKS;
    int lastBlock = row / BLOCK_VALUES;
    long sum = readSigned(p.words(), p.blockStarts()[firstBlock] - referenceWords, referenceWords);
    for (int b = firstBlock; b <= lastBlock; b++) {
      int n = b < lastBlock ? BLOCK_VALUES : row % BLOCK_VALUES + 1;
      sum += sumOfEntries(p, b, n, lanes);
    }
    return narrow(sum, lanes);
  }

  /** {@code valueFor} or {@code valueDfor}, by {@code encoding} (FOR or DFOR). */
  public static long value(Encoding encoding, Packed p, int row, int lanes) {
    return isDelta(encoding) ? valueDfor(p, row, lanes) : valueFor(p, row, lanes);
  }

  /**
   * How many stored miniblocks have each bit width (index 0 to 64) in the blocks of
   * {@code count} values, padding miniblocks included: for metrics.
   */
  public static int[] bitWidthHistogram(Packed p, int count, int lanes) {
    checkLanes(lanes);
    int referenceWords = GpuForLayout.referenceWords(lanes);
    int[] histogram = new int[65];
    int blocks = GpuForLayout.blocks(count);
    for (int b = 0; b < blocks; b++) {
      int widths = p.words()[p.blockStarts()[b] + referenceWords];
      for (int m = 0; m < MINIBLOCKS; m++) {
        histogram[checkWidth((widths >>> (8 * m)) & 255, lanes)]++;
      }
    }
    return histogram;
  }

  /**
   * The stored entries (values, or deltas) of the {@code count} rows from {@code from} (a block's
   * first row), into {@code out} from its start.
   */
  private static void decodeBlocks(Packed p, int from, int count, int lanes, long[] out) {
    int referenceWords = GpuForLayout.referenceWords(lanes);
    int[] words = p.words();
    int blocks = GpuForLayout.blocks(count);
    for (int b = 0; b < blocks; b++) {
      int at = p.blockStarts()[from / BLOCK_VALUES + b];
      long reference = readSigned(words, at, referenceWords);
      int widths = words[at + referenceWords];
      int base = at + referenceWords + 1;
      int row = b * BLOCK_VALUES;
      for (int m = 0; m < MINIBLOCKS && row < count; m++) {
        int width = checkWidth((widths >>> (8 * m)) & 255, lanes);
        int n = Math.min(MINIBLOCK_VALUES, count - row);
        BitPacking.unpackMiniblock(words, base, width, n, reference, lanes, out, row);
        base += width;
        row += MINIBLOCK_VALUES;
      }
    }
  }

  /** The sum (mod 2^64) of the first {@code n} entries of block {@code b}. */
  private static long sumOfEntries(Packed p, int b, int n, int lanes) {
    int referenceWords = GpuForLayout.referenceWords(lanes);
    int[] words = p.words();
    int at = p.blockStarts()[b];
    int widths = words[at + referenceWords];
    int base = at + referenceWords + 1;
    long sum = n * readSigned(words, at, referenceWords);
    for (int m = 0; m < MINIBLOCKS && m * MINIBLOCK_VALUES < n; m++) {
      int width = checkWidth((widths >>> (8 * m)) & 255, lanes);
      int end = Math.min(MINIBLOCK_VALUES, n - m * MINIBLOCK_VALUES);
      for (int j = 0; j < end; j++) {
        sum += BitPacking.extract(words, base, j * width, width);
      }
      base += width;
    }
    return sum;
  }

  private static long readSigned(int[] words, int at, int referenceWords) {
    return referenceWords == 2
        ? (words[at] & 0xFFFFFFFFL) | (long) words[at + 1] << 32
        : words[at];
  }

  private static long narrow(long value, int lanes) {
    return lanes == 32 ? (int) value : value;
  }

  private static boolean isDelta(Encoding encoding) {
    return switch (encoding) {
      case FOR -> false;
      case DFOR -> true;
      case PLAIN -> throw new IllegalArgumentException("PLAIN is not a GPU-FOR encoding");
    };
  }

  private static int checkWidth(int width, int lanes) {
    if (width > lanes) {
      throw new IllegalArgumentException("corrupt GPU-FOR block: bit width " + width
          + " for " + lanes + "-bit lanes");
    }
    return width;
  }

  static void checkLanes(int lanes) {
    if (lanes != 32 && lanes != 64) {
      throw new IllegalArgumentException("lanes must be 32 or 64, not " + lanes);
    }
  }
}
