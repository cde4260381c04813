package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.TypeId;

/**
 * The arithmetic of a generated aggregate kernel's accumulators (part of {@link
 * GroupAccumulation}): hash_aggregate.cuh's Accumulate, MarkSeen, AtomicMinMax, AtomicAdd128 and
 * the values they take, written as PTX for one function's accumulators at addresses of a given
 * state space. Where the values come from (a row, a warp's reduction, a lane's run) and which
 * accumulators they update is {@link GroupAccumulation}'s part.
 */
final class AccumulatorArithmetic {
  /**
   * Function f's accumulators (value, high, seen): addresses of the state space {@code space}
   * (".shared" for the per-block table's entry, ".global" for the group's own, "" for generic
   * addresses of either, {@code inTable} then the .pred of the former).
   */
  record Accumulators(String value, String high, String seen, String space,
      String inTable) {}

  private final PtxBuilder b;
  private final AggregateSpec spec;

  AccumulatorArithmetic(PtxBuilder b, AggregateSpec spec) {
    this.b = b;
    this.spec = spec;
  }

  /**
   * Adds {@code n} (a .u32 register, or an immediate) to a count's accumulator: in a per-block
   * entry by {@link SharedAtomics}, elsewhere by a 64-bit atomic (a group's count over the whole
   * aggregation may pass 2^32).
   */
  void addCount(Accumulators at, String n) {
    if (at.space().equals(".shared")) {
      SharedAtomics.addCount(b, at.value(), n);
      return;
    }
    String wide = n;
    if (n.startsWith("%")) {
      wide = b.b64();
      b.op("cvt.u64.u32 %s, %s", wide, n);
    }
    String old = b.b64();
    b.op("atom%s.add.u64 %s, [%s], %s", at.space(), old, at.value(), wide);
  }

  /**
   * Whether function f's sum keeps only its low word ({@link #addWrappingSum}): a SUM of integers
   * to LONG without ANSI mode, whose result is the int64 wrap of the exact sum, so the high word
   * is never read (hash_aggregate.cuh FinalValue reads it for ANSI's overflow, a DOUBLE result
   * and a decimal's precision). One atomic a row instead of the low word's (whose result the carry
   * waits for) and, for every negative value or carry, the high word's.
   */
  boolean wraps(int f) {
    return wraps(spec, f);
  }

  /** {@link #wraps(int)} of function f of {@code spec}. */
  static boolean wraps(AggregateSpec spec, int f) {
    AggregateFunction fn = spec.functions().get(f);
    if (fn.kind() != Kind.SUM || fn.resultType().id() != TypeId.LONG || spec.ansi()) {
      return false;
    }
    TypeId input = inputType(spec, f);
    return input == TypeId.BYTE || input == TypeId.SHORT || input == TypeId.INT
        || input == TypeId.LONG;
  }

  /**
   * Adds the .b64 {@code x} to a wrapping sum's low word ({@link #wraps}): in a per-block entry by
   * {@link SharedAtomics#addWrapping64}, elsewhere by one atomic whose result no one waits for.
   * The high word is left as it is (the per-block table's merge still adds into it; no one reads
   * it).
   */
  void addWrappingSum(Accumulators at, String x) {
    if (at.space().equals(".shared")) {
      SharedAtomics.addWrapping64(b, at.value(), x);
      return;
    }
    b.op("red%s.add.u64 [%s], %s", at.space(), at.value(), x);
  }

  /**
   * Adds to function f's sum: its low word alone where the sum {@link #wraps}, else the int128
   * ({@code low}, {@code high}).
   */
  void addSum(int f, Accumulators at, String low, String high) {
    if (wraps(f)) {
      addWrappingSum(at, low);
    } else {
      addSum(at, low, high);
    }
  }

