package dev.tessera.gpu.codec;

/**
 * Arrow validity bitmaps (bit {@code r % 8} of byte {@code r / 8}; 1 = valid) for
 * {@link EncodedColumn}, from the flags or null elements its factories take.
 */
final class Validity {
  private Validity() {}

  /** Null rows among {@code valid[0, rows)}; none when {@code valid} is null. */
  static int nulls(boolean[] valid, int rows) {
    int nulls = 0;
    for (int r = 0; valid != null && r < rows; r++) {
      if (!valid[r]) {
        nulls++;
      }
    }
    return nulls;
  }

  static byte[] bitmap(boolean[] valid, int rows) {
    byte[] bitmap = new byte[(rows + 7) / 8];
    for (int r = 0; r < rows; r++) {
      if (valid[r]) {
        bitmap[r >>> 3] |= (byte) (1 << (r & 7));
      }
    }
    return bitmap;
  }

  static byte[] bitmapOfNonNull(Object[] values, int rows) {
    byte[] bitmap = new byte[(rows + 7) / 8];
    for (int r = 0; r < rows; r++) {
      if (values[r] != null) {
        bitmap[r >>> 3] |= (byte) (1 << (r & 7));
      }
    }
    return bitmap;
  }
}
