package dev.tessera.gpu.codegen;

/**
 * hash_aggregate.cuh AtomicAdd128 in PTX: an int128 (low, high) added to a group's two
 * accumulator words with two atomics, the carry out of the low word going into the high word, so
 * the total is exact once every addition has landed, whatever the order. One definition for the
 * generated kernels' group update ({@link GroupAccumulation}) and their register accumulators'
 * merge ({@link RegisterAccumulators}).
 */
final class Int128Atomics {
  private Int128Atomics() {}

  /**
   * Adds ({@code low}, {@code high}) to the words at {@code lowAt} and {@code highAt}, addresses
   * of the state space {@code space} (".global", ".shared", or "" for generic addresses).
   */
  static void add(PtxBuilder b, String space, String lowAt, String highAt, String low,
      String high) {
    carry(b, space, highAt, addLow(b, space, lowAt, low), low, high);
  }

  /**
   * The first half of {@link #add}: {@code low} added to the word at {@code lowAt}. Returns the
   * word's old value (.b64), which {@link #carry} needs: a caller with more atomics to issue may
   * issue them before it waits for this one's result.
   */
  static String addLow(PtxBuilder b, String space, String lowAt, String low) {
    String old = b.b64();
    b.op("atom%s.add.u64 %s, [%s], %s", space, old, lowAt, low);
    return old;
  }

  /**
   * The second half of {@link #add}: the carry out of the low word (whose value before {@code low}
   * was added is {@code old}) plus {@code high}, added to the word at {@code highAt} unless zero.
   */
  static void carry(PtxBuilder b, String space, String highAt, String old, String low,
      String high) {
    String sum = b.b64();
    b.op("add.s64 %s, %s, %s", sum, old, low);
    String carried = b.pred();
    b.op("setp.lt.u64 %s, %s, %s", carried, sum, old);
    String highAdd = b.b64();
    b.op("selp.b64 %s, 1, 0, %s", highAdd, carried);
    b.op("add.s64 %s, %s, %s", highAdd, highAdd, high);
    String zero = b.pred();
    b.op("setp.eq.s64 %s, %s, 0", zero, highAdd);
    String oldHigh = b.b64();
    b.op("@!%s atom%s.add.u64 %s, [%s], %s", zero, space, oldHigh, highAt, highAdd);
  }
}
