package dev.tessera.gpu.codegen;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The text of one PTX function body under construction: virtual registers by kind (PTX has an
 * unlimited supply; ptxas allocates the machine's), labels, and instructions one per line. The
 * register declarations are written when the body is finished, so instructions can ask for
 * registers as they go.
 */
final class PtxBuilder {
  /** PTX register kinds: the declaration type and the name prefix. */
  enum Kind {
    B64(".b64", "%rd"),
    B32(".b32", "%r"),
    PRED(".pred", "%p"),
    F32(".f32", "%f"),
    F64(".f64", "%fd");

    final String type;
    final String prefix;

    Kind(String type, String prefix) {
      this.type = type;
      this.prefix = prefix;
    }
  }

  private final StringBuilder body = new StringBuilder();
  private final StringBuilder declarations = new StringBuilder();
  private final java.util.Set<String> declared = new java.util.HashSet<>();
  private final Map<Kind, Integer> used = new LinkedHashMap<>();
  /** The .b32 register each {@link #signExtend}ed .b64 register was extended from. */
  private final Map<String, String> narrowOf = new java.util.HashMap<>();
  /** The .pred each {@link #booleanOf} .b64 register was selected by. */
  private final Map<String, String> truthOf = new java.util.HashMap<>();
  private int labels;

  String b64() {
    return register(Kind.B64);
  }

  String b32() {
    return register(Kind.B32);
  }

  String pred() {
    return register(Kind.PRED);
  }

  String f32() {
    return register(Kind.F32);
  }

  String f64() {
    return register(Kind.F64);
  }

  private String register(Kind kind) {
    int n = used.merge(kind, 1, Integer::sum);
    return kind.prefix + n;
  }

  /** The registers made so far, by kind; {@link #madeSince} tells a later one. */
  Map<Kind, Integer> registersMade() {
    return new LinkedHashMap<>(used);
  }

  /**
   * Whether {@code name} is a register made after {@code made} ({@link #registersMade}); false
   * for anything else (an immediate, a register made before).
   */
  boolean madeSince(Map<Kind, Integer> made, String name) {
    Kind kind = null;
    for (Kind k : Kind.values()) {
      if (name.startsWith(k.prefix) && name.length() > k.prefix.length()
          && Character.isDigit(name.charAt(k.prefix.length()))) {
        kind = k;
      }
    }
    if (kind == null) {
      return false;
    }
    return Integer.parseInt(name.substring(kind.prefix.length())) > made.getOrDefault(kind, 0);
  }

  /** Writes a value (0, or false) to {@code register}, of its kind. */
  void clear(String register) {
    if (register.startsWith(Kind.PRED.prefix)) {
      op("setp.ne.u32 %s, 0, 0", register);
    } else if (register.startsWith(Kind.B64.prefix)) {
      op("mov.b64 %s, 0", register);
    } else if (register.startsWith(Kind.B32.prefix)) {
      op("mov.b32 %s, 0", register);
    } else {
      throw new IllegalArgumentException("not a .pred, .b64 or .b32 register: " + register);
    }
  }

  /** A fresh .f32 register holding the FLOAT whose bits the .b64 {@code bits} holds (low word). */
  String floatOf(String bits) {
    String low = b32();
    op("cvt.u32.u64 %s, %s", low, bits);
    String f = f32();
    op("mov.b32 %s, %s", f, low);
    return f;
  }

  /** A fresh .f64 register holding the DOUBLE whose bits {@code bits} (.b64) holds. */
  String doubleOf(String bits) {
    String f = f64();
    op("mov.b64 %s, %s", f, bits);
    return f;
  }

  /** {@link #floatOf} ({@code f32}) or {@link #doubleOf} of {@code bits}. */
  String floatingOf(String bits, boolean f32) {
    return f32 ? floatOf(bits) : doubleOf(bits);
  }

  /** A fresh .b64 register: the .f32 {@code f}'s bits, zero-extended (program.cuh F32Bits). */
  String bitsOfFloat(String f) {
    String low = b32();
    op("mov.b32 %s, %s", low, f);
    String r = b64();
    op("cvt.u64.u32 %s, %s", r, low);
    return r;
  }

  /** A fresh .b64 register holding the bits of the .f64 {@code d}. */
  String bitsOfDouble(String d) {
    String r = b64();
    op("mov.b64 %s, %s", r, d);
    return r;
  }

  /**
   * A fresh .b64 register holding {@code b32} sign-extended, remembered as its {@link #narrow}
   * form: an operation on sign-extended 32-bit values can then run in 32-bit arithmetic (one
   * machine instruction where a 64-bit compare or multiply takes two or more). The register is
   * never written again, so the two stay the same value.
   */
  String signExtend(String b32) {
    String wide = b64();
    op("cvt.s64.s32 %s, %s", wide, b32);
    narrowOf.put(wide, b32);
    return wide;
  }

  /**
   * The .b32 register that {@code value} was {@link #signExtend}ed from, or null where it may be
   * any 64-bit value.
   */
  String narrow(String value) {
    return narrowOf.get(value);
  }

  /**
   * A fresh .b64 register holding 1 where {@code pred} holds and 0 elsewhere (a BOOLEAN value),
   * remembered as its {@link #truth}: a later test of the value (a filter, AND, OR, NOT, SELECT)
   * can then read the predicate instead of comparing 64 bits with 0. {@code pred} must not be
   * written again.
   */
  String booleanOf(String pred) {
    String r = b64();
    op("selp.b64 %s, 1, 0, %s", r, pred);
    truthOf.put(r, pred);
    return r;
  }

  /**
   * The .pred that holds exactly where {@code value} is non-zero, where {@code value} is a
   * {@link #booleanOf} register; null for any other value.
   */
  String truth(String value) {
    return truthOf.get(value);
  }

  /** A fresh label name. */
  String label(String what) {
    return "$L_" + what + "_" + (++labels);
  }

  /** One instruction; the trailing semicolon is added. */
  void op(String format, Object... args) {
    body.append('\t').append(String.format(Locale.ROOT, format, args)).append(";\n");
  }

  /** Places {@code label} here. */
  void place(String label) {
    body.append(label).append(":\n");
  }

  /** A comment line, to make the kernel readable for {@code bin/tessera sql --ptx}. */
  void comment(String text) {
    body.append("\t// ").append(text).append('\n');
  }

  /** Raw lines (a call sequence's braces and .param declarations). */
  void raw(String line) {
    body.append('\t').append(line).append('\n');
  }

  /**
   * A declaration at the top of the body (a .shared variable of the kernel); declaring the same
   * one again (a primitive used twice) keeps the first.
   */
  void declare(String declaration) {
    if (declared.add(declaration)) {
      declarations.append('\t').append(declaration).append(";\n");
    }
  }

  /** The declarations of every register used, then the instructions. */
  String finish() {
    StringBuilder out = new StringBuilder();
    for (Map.Entry<Kind, Integer> e : used.entrySet()) {
      out.append('\t').append(".reg ").append(e.getKey().type).append(' ')
          .append(e.getKey().prefix).append('<').append(e.getValue() + 1).append(">;\n");
    }
    return out.append(declarations).append(body).toString();
  }
}
