package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** What ProgramChecks refuses in PROBE and LOAD_BUILD, and the tables a run is given (no GPU). */
class ProgramChecksJoinTest {
  private static final JoinTableSchema DIM = new JoinTableSchema(
      List.of(ColumnType.INT, ColumnType.STRING), List.of(ColumnType.STRING, ColumnType.LONG));

  private static void refused(Executable check, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, check);
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }

  /** A probe of DIM by (long column, string column), loading payload {@code payload}. */
  private static Program probe(int keyCount, int payload, boolean stringFirst) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.STRING), false);
    int t = b.table(DIM);
    int x = b.loadColumn(0);
    int s = b.loadColumn(1);
    int first = b.constant(stringFirst ? s : x);
    b.constant(stringFirst ? x : s);
    int row = b.emitNew(Opcode.PROBE, t, first, keyCount);
    int value = b.emitNew(Opcode.LOAD_BUILD, t, row, payload);
    ColumnType type = payload == 0 ? ColumnType.STRING : ColumnType.LONG;
    return b.build(-1, List.of(new Program.Output(value, type)));
  }

  @Test
  void acceptsAProbeAndItsPayloads() {
    ProgramChecks.check(probe(2, 0, false));
    ProgramChecks.check(probe(2, 1, false));
  }

  @Test
  void refusesProbeOperandsThatDoNotFitTheTable() {
    refused(() -> ProgramChecks.check(probe(1, 0, false)), "gives 1 key registers");
    refused(() -> ProgramChecks.check(probe(2, 0, true)), "as a number, but it may hold a string");
    refused(() -> ProgramChecks.check(probe(2, 2, false)), "payload column 2");
    refused(() -> ProgramChecks.check(raw(new int[] {
        Opcode.LOAD_CONST.code(), 0, 0, 0, 0,
        Opcode.PROBE.code(), 1, 1, 0, 2}, 2, new long[] {0, 0})), "reads join table 1");
    refused(() -> ProgramChecks.check(raw(new int[] {
        Opcode.LOAD_CONST.code(), 0, 0, 0, 0,
        Opcode.PROBE.code(), 1, 0, 1, 2}, 2, new long[] {0, 0})), "reads constants [1, 1 + 2)");
    refused(() -> ProgramChecks.check(raw(new int[] {
        Opcode.LOAD_CONST.code(), 0, 0, 0, 0,
        Opcode.PROBE.code(), 1, 0, 0, 2}, 2, new long[] {0, 7})), "names key register 7");
  }

  @Test
  void refusesLoadBuildOfARowNoProbeOfThatTableWrote() {
    refused(() -> ProgramChecks.check(raw(new int[] {
        Opcode.LOAD_CONST.code(), 0, 0, 0, 0,
        Opcode.LOAD_BUILD.code(), 1, 0, 0, 1}, 2, new long[] {3})), "which no PROBE of join");
  }

  @Test
  void refusesFloatKeys() {
    JoinTableSchema floats = new JoinTableSchema(List.of(ColumnType.DOUBLE), List.of());
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.DOUBLE), false);
    int t = b.table(floats);
    int x = b.loadColumn(0);
    int row = b.emitNew(Opcode.PROBE, t, b.constant(x), 1);
    refused(() -> ProgramChecks.check(b.build(-1,
        List.of(new Program.Output(row, ColumnType.INT)))), "join keys are integral");
  }

  @Test
  void checksTheTablesARunIsGiven() {
    Program program = probe(2, 1, false);
    refused(() -> ProgramChecks.checkTables(program, List.of()), "probes 1 join tables, 0");
    JoinTableSchema other = new JoinTableSchema(List.of(ColumnType.LONG), List.of());
    try (CudaJoinTable wrong = emptyTable(other)) {
      refused(() -> ProgramChecks.checkTables(program, List.of(wrong)), "join table 0 is");
    }
    JoinTable foreign = new JoinTable() {
      @Override public JoinTableSchema schema() {
        return DIM;
      }
      @Override public long buildRows() {
        return 0;
      }
      @Override public boolean uniqueKeys() {
        return true;
      }
      @Override public long deviceBytes() {
        return 0;
      }
      @Override public void close() {}
    };
    refused(() -> ProgramChecks.checkTables(program, List.of(foreign)), "only join tables it built");
    try (CudaJoinTable right = emptyTable(DIM)) {
      ProgramChecks.checkTables(program, List.of(right));
    }
  }

  /** A table object without device memory: enough for the host-side checks. */
  private static CudaJoinTable emptyTable(JoinTableSchema schema) {
    return new CudaJoinTable(schema, 0, true, 0, 0, new byte[CudaJoinTable.TABLE_VIEW_BYTES], 0,
        List.of());
  }

  private static Program raw(int[] code, int registers, long[] constants) {
    return new Program(code, constants, new byte[0], registers, List.of(ColumnType.LONG), -1,
        List.of(), false, List.of(DIM));
  }
}