  /**
   * Function f's sum of the row's {@code x} (its input's value) in two parts, as {@link #addSum}
   * of the row: the atomic whose result the sum waits for (a lower half's old value, for its
   * carry) issued here, and what waits in the returned part, for the caller to write after its
   * other functions' atomics and reads. Only for a sum that waits in its state space:
   * GroupAccumulation.waitsForResult.
   */
  Runnable issueSum(int f, Accumulators at, String x) {
    boolean shared = at.space().equals(".shared");
    if (wraps(f)) {
      if (!shared) {
        throw new IllegalStateException("a wrapping sum waits for nothing in " + at.space());
      }
      return SharedAtomics.issueWrapping64(b, at.value(), x);
    }
    String[] wide = int128(inputType(spec, f), x);
    if (shared) {
      return SharedAtomics.issueInt128(b, at.value(), at.high(), wide[0], wide[1]);
    }
    String old = Int128Atomics.addLow(b, at.space(), at.value(), wide[0]);
    return () -> Int128Atomics.carry(b, at.space(), at.high(), old, wide[0], wide[1]);
  }

  /**
   * Adds the int128 ({@code low}, {@code high}) to a sum's accumulators: in a per-block entry by
   * {@link SharedAtomics}, elsewhere by {@link Int128Atomics}.
   */
  void addSum(Accumulators at, String low, String high) {
    if (at.space().equals(".shared")) {
      SharedAtomics.addInt128(b, at.value(), at.high(), low, high);
      return;
    }
    Int128Atomics.add(b, at.space(), at.value(), at.high(), low, high);
  }

  /**
   * hash_aggregate.cuh MarkSeen: the flag set, read first so that a set flag costs no write. For
   * an input that cannot be NULL the flag is set already: in a per-block entry by the lane that
   * claimed it (GroupAccumulation.markSeenAtClaim), in a keyed aggregation's group by the row that
   * inserted it (GroupAccumulation.seenAtFirstRow). Only a global aggregate's group, which
   * no row inserts, has it set here.
   */
  void markSeen(Accumulators at, AggregateValue input) {
    if (at.seen() == null) {
      return; // a count in a compact per-block table (LocalTableLayout): nothing reads its flag
    }
    String skip = null;
    if (input.valid() == null) {
      if (at.space().equals(".shared") || spec.keyCount() > 0) {
        return;
      }
      if (at.inTable() != null) {
        skip = b.label("seen_at_claim");
        b.op("@%s bra %s", at.inTable(), skip);
      }
    }
    String flag = b.b32();
    b.op("ld.volatile%s.u32 %s, [%s]", at.space(), flag, at.seen());
    String unset = b.pred();
    b.op("setp.eq.u32 %s, %s, 0", unset, flag);
    b.op("@%s st%s.u32 [%s], 1", unset, at.space(), at.seen());
    if (skip != null) {
      b.place(skip);
    }
  }

  /**
   * hash_aggregate.cuh AtomicMinMax: for integers one atomic, whose result no one waits for
   * (where the header reads the value first: that read is a round trip to L2 for every row; in a
   * per-block entry the read is cheap and spares the loop, {@link SharedAtomics#minMax}; in
   * GroupAccumulation's rowsInTableOrGlobal the read is issued with the row's other atomics,
   * {@link #readFirstMinMax}); for FLOAT and DOUBLE, only a value that improves on
   * the current one is written, by compare-and-swap in Spark's order.
   */
  void atomicMinMax(Kind kind, TypeId type, Accumulators at, String v) {
    String space = at.space();
    String address = at.value();
    String op = kind == Kind.MIN ? "min" : "max";
    if (!isFloating(type) && space.equals(".shared")) {
      SharedAtomics.minMax(b, op, address, v);
      return;
    }
    String old = b.b64();
    if (!isFloating(type)) {
      b.op("atom%s.%s.s64 %s, [%s], %s", space, op, old, address, v);
      return;
    }
    String done = b.label("minmax_done");
    String current = b.b64();
    b.op("ld.volatile%s.u64 %s, [%s]", space, current, address);
    String retry = b.label("minmax_retry");
    b.place(retry);
    String improves = better(kind, type, v, current);
    b.op("@!%s bra %s", improves, done);
    b.op("atom%s.cas.b64 %s, [%s], %s, %s", space, old, address, current, v);
    String swapped = b.pred();
    b.op("setp.eq.u64 %s, %s, %s", swapped, old, current);
    b.op("mov.b64 %s, %s", current, old);
    b.op("@!%s bra %s", swapped, retry);
    b.place(done);
  }

