package dev.tessera.gpu.codegen;

import java.util.List;

/**
 * program.cuh Utf8Compare (UTF8String.binaryCompare: unsigned bytes, then length) written into a
 * generated kernel: its first step, the first eight bytes of each string, inline, and the
 * prelude's {@code tessera_utf8_compare} only where those are the same and both strings are
 * longer. A call is a wall ptxas does not move loads across, so each of a thread's items called
 * in turn, its loads waiting for the last item's (a dimension filter comparing a string column
 * with a constant, 4 or 8 items a thread); inline, every item's loads are issued together. Most
 * strings a filter or a join key compares differ in their first eight bytes, or are no longer.
 *
 * <p>The bytes read are those program.cuh's first step reads (BigEndianWord: a byte past the
 * shorter string's length reads its last one, then counts as 0; none where it is empty), so the
 * inline step reads no address the call would not.
 */
final class Utf8CompareEmitter {
  /** program.cuh Utf8Compare's step: the bytes of each string compared at once. */
  static final int STEP_BYTES = 8;

  private Utf8CompareEmitter() {}

  /**
   * -1, 0 or 1 (.b32) as the string {@code x} orders against {@code y} (each a {@link Val} of a
   * generic address and a length).
   */
  static String order(PtxBuilder b, Val x, Val y) {
    return orders(b, new Val[] {x}, new Val[] {y})[0];
  }

  /**
   * {@link #order} of each pair {@code xs[k]}, {@code ys[k]}: every pair's first step, then each
   * pair's rest where its first step left it open, so that the pairs' loads are issued together
   * (a pair's rest is a branch, which ptxas does not move the next pair's loads above).
   */
  static String[] orders(PtxBuilder b, Val[] xs, Val[] ys) {
    FirstStep[] steps = new FirstStep[xs.length];
    for (int k = 0; k < xs.length; k++) {
      steps[k] = firstStep(b, xs[k], ys[k]);
    }
    String[] orders = new String[xs.length];
    for (int k = 0; k < xs.length; k++) {
      // The rest of the strings only where the first step left them the same and both go on.
      String compared = b.label("utf8_compared");
      b.op("@!%s bra %s", steps[k].rest(), compared);
      PreludeCall.callDivergent(b, "tessera_utf8_compare", steps[k].order(), List.of(
          PreludeCall.b64(xs[k].value()), PreludeCall.b32(xs[k].length()),
          PreludeCall.b64(ys[k].value()), PreludeCall.b32(ys[k].length())));
      b.place(compared);
      orders[k] = steps[k].order();
    }
    return orders;
  }

  /** A pair's order by its first step (.b32), and whether the rest must decide it (.pred). */
  private record FirstStep(String order, String rest) {}

  private static FirstStep firstStep(PtxBuilder b, Val x, Val y) {
    String n = b.b32();
    b.op("min.s32 %s, %s, %s", n, x.length(), y.length());
    String count = b.b32();
    b.op("min.s32 %s, %s, %d", count, n, STEP_BYTES);
    String any = b.pred();
    b.op("setp.gt.s32 %s, %s, 0", any, count);
    // Bytes past count are masked off the big-endian word: its low 64 - 8 * count bits (all of
    // them where count is 0: a shift past the width gives 0).
    String maskShift = b.b32();
    b.op("shl.b32 %s, %s, 3", maskShift, count);
    b.op("sub.s32 %s, 64, %s", maskShift, maskShift);
    String mask = b.b64();
    b.op("mov.b64 %s, -1", mask);
    b.op("shl.b64 %s, %s, %s", mask, mask, maskShift);
    String xWord = firstBytes(b, x.value(), count, any, mask);
    String yWord = firstBytes(b, y.value(), count, any, mask);

    String order = b.b32();
    String shorter = b.pred();
    b.op("setp.lt.s32 %s, %s, %s", shorter, x.length(), y.length());
    String longer = b.pred();
    b.op("setp.gt.s32 %s, %s, %s", longer, x.length(), y.length());
    b.op("selp.b32 %s, 1, 0, %s", order, longer);
    b.op("@%s mov.b32 %s, -1", shorter, order);
    String same = b.pred();
    b.op("setp.eq.u64 %s, %s, %s", same, xWord, yWord);
    String below = b.pred();
    b.op("setp.lt.u64 %s, %s, %s", below, xWord, yWord);
    String byBytes = b.b32();
    b.op("selp.b32 %s, -1, 1, %s", byBytes, below);
    b.op("@!%s mov.b32 %s, %s", same, order, byBytes);
    String rest = b.pred();
    b.op("setp.gt.and.s32 %s, %s, %d, %s", rest, n, STEP_BYTES, same);
    return new FirstStep(order, rest);
  }

  /**
   * The first {@code count} (0 to 8) bytes at {@code address}, big-endian in a .b64 word, zeros
   * past count ({@code mask}): two strings' words order as their bytes do. Byte k reads
   * address + min(k, count - 1); none is read where count is 0.
   */
  private static String firstBytes(PtxBuilder b, String address, String count, String any,
      String mask) {
    String last = b.b64();
    b.op("cvt.s64.s32 %s, %s", last, count);
    b.op("add.s64 %s, %s, %s", last, address, last);
    b.op("add.s64 %s, %s, -1", last, last);
    String[] halves = new String[2];
    for (int half = 0; half < 2; half++) {
      String word = b.b32();
      b.op("mov.b32 %s, 0", word);
      for (int k = 4 * half; k < 4 * half + 4; k++) {
        String at = b.b64();
        b.op("add.s64 %s, %s, %d", at, address, k);
        b.op("min.u64 %s, %s, %s", at, at, last);
        String byteValue = b.b32();
        b.op("mov.b32 %s, 0", byteValue);
        b.op("@%s ld.u8 %s, [%s]", any, byteValue, at);
        b.op("shl.b32 %s, %s, 8", word, word);
        b.op("or.b32 %s, %s, %s", word, word, byteValue);
      }
      halves[half] = word;
    }
    String value = b.b64();
    b.op("mov.b64 %s, {%s, %s}", value, halves[1], halves[0]);
    b.op("and.b64 %s, %s, %s", value, value, mask);
    return value;
  }
}
