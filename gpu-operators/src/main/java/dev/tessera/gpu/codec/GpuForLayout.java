package dev.tessera.gpu.codec;

/**
 * The one definition of the GPU-FOR and GPU-DFOR layouts (Crystal thesis chapter 5,
 * {@code ../shared/reference/crystal-thesis-digest.md} §6), shared by the host reference codec
 * ({@link GpuForCodec}) and the CUDA tile loads (native-kernels/include/tessera/gpufor.cuh, whose
 * constants ProgramAbiTest checks against these).
 *
 * <p><b>Lanes.</b> Values are integers of {@link #lanes lanes} bits: 64 for 8-byte types (LONG,
 * TIMESTAMP, DECIMAL's unscaled long), 32 for everything narrower and for dictionary codes.
 * Arithmetic is modulo 2^lanes; a 32-lane value is sign-extended from 32 bits when decoded.
 *
 * <p><b>GPU-FOR.</b> The values are cut into blocks of {@link #BLOCK_VALUES} (the last block
 * padded with its reference). Block {@code b} starts at word {@code blockStarts[b]} of the int32
 * {@code words} array; {@code blockStarts} has one entry per block plus one (the total). A block
 * is: the reference (the block's minimum, as a signed lanes-bit value; {@link #referenceWords}
 * words, low word first); one word of bit widths (byte {@code m} is miniblock {@code m}'s width,
 * 0 to lanes); then the {@link #MINIBLOCKS} miniblocks, miniblock {@code m} taking exactly
 * {@code width_m} words. Value {@code j} of a miniblock is the unsigned difference
 * {@code value - reference} (mod 2^lanes) in bits {@code [j * width, (j + 1) * width)} of the
 * miniblock, bit {@code k} being bit {@code k % 32} of the miniblock's word {@code k / 32}.
 *
 * <p><b>GPU-DFOR.</b> The values are cut into sets of {@link #SET_BLOCKS} blocks
 * ({@link #SET_VALUES} values: one tile of the kernels). Within a set, delta {@code i} is
 * {@code value[i] - value[i - 1]} (mod 2^lanes), and the set's first delta is 0; the deltas are
 * stored as GPU-FOR blocks. The set's first value is stored just before its first block
 * ({@link #referenceWords} words, so at {@code blockStarts[firstBlock] - referenceWords}); the
 * blocks' own starts are as in GPU-FOR. Value {@code i} is the first value plus the deltas of the
 * set up to {@code i}.
 *
 * <p><b>Nulls</b> are an Arrow validity bitmap beside the encoded values; a null row's slot holds
 * the value of the row before it (the first non-null value at the start), so that nulls widen
 * neither a block's range nor the deltas. <b>Strings</b> are a dictionary per batch (distinct
 * values in order of first appearance, as offsets + bytes) and 32-lane codes, GPU-FOR or GPU-DFOR.
 */
public final class GpuForLayout {
  private GpuForLayout() {}

  /**
   * Zero words that follow a GPU-FOR or GPU-DFOR column's words in its device copy
   * ({@link DeviceEncodedColumn}), so that a generated kernel reads the two words a value may lie
   * in without checking whether the second exists: the last miniblock's last value (or a
   * miniblock of width 0 at the end) starts at most one word before the array's end.
   */
  public static final int TRAILING_WORDS = 2;

  /** Values in a block. */
  public static final int BLOCK_VALUES = 128;
  /** Values in a miniblock: one warp, one bit width. */
  public static final int MINIBLOCK_VALUES = 32;
  /** Miniblocks in a block. */
  public static final int MINIBLOCKS = BLOCK_VALUES / MINIBLOCK_VALUES;
  /** Blocks in a GPU-DFOR set: one kernel tile (kTileItems = 128 threads x 4 items). */
  public static final int SET_BLOCKS = 4;
  /** Values in a GPU-DFOR set. */
  public static final int SET_VALUES = SET_BLOCKS * BLOCK_VALUES;

  /** The lanes of a type whose device values are {@code widthBytes} wide. */
  public static int lanes(int widthBytes) {
    return widthBytes == Long.BYTES ? 64 : 32;
  }

  /** Words of a block's reference (and of a GPU-DFOR set's first value). */
  public static int referenceWords(int lanes) {
    return lanes / 32;
  }

  /** Blocks for {@code values} values. */
  public static int blocks(int values) {
    return (values + BLOCK_VALUES - 1) / BLOCK_VALUES;
  }
}