  /**
   * An integer MIN/MAX into the accumulator at {@code at}, read first: the read is issued here;
   * the returned part, written after the row's other atomics, sends {@code v} to an atomic only
   * where it improves on what was read (in a per-block entry, {@link
   * SharedAtomics#readFirstMinMax}). The accumulator only ever improves, so a value that does not
   * improve on an earlier read cannot improve on the final value either. Most rows of a group with
   * many rows then cost a read instead of an atomic: with 10^4 groups and more, the atomics'
   * read-modify-writes were what kept L2 busy (92% of its throughput at 10^5, ncu). A global
   * read is {@code .relaxed.gpu}, so it is answered by L2 (where the group's inserter set the
   * accumulator before publishing it), not by a stale line in L1.
   */
  Runnable readFirstMinMax(Kind kind, Accumulators at, String v) {
    if (at.space().equals(".shared")) {
      return SharedAtomics.readFirstMinMax(b, kind == Kind.MIN ? "min" : "max", at.value(), v);
    }
    String current = b.b64();
    b.op("ld.relaxed.gpu%s.u64 %s, [%s]", at.space(), current, at.value());
    return () -> {
      String improves = b.pred();
      b.op("setp.%s.s64 %s, %s, %s", kind == Kind.MIN ? "lt" : "gt", improves, v, current);
      b.op("@%s red%s.%s.s64 [%s], %s", improves, at.space(), kind == Kind.MIN ? "min" : "max",
          at.value(), v);
    };
  }

  /** The type of function f's input column. */
  static TypeId inputType(AggregateSpec spec, int f) {
    return spec.inputTypes().get(spec.functions().get(f).input()).id();
  }

  static boolean isFloating(TypeId type) {
    return type == TypeId.FLOAT || type == TypeId.DOUBLE;
  }

  /** Whether {@code x} should replace {@code y} as the MIN (x < y) or MAX (x > y). */
  String better(Kind kind, TypeId type, String x, String y) {
    String p = b.pred();
    String cmp = kind == Kind.MIN ? "lt" : "gt";
    if (isFloating(type)) {
      b.op("setp.%s.u64 %s, %s, %s", cmp, p, orderKey(type, x), orderKey(type, y));
    } else {
      b.op("setp.%s.s64 %s, %s, %s", cmp, p, x, y);
    }
    return p;
  }

  /**
   * An unsigned key of a canonical FLOAT or DOUBLE in Spark's order (program.cuh SparkCompare:
   * NaN largest and equal to every NaN, -0.0 equal to 0.0): the sign bit flipped for positive
   * numbers, every bit for negative ones.
   */
  private String orderKey(TypeId type, String v) {
    boolean dbl = type == TypeId.DOUBLE;
    String w = dbl ? "b64" : "b32";
    String bits = dbl ? b.b64() : b.b32();
    b.op(dbl ? "mov.b64 %s, %s" : "cvt.u32.u64 %s, %s", bits, v);
    String magnitude = dbl ? b.b64() : b.b32();
    b.op("and.%s %s, %s, %s", w, magnitude, bits, dbl ? "0x7fffffffffffffff" : "0x7fffffff");
    String isZero = b.pred();
    b.op("setp.eq.%s %s, %s, 0", dbl ? "u64" : "u32", isZero, magnitude);
    b.op("selp.%s %s, 0, %s, %s", w, bits, bits, isZero);
    String negative = b.pred();
    b.op("setp.lt.%s %s, %s, 0", dbl ? "s64" : "s32", negative, bits);
    String flipped = dbl ? b.b64() : b.b32();
    b.op("not.%s %s, %s", w, flipped, bits);
    String positive = dbl ? b.b64() : b.b32();
    b.op("or.%s %s, %s, %s", w, positive, bits, dbl ? "0x8000000000000000" : "0x80000000");
    String key = dbl ? b.b64() : b.b32();
    b.op("selp.%s %s, %s, %s, %s", w, key, flipped, positive, negative);
    String isNan = b.pred();
    b.op("setp.gt.%s %s, %s, %s", dbl ? "u64" : "u32", isNan, magnitude,
        dbl ? "0x7ff0000000000000" : "0x7f800000");
    b.op("selp.%s %s, -1, %s, %s", w, key, key, isNan);
    if (dbl) {
      return key;
    }
    String wide = b.b64();
    b.op("cvt.u64.u32 %s, %s", wide, key);
    return wide;
  }

