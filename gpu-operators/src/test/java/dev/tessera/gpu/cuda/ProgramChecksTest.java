package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the CUDA backend refuses to run, and what it accepts (no GPU needed). */
class ProgramChecksTest {
  private static final List<ColumnType> INPUTS = List.of(ColumnType.LONG, ColumnType.STRING);

  private static void refused(Program program, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ProgramChecks.check(program));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }

  private static Program raw(int[] code, int registers, int filter, List<Program.Output> outputs) {
    return new Program(code, new long[] {1, 2}, "abc".getBytes(StandardCharsets.UTF_8),
        registers, INPUTS, filter, outputs, false);
  }

  @Test
  void acceptsAWellFormedProgram() {
    ProgramBuilder b = new ProgramBuilder(INPUTS, true);
    int x = b.loadColumn(0);
    int s = b.loadColumn(1);
    int prefix = b.loadString("ab".getBytes(StandardCharsets.UTF_8));
    int starts = b.emitNew(Opcode.STARTS_WITH, s, prefix, 0);
    int none = b.loadNull();
    int either = b.emitNew(Opcode.SELECT, starts, s, none); // STRING joined with NULL
    int sum = b.emitNew(Opcode.ADD_INT, x, x, 64);
    b.emit(Opcode.MUL_INT, sum, sum, x, 64); // dst == a
    ProgramChecks.check(b.build(starts, List.of(new Program.Output(either, ColumnType.STRING),
        new Program.Output(sum, ColumnType.LONG))));
  }

  @Test
  void refusesReadingARegisterBeforeItIsWritten() {
    ProgramBuilder b = new ProgramBuilder(INPUTS, false);
    int x = b.loadColumn(0);
    int unwritten = b.register();
    int sum = b.emitNew(Opcode.ADD_INT, x, unwritten, 64);
    refused(b.build(-1, List.of(new Program.Output(sum, ColumnType.LONG))),
        "reads register r1 before any instruction writes it");
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0}, 2, 1, List.of()),
        "the filter is register r1, which no instruction writes");
  }

  @Test
  void refusesRegistersAndOpcodesOutOfRange() {
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 5, 0, 0, 0}, 2, -1, List.of()),
        "outside the program's 2 registers");
    refused(raw(new int[] {99, 0, 0, 0, 0}, 1, -1, List.of()), "no opcode 99");
  }

  @Test
  void refusesImmediatesOutsideTheirRanges() {
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 2, 0, 0}, 1, -1, List.of()),
        "reads input column 2 of 2");
    refused(raw(new int[] {Opcode.LOAD_CONST.code(), 0, 2, 0, 0}, 1, -1, List.of()),
        "reads constants [2, 2 + 1) of 2");
    refused(raw(new int[] {Opcode.LOAD_STRING_CONST.code(), 0, 1, 3, 0}, 1, -1, List.of()),
        "string pool of 3");
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0,
        Opcode.ADD_INT.code(), 1, 0, 0, 7}, 2, -1, List.of()), "has width 7");
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0,
        Opcode.CMP_INT.code(), 1, 0, 0, 5}, 2, -1, List.of()), "comparison code 5");
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0,
        Opcode.CAST_DECIMAL_TO_INT.code(), 1, 0, 19, 64}, 2, -1, List.of()), "decimal scale 19");
    refused(raw(new int[] {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0,
        Opcode.IN_SET_INT.code(), 1, 0, 1, 2}, 2, -1, List.of()), "reads constants [1, 1 + 2)");
  }

  @Test
  void refusesMixingStringsAndNumbers() {
    int[] loads = {Opcode.LOAD_COLUMN.code(), 0, 0, 0, 0, Opcode.LOAD_COLUMN.code(), 1, 1, 0, 0};
    refused(raw(concat(loads, new int[] {Opcode.LENGTH.code(), 2, 0, 0, 0}), 3, -1, List.of()),
        "reads register r0 as a string");
    refused(raw(concat(loads, new int[] {Opcode.ADD_INT.code(), 2, 1, 0, 64}), 3, -1, List.of()),
        "reads register r1 as a number");
    refused(raw(concat(loads, new int[] {Opcode.COALESCE.code(), 2, 0, 1, 0,
        Opcode.IS_NULL.code(), 0, 2, 0, 0}), 3, -1,
        List.of(new Program.Output(2, ColumnType.STRING))), "string or a number");
    refused(raw(loads, 2, -1, List.of(new Program.Output(1, ColumnType.LONG))),
        "output 0 (long) is register r1, which may hold a string");
    refused(raw(loads, 2, -1, List.of(new Program.Output(0, ColumnType.STRING))),
        "output 0 (string) is register r0, which may hold a number");
    refused(raw(loads, 2, 1, List.of()), "the filter is register r1, which may hold a string");
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
