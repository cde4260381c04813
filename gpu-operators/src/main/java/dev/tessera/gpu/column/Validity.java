package dev.tessera.gpu.column;

/**
 * The validity bitmap layout, Arrow's: bit {@code i % 8} of byte {@code i / 8} is 1 when row i is
 * not null. The buffer is padded to whole 64-bit words so kernels can read it a word at a time;
 * padding bits are 0.
 */
public final class Validity {
  private Validity() {}

  /** Bytes of a validity bitmap for {@code rows} rows. */
  public static long bytesFor(long rows) {
    return ((rows + 63) / 64) * 8;
  }
}