  /** hash_aggregate.cuh Identity: MIN's is the largest value of the order, MAX's the smallest. */
  static long identity(Kind kind, TypeId type) {
    boolean min = kind == Kind.MIN;
    return switch (type) {
      case FLOAT -> min ? 0x7fc00000L : (long) (int) 0xff800000;
      case DOUBLE -> min ? 0x7ff8000000000000L : 0xfff0000000000000L;
      default -> min ? Long.MAX_VALUE : Long.MIN_VALUE;
    };
  }

  /**
   * A sum's input as an int128 (low, high): an integer or decimal sign-extended, a DOUBLE that
   * holds a whole number converted exactly (hash_aggregate.cuh WholeDoubleToInt128).
   */
  String[] int128(TypeId type, String v) {
    String low = b.b64();
    String high = b.b64();
    if (type != TypeId.DOUBLE) {
      b.op("mov.b64 %s, %s", low, v);
      b.op("shr.s64 %s, %s, 63", high, v);
      return new String[] {low, high};
    }
    // d = mantissa * 2^shift; shifts of 64 bits or more give 0 (PTX clamps the amount).
    String biased = b.b64();
    b.op("shr.u64 %s, %s, 52", biased, v);
    b.op("and.b64 %s, %s, 2047", biased, biased);
    String mantissa = b.b64();
    b.op("and.b64 %s, %s, 0xfffffffffffff", mantissa, v);
    b.op("or.b64 %s, %s, 0x10000000000000", mantissa, mantissa);
    String shift = b.b32();
    b.op("cvt.u32.u64 %s, %s", shift, biased);
    b.op("sub.s32 %s, %s, 1075", shift, shift);
    String negativeShift = b.pred();
    b.op("setp.lt.s32 %s, %s, 0", negativeShift, shift);
    String right = b.b32();
    b.op("neg.s32 %s, %s", right, shift);
    String lowRight = b.b64();
    b.op("shr.u64 %s, %s, %s", lowRight, mantissa, right);
    String lowLeft = b.b64();
    b.op("shl.b64 %s, %s, %s", lowLeft, mantissa, shift);
    b.op("selp.b64 %s, %s, %s, %s", low, lowRight, lowLeft, negativeShift);
    // high: 0 for shift <= 0; mantissa >> (64 - shift) below 64; mantissa << (shift - 64) above.
    String down = b.b32();
    b.op("sub.s32 %s, 64, %s", down, shift);
    String highSmall = b.b64();
    b.op("shr.u64 %s, %s, %s", highSmall, mantissa, down);
    String up = b.b32();
    b.op("sub.s32 %s, %s, 64", up, shift);
    String highLarge = b.b64();
    b.op("shl.b64 %s, %s, %s", highLarge, mantissa, up);
    String large = b.pred();
    b.op("setp.ge.s32 %s, %s, 64", large, shift);
    b.op("selp.b64 %s, %s, %s, %s", high, highLarge, highSmall, large);
    String small = b.pred();
    b.op("setp.le.s32 %s, %s, 0", small, shift);
    b.op("selp.b64 %s, 0, %s, %s", high, high, small);
    // +-0 and subnormals (|d| < 1) are 0.
    String tiny = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", tiny, biased);
    b.op("selp.b64 %s, 0, %s, %s", low, low, tiny);
    b.op("selp.b64 %s, 0, %s, %s", high, high, tiny);
    // The sign: the int128 negated.
    String negative = b.pred();
    b.op("setp.lt.s64 %s, %s, 0", negative, v);
    String negLow = b.b64();
    String negHigh = b.b64();
    b.op("not.b64 %s, %s", negLow, low);
    b.op("not.b64 %s, %s", negHigh, high);
    b.op("add.cc.u64 %s, %s, 1", negLow, negLow);
    b.op("addc.u64 %s, %s, 0", negHigh, negHigh);
    b.op("selp.b64 %s, %s, %s, %s", low, negLow, low, negative);
    b.op("selp.b64 %s, %s, %s, %s", high, negHigh, high, negative);
    return new String[] {low, high};
  }
}
