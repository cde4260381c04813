package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.codegen.ProgramWords;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The program's words as the generator reads them (ProgramWords) hold the sections the host
 * copies into them (ProgramPlan.words) at the host's own sizes: an InputColumn, a JoinTableView,
 * a constant.
 */
class ProgramWordsLayoutTest {
  @Test
  void eachSectionTakesTheHostsSizeOfItsEntries() {
    ProgramBuilder b = new ProgramBuilder(
        List.of(ColumnType.INT, ColumnType.LONG, ColumnType.STRING), false);
    b.table(new JoinTableSchema(List.of(ColumnType.INT), List.of(ColumnType.INT)));
    b.table(new JoinTableSchema(List.of(ColumnType.LONG), List.of(ColumnType.STRING)));
    int x = b.loadColumn(0);
    int one = b.loadConstant(1);
    b.constant(2);
    Program program = b.build(-1, List.of(new Program.Output(x, ColumnType.INT),
        new Program.Output(one, ColumnType.INT)));
    ProgramWords words = ProgramWords.of(program, 3);
    assertEquals(ProgramPlan.INPUT_COLUMN_BYTES, words.inputAt(1) - words.inputAt(0));
    assertEquals(3 * ProgramPlan.INPUT_COLUMN_BYTES, words.tableAt(0));
    assertEquals(CudaJoinTable.TABLE_VIEW_BYTES, words.tableAt(1) - words.tableAt(0));
    assertEquals(words.tableAt(2), words.constantAt(0));
    assertEquals(Long.BYTES, words.constantAt(1) - words.constantAt(0));
    assertEquals(words.constantAt(2), words.bytes());
  }
}
