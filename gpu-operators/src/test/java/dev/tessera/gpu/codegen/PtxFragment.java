package dev.tessera.gpu.codegen;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a fragment of generated PTX on the CPU: the integer, predicate and conversion instructions
 * of a routine that touches no memory ({@link FloatRemainder}'s, say), with PTX's meaning, so a
 * test can check the text the generator writes against Java on millions of values without a GPU.
 * Registers hold raw bits (a .f32 its float's bits, a .f64 its double's); an instruction it does
 * not know fails the test rather than being skipped.
 */
final class PtxFragment {
  private record Instruction(String guard, boolean negated, String[] opcode, String[] operands) {}

  private final List<Instruction> instructions = new ArrayList<>();
  private final Map<String, Integer> labels = new HashMap<>();

  /** The body a {@link PtxBuilder} finished (its .reg declarations are skipped). */
  PtxFragment(String body) {
    for (String raw : body.split("\n")) {
      String line = raw.trim();
      if (line.isEmpty() || line.startsWith("//") || line.startsWith(".reg")) {
        continue;
      }
      if (line.endsWith(":")) {
        labels.put(line.substring(0, line.length() - 1), instructions.size());
        continue;
      }
      if (!line.endsWith(";")) {
        throw new IllegalArgumentException("not an instruction: " + line);
      }
      line = line.substring(0, line.length() - 1);
      String guard = null;
      boolean negated = false;
      if (line.startsWith("@")) {
        int space = line.indexOf(' ');
        guard = line.substring(1, space);
        negated = guard.startsWith("!");
        guard = negated ? guard.substring(1) : guard;
        line = line.substring(space + 1).trim();
      }
      int space = line.indexOf(' ');
      String[] opcode = line.substring(0, space).split("\\.");
      String[] operands = line.substring(space + 1).split(",\\s*");
      instructions.add(new Instruction(guard, negated, opcode, operands));
    }
  }

  /**
   * Runs the fragment from its first instruction to its end with {@code inputs} in their
   * registers, and returns {@code output}'s bits; fails past {@code maxSteps} instructions.
   */
  long run(Map<String, Long> inputs, String output, int maxSteps) {
    Map<String, Long> registers = new HashMap<>(inputs);
    int pc = 0;
    for (int steps = 0; pc < instructions.size(); steps++) {
      if (steps > maxSteps) {
        throw new AssertionError("more than " + maxSteps + " steps");
      }
      Instruction in = instructions.get(pc++);
      if (in.guard != null && (read(registers, in.guard) != 0) == in.negated) {
        continue;
      }
      String name = in.opcode[0];
      if (name.equals("bra")) {
        Integer target = labels.get(in.operands[0]);
        if (target == null) {
          throw new AssertionError("no label " + in.operands[0]);
        }
        pc = target;
        continue;
      }
      registers.put(in.operands[0], execute(in, registers));
    }
    Long value = registers.get(output);
    if (value == null) {
      throw new AssertionError(output + " was never written");
    }
    return value;
  }

  private static long execute(Instruction in, Map<String, Long> registers) {
    String[] op = in.opcode;
    String type = op[op.length - 1];
    long a = in.operands.length > 1 ? read(registers, in.operands[1]) : 0;
    long b = in.operands.length > 2 ? read(registers, in.operands[2]) : 0;
    return switch (op[0]) {
      case "mov" -> type.equals("b32") ? a & 0xffffffffL : a;
      case "and" -> a & b;
      case "or" -> a | b;
      case "xor" -> a ^ b;
      case "not" -> a == 0 ? 1 : 0;
      case "shl" -> b >= 64 ? 0 : a << b;
      case "shr" -> type.equals("u64") ? (b >= 64 ? 0 : a >>> b) : unknown(in);
      case "add" -> switch (type) {
        case "s64" -> a + b;
        case "s32" -> (a + b) & 0xffffffffL;
        case "f32" -> Float.floatToRawIntBits(f32(a) + f32(b)) & 0xffffffffL;
        case "f64" -> Double.doubleToRawLongBits(f64(a) + f64(b));
        default -> unknown(in);
      };
      case "sub" -> switch (type) {
        case "s64" -> a - b;
        case "s32" -> (a - b) & 0xffffffffL;
        default -> unknown(in);
      };
      case "neg" -> type.equals("s32") ? -a & 0xffffffffL : unknown(in);
      case "max" -> type.equals("s32") ? Math.max((int) a, (int) b) & 0xffffffffL : unknown(in);
      case "clz" -> type.equals("b64") ? Long.numberOfLeadingZeros(a) : unknown(in);
      case "selp" -> {
        long p = read(registers, in.operands[3]);
        long v = p != 0 ? a : b;
        yield type.equals("b32") ? v & 0xffffffffL : v;
      }
      case "cvt" -> convert(in, a);
      case "setp" -> compare(in, op[1], type, a, b) ? 1 : 0;
      default -> unknown(in);
    };
  }

  private static long convert(Instruction in, long a) {
    String to = in.opcode[in.opcode.length - 2];
    String from = in.opcode[in.opcode.length - 1];
    return switch (to + "." + from) {
      case "u32.u64", "u64.u32" -> a & 0xffffffffL;
      case "f64.f32" -> Double.doubleToRawLongBits(f32(a));
      case "f32.f64" -> in.opcode[1].equals("rn")
          ? Float.floatToRawIntBits((float) f64(a)) & 0xffffffffL : unknown(in);
      default -> unknown(in);
    };
  }

  private static boolean compare(Instruction in, String how, String type, long a, long b) {
    if (type.equals("f64") || type.equals("f32")) {
      double x = type.equals("f64") ? f64(a) : f32(a);
      double y = type.equals("f64") ? f64(b) : f32(b);
      return switch (how) {
        case "eq" -> x == y;
        case "lt" -> x < y;
        case "gt" -> x > y;
        case "nan" -> Double.isNaN(x) || Double.isNaN(y);
        default -> unknown(in) != 0;
      };
    }
    int order = switch (type) {
      case "u64" -> Long.compareUnsigned(a, b);
      case "s64" -> Long.compare(a, b);
      case "u32" -> Integer.compareUnsigned((int) a, (int) b);
      case "s32" -> Integer.compare((int) a, (int) b);
      default -> (int) unknown(in);
    };
    return switch (how) {
      case "eq" -> order == 0;
      case "ne" -> order != 0;
      case "lt" -> order < 0;
      case "le" -> order <= 0;
      case "gt" -> order > 0;
      case "ge" -> order >= 0;
      default -> unknown(in) != 0;
    };
  }

  /** A register's bits, or an immediate: decimal, 0d (double bits) or 0f (float bits). */
  private static long read(Map<String, Long> registers, String operand) {
    if (operand.startsWith("%")) {
      Long value = registers.get(operand);
      if (value == null) {
        throw new AssertionError(operand + " read before it was written");
      }
      return value;
    }
    if (operand.startsWith("0d")) {
      return Long.parseUnsignedLong(operand.substring(2), 16);
    }
    if (operand.startsWith("0f")) {
      return Long.parseLong(operand.substring(2), 16);
    }
    return Long.parseLong(operand);
  }

  private static float f32(long bits) {
    return Float.intBitsToFloat((int) bits);
  }

  private static double f64(long bits) {
    return Double.longBitsToDouble(bits);
  }

  private static long unknown(Instruction in) {
    throw new AssertionError("PtxFragment does not run " + String.join(".", in.opcode));
  }
}
