package dev.tessera.gpu.codegen;

import java.util.List;

/**
 * A call from a generated kernel to a function of the prelude (native-kernels/prelude/prelude.cu):
 * the PTX call sequence, with each argument and the result in its own {@code .param} variable, as
 * the PTX calling convention wants. The types here must match nvcc's declarations of the prelude
 * functions (pointers and 64-bit integers .b64, ints .b32); PreludeTest compiles every call the
 * generator makes against the real prelude.
 */
final class PreludeCall {
  private PreludeCall() {}

  /** One argument: its PTX type (b32 or b64) and a register or immediate. */
  record Arg(String type, String value) {}

  /** One field of a struct result: byte offset, PTX type and the register it is loaded into. */
  record Field(int offset, String type, String register) {}

  static Arg b64(String value) {
    return new Arg("b64", value);
  }

  static Arg b32(String value) {
    return new Arg("b32", value);
  }

  /** Calls {@code function}, whose result is one scalar of {@code result}'s kind. */
  static void call(PtxBuilder b, String function, List<String> result, List<Arg> args) {
    String register = result.get(0);
    String type = register.startsWith("%rd") ? "b64" : "b32";
    sequence(b, function, ".param ." + type + " retval0;",
        List.of(new Field(0, type, register)), args);
  }

  /** Calls {@code function}, which returns nothing. */
  static void callVoid(PtxBuilder b, String function, List<Arg> args) {
    sequence(b, function, null, List.of(), args);
  }

  private static void sequence(PtxBuilder b, String function, String resultDeclaration,
      List<Field> fields, List<Arg> args) {
    b.raw("{");
    StringBuilder names = new StringBuilder();
    for (int i = 0; i < args.size(); i++) {
      Arg arg = args.get(i);
      b.raw(".param ." + arg.type() + " param" + i + ";");
      b.op("st.param.%s [param%d], %s", arg.type(), i, arg.value());
      names.append(i == 0 ? "" : ", ").append("param").append(i);
    }
    if (resultDeclaration == null) {
      b.op("call.uni %s, (%s)", function, names);
    } else {
      b.raw(resultDeclaration);
      b.op("call.uni (retval0), %s, (%s)", function, names);
    }
    for (Field f : fields) {
      b.op("ld.param.%s %s, [retval0+%d]", f.type(), f.register(), f.offset());
    }
    b.raw("}");
  }
}
