package dev.tessera.gpu.expr;

import dev.tessera.gpu.column.ColumnType;
import java.io.Serializable;
import java.util.Arrays;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;

/**
 * A compiled filter-and-project program over one batch (DESIGN.md §3): instructions
 * ({@link Opcode}) evaluated for every row, the same instructions for every row of a tile, so a
 * warp's control flow stays uniform. Optionally a filter register (rows where it is not true are
 * dropped, input order kept) and the output registers with their column types.
 *
 * @param code five int32 words per instruction: op, dst, a, b, c
 * @param constants INT, F32 or F64 bit patterns that LOAD_CONST and IN_SET_INT read
 * @param strings the string pool that LOAD_STRING_CONST slices
 * @param registerCount registers used (at most {@link #MAX_REGISTERS})
 * @param inputTypes the types of the input batch's columns
 * @param filterRegister the register holding the filter's boolean, or -1 for no filter
 * @param outputs the projected columns: their registers and types
 * @param ansi Spark's ANSI mode: overflow and division by zero raise errors instead of wrapping or
 *     yielding NULL
 * @param tables the join tables PROBE and LOAD_BUILD read, by index (the tables themselves are
 *     given when the program runs, and must have these shapes)
 */
public record Program(
    int[] code,
    long[] constants,
    byte[] strings,
    int registerCount,
    List<ColumnType> inputTypes,
    int filterRegister,
    List<Output> outputs,
    boolean ansi,
    List<JoinTableSchema> tables) implements Serializable {

  /** Registers one program may use (the CUDA interpreter keeps them per thread). */
  public static final int MAX_REGISTERS = 64;
  /** Words per instruction. */
  public static final int WORDS = 5;

  /** One projected column. */
  public record Output(int register, ColumnType type) implements Serializable {}

  public Program {
    if (code.length % WORDS != 0) {
      throw new IllegalArgumentException("code is not whole instructions");
    }
    if (registerCount > MAX_REGISTERS) {
      throw new IllegalArgumentException("a program may use at most " + MAX_REGISTERS
          + " registers, this one needs " + registerCount);
    }
    inputTypes = List.copyOf(inputTypes);
    outputs = List.copyOf(outputs);
    tables = List.copyOf(tables);
  }

  /** A program that probes no join table. */
  public Program(int[] code, long[] constants, byte[] strings, int registerCount,
      List<ColumnType> inputTypes, int filterRegister, List<Output> outputs, boolean ansi) {
    this(code, constants, strings, registerCount, inputTypes, filterRegister, outputs, ansi,
        List.of());
  }

  /** Programs are values: equal when their instructions, constants and layout are. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Program p && Arrays.equals(code, p.code)
        && Arrays.equals(constants, p.constants) && Arrays.equals(strings, p.strings)
        && registerCount == p.registerCount && inputTypes.equals(p.inputTypes)
        && filterRegister == p.filterRegister && outputs.equals(p.outputs) && ansi == p.ansi
        && tables.equals(p.tables);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(code) * 31 + Long.hashCode(constants.length) * 17 + outputs.hashCode();
  }

  public int instructionCount() {
    return code.length / WORDS;
  }

  public boolean hasFilter() {
    return filterRegister >= 0;
  }

  /** A readable listing, one instruction a line, for logs and test failures. */
  public String disassemble() {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < code.length; i += WORDS) {
      out.append(String.format("%3d  %-20s r%d  %d %d %d%n", i / WORDS,
          Opcode.ofCode(code[i]), code[i + 1], code[i + 2], code[i + 3], code[i + 4]));
    }
    out.append("filter: ").append(hasFilter() ? "r" + filterRegister : "none");
    for (Output o : outputs) {
      out.append(", out r").append(o.register()).append(' ').append(o.type());
    }
    return out.append(ansi ? ", ANSI" : "").toString();
  }
}
