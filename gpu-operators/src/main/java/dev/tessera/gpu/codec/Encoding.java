package dev.tessera.gpu.codec;

/**
 * How a cached column's values are stored (Crystal thesis chapter 5; the layout is
 * {@link GpuForLayout}'s). The ordinal is the {@code encoding} field of program.cuh's InputColumn,
 * so the order is fixed (ProgramAbiTest checks it against the CUDA enum).
 */
public enum Encoding {
  /** The device layout as it is: fixed-width values, or a string column's offsets and bytes. */
  PLAIN,
  /** GPU-FOR: frame of reference per block of 128 values, bit-packed in miniblocks of 32. */
  FOR,
  /** GPU-DFOR: deltas within each set of 4 blocks (the first value stored before it), then GPU-FOR. */
  DFOR;
}
