package dev.tessera.gpu.codegen;

/**
 * A per-block table entry's accumulators updated with the atomics shared memory has in hardware.
 * sm_90 has no 64-bit shared add, minimum or maximum: ptxas writes each as a compare-and-swap loop
 * ({@code ATOMS.CAST.SPIN.64}), which runs once more for every lane of the warp that updates the
 * same word. 32-bit adds are native ({@code ATOMS.ADD}), so counts and sums are added a 32-bit word
 * at a time, each word's carry going into the next, and a minimum or maximum reads the word first
 * and attempts its loop only where the value improves on it. Each update that waits for a result
 * (a lower half's old value, a read) also comes in two parts, the atomic or read issued and what
 * waits for it returned, so that a row issues all its functions' before it waits once
 * (GroupAccumulation.rowsInTableOrGlobal).
 *
 * <p>The entries keep LocalTable's layout (a 64-bit value and a 64-bit high word a function), so
 * the per-block table's reset and merge read them as before.
 */
final class SharedAtomics {
  private SharedAtomics() {}

  /**
   * Adds the .u32 {@code n} to the count at {@code valueAt} (a shared address). A per-block entry
   * counts at most the rows of one launch, fewer than 2^31, so its high word stays 0.
   */
  static void addCount(PtxBuilder b, String valueAt, String n) {
    b.op("red.shared.add.u32 [%s], %s", valueAt, n);
  }

  /**
   * Adds the .b64 {@code x} to the 64-bit word at {@code valueAt} (a shared address), wrapping:
   * the lower half by a 32-bit atomic that returns the half's old value, so that its carry is
   * known, the upper half's addend (with the carry) by one that returns nothing, only where it is
   * not 0.
   */
  static void addWrapping64(PtxBuilder b, String valueAt, String x) {
    issueWrapping64(b, valueAt, x).run();
  }

  /**
   * {@link #addWrapping64} in two parts: the lower half's atomic issued here; the returned part,
   * which waits for its old value (the carry, the upper half's atomic), for the caller to write
   * after other functions' atomics and reads, so that a row waits once for all of them
   * (GroupAccumulation's deferred waits).
   */
  static Runnable issueWrapping64(PtxBuilder b, String valueAt, String x) {
    LowerHalf lower = issueLowerHalf(b, valueAt, x);
    return () -> {
      String carry = lower.carry(b);
      String x1 = lower.upper();
      b.op("@%s add.u32 %s, %s, 1", carry, x1, x1);
      String none1 = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", none1, x1);
      String upperAt = b.b64();
      b.op("add.u64 %s, %s, 4", upperAt, valueAt);
      b.op("@!%s red.shared.add.u32 [%s], %s", none1, upperAt, x1);
    };
  }

  /**
   * Adds the int128 ({@code low}, {@code high}) to the sum whose low 64 bits are at {@code valueAt}
   * and high 64 bits at {@code highAt} (shared addresses): the low word's two halves by 32-bit
   * atomics, each returning the half's old value so that its carry is known, the high word by a
   * 64-bit atomic only where something reaches it. Exact once every addition has landed, in any
   * order: each carry is counted by the addition that made it. An addend that is 0 for a half is
   * not added (a small positive value costs one atomic).
   */
  static void addInt128(PtxBuilder b, String valueAt, String highAt, String low, String high) {
    issueInt128(b, valueAt, highAt, low, high).run();
  }

  /**
   * {@link #addInt128} in two parts, as {@link #issueWrapping64}: the lower half's atomic issued
   * here, the rest (which waits for its old value) in the returned part.
   */
  static Runnable issueInt128(PtxBuilder b, String valueAt, String highAt, String low,
      String high) {
    LowerHalf lower = issueLowerHalf(b, valueAt, low);
    return () -> {
      String carry = lower.carry(b);
      // The upper half's addend, up to 2^32: 33 bits.
      String add1 = b.b64();
      b.op("cvt.u64.u32 %s, %s", add1, lower.upper());
      b.op("@%s add.u64 %s, %s, 1", carry, add1, add1);
      String none1 = b.pred();
      b.op("setp.eq.u64 %s, %s, 0", none1, add1);
      String add1Word = b.b32();
      b.op("cvt.u32.u64 %s, %s", add1Word, add1);
      String upperAt = b.b64();
      b.op("add.u64 %s, %s, 4", upperAt, valueAt);
      String old1 = b.b32();
      b.op("mov.u32 %s, 0", old1);
      b.op("@!%s atom.shared.add.u32 %s, [%s], %s", none1, old1, upperAt, add1Word);
      String reached = b.b64();
      b.op("cvt.u64.u32 %s, %s", reached, old1);
      b.op("add.u64 %s, %s, %s", reached, reached, add1);
      b.op("shr.u64 %s, %s, 32", reached, reached);
      b.op("add.s64 %s, %s, %s", reached, reached, high);
      String none = b.pred();
      b.op("setp.eq.s64 %s, %s, 0", none, reached);
      String oldHigh = b.b64();
      b.op("@!%s atom.shared.add.u64 %s, [%s], %s", none, oldHigh, highAt, reached);
    };
  }

  /**
   * The lower half of an addend added by a 32-bit atomic that returns the word's old value: the
   * half added ({@code x0}), the word's old value ({@code old0}) and the addend's upper half
   * (.b32 each), which the caller adds with the carry ({@link #carry}).
   */
  private record LowerHalf(String x0, String old0, String upper) {
    /** The carry out of the lower half (.pred): where the sum wrapped below its old value. */
    String carry(PtxBuilder b) {
      String sum0 = b.b32();
      b.op("add.u32 %s, %s, %s", sum0, old0, x0);
      String carry0 = b.pred();
      b.op("setp.lt.u32 %s, %s, %s", carry0, sum0, old0);
      return carry0;
    }
  }

  /** Adds the lower half of the .b64 {@code x} to the word at {@code valueAt}, returning it. */
  private static LowerHalf issueLowerHalf(PtxBuilder b, String valueAt, String x) {
    String x0 = b.b32();
    String x1 = b.b32();
    b.op("mov.b64 {%s, %s}, %s", x0, x1, x);
    String old0 = b.b32();
    b.op("atom.shared.add.u32 %s, [%s], %s", old0, valueAt, x0);
    return new LowerHalf(x0, old0, x1);
  }

  /**
   * MIN or MAX ({@code op} "min" or "max") of the .s64 {@code v} into the word at {@code valueAt}
   * (a shared address): read first, and the atomic made only where {@code v} improves on what
   * was read. The word only moves towards the result, so a value that does not improve on an
   * earlier read cannot improve on the word later.
   */
  static void minMax(PtxBuilder b, String op, String valueAt, String v) {
    readFirstMinMax(b, op, valueAt, v).run();
  }

  /**
   * {@link #minMax} in two parts: the read issued here, the compare and the atomic in the
   * returned part. Reading earlier changes nothing: any earlier read is a value the word has
   * since moved from, towards the result.
   */
  static Runnable readFirstMinMax(PtxBuilder b, String op, String valueAt, String v) {
    String current = b.b64();
    b.op("ld.volatile.shared.s64 %s, [%s]", current, valueAt);
    return () -> {
      String improves = b.pred();
      b.op("setp.%s.s64 %s, %s, %s", op.equals("min") ? "lt" : "gt", improves, v, current);
      String old = b.b64();
      b.op("@%s atom.shared.%s.s64 %s, [%s], %s", improves, op, old, valueAt, v);
    };
  }
}
