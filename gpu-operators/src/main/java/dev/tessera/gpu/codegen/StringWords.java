package dev.tessera.gpu.codegen;

/**
 * A string's bytes in PTX, a word of 8 at a time: read ({@link #word}) and hashed ({@link #hash})
 * as hash.cuh reads and hashes them. A grouped aggregate's string keys (GroupLookup) and a join
 * probe's (ProgramEmitter) both go through these, so that a key hashes alike wherever it is
 * looked up.
 */
final class StringWords {
  /** hash.cuh kStringHashSeed: HashBytes' seed, to which a string's length is added. */
  private static final long STRING_HASH_SEED = 0x452821e638d01377L;

  private StringWords() {}

  /**
   * hash.cuh HashBytes: a string's bytes, 8 at a time into a word, each whole word mixed in, then
   * the last (partial, or 0) word. Each word's bytes are loaded together ({@link #word}), so a
   * key costs a memory round trip per 8 bytes, not per byte. {@code first}: the key's first word
   * where the caller has read it (GroupLookup.shortForm), else null.
   */
  static String hash(PtxBuilder b, String address, String length, String first) {
    String h = b.b64();
    String length64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", length64, length);
    b.op("add.s64 %s, %s, %d", h, length64, STRING_HASH_SEED);
    b.op("mov.b64 %s, %s", h, ProgramEmitter.mix(b, h));
    String i = b.b64();
    b.op("mov.b64 %s, 0", i);
    String loop = b.label("hash_word");
    String last = b.label("hash_last_word");
    String p = b.pred();
    String end = b.b64();
    String mixed = b.b64();
    if (first != null) {
      // The first word as read already ({@code first}): the loop's first round, unrolled.
      b.op("xor.b64 %s, %s, %s", mixed, h, first);
      b.op("setp.lt.s64 %s, %s, 8", p, length64);
      b.op("@%s bra %s", p, last);
      b.op("mov.b64 %s, %s", h, ProgramEmitter.mix(b, mixed));
      b.op("mov.b64 %s, 8", i);
    }
    b.place(loop);
    // The word at i: a whole one while it ends within the key, else the last (0 past the end).
    b.op("xor.b64 %s, %s, %s", mixed, h, word(b, address, i, length64));
    b.op("add.s64 %s, %s, 8", end, i);
    b.op("setp.gt.s64 %s, %s, %s", p, end, length64);
    b.op("@%s bra %s", p, last);
    b.op("mov.b64 %s, %s", h, ProgramEmitter.mix(b, mixed));
    b.op("mov.b64 %s, %s", i, end);
    b.op("bra %s", loop);
    b.place(last);
    return ProgramEmitter.mix(b, mixed);
  }

  /**
   * A new .b64: a string's bytes at {@code base + i} up to 8, and before {@code length},
   * little-endian (the first in the low byte), 0 past the end; as hash.cuh's HashBytes and
   * hash_aggregate.cuh's key heap hold them. The string may start anywhere: this reads the one or
   * two aligned words that hold those bytes (none where none is left) and shifts them into place.
   * The rest of an aligned word that holds a string's byte lies inside the same buffer: every
   * buffer a string register points into (an input column, a dictionary, a join table's payload,
   * the plan's string constants) comes from a pool, which hands out whole multiples of
   * ArenaPool.ALIGNMENT bytes. Eight byte loads a word, before, took some 30 instructions.
   */
  static String word(PtxBuilder b, String base, String i, String length) {
    String at = b.b64();
    b.op("add.s64 %s, %s, %s", at, base, i);
    String left = b.b64();
    b.op("sub.s64 %s, %s, %s", left, length, i);
    String aligned = b.b64();
    b.op("and.b64 %s, %s, -8", aligned, at);
    String misalignment = b.b64();
    b.op("and.b64 %s, %s, 7", misalignment, at);
    String p = b.pred();
    String low = b.b64();
    b.op("mov.b64 %s, 0", low);
    b.op("setp.gt.s64 %s, %s, 0", p, left);
    b.op("@%s ld.u64 %s, [%s]", p, low, aligned);
    // The next aligned word holds some of the 8 only where the string goes on past this one.
    String reach = b.b64();
    b.op("add.s64 %s, %s, %s", reach, misalignment, left);
    String high = b.b64();
    b.op("mov.b64 %s, 0", high);
    b.op("setp.gt.s64 %s, %s, 8", p, reach);
    b.op("@%s ld.u64 %s, [%s+8]", p, high, aligned);
    String shift = b.b32();
    b.op("cvt.u32.u64 %s, %s", shift, misalignment);
    b.op("shl.b32 %s, %s, 3", shift, shift);
    String back = b.b32();
    b.op("sub.u32 %s, 64, %s", back, shift);
    // Shift amounts of 64 or more give 0 (PTX clamps them): at shift 0 the high word adds nothing.
    String word = b.b64();
    b.op("shr.b64 %s, %s, %s", word, low, shift);
    String fromHigh = b.b64();
    b.op("shl.b64 %s, %s, %s", fromHigh, high, back);
    b.op("or.b64 %s, %s, %s", word, word, fromHigh);
    // Only the first min(left, 8) bytes are the string's: the mask 2^(8 * kept) - 1, or all ones.
    String kept = b.b64();
    b.op("min.s64 %s, %s, 8", kept, left);
    String bits = b.b32();
    b.op("cvt.u32.u64 %s, %s", bits, kept);
    b.op("shl.b32 %s, %s, 3", bits, bits);
    String mask = b.b64();
    b.op("mov.b64 %s, 1", mask);
    b.op("shl.b64 %s, %s, %s", mask, mask, bits);
    b.op("sub.s64 %s, %s, 1", mask, mask);
    b.op("and.b64 %s, %s, %s", word, word, mask);
    return word;
  }
}
