package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which generated filter-project kernels take wide tiles: CudaFilterProject launches one block
 * per tile of {@link FilterProjectGenerator#tileItems}, so this rule and the kernel must agree
 * (the CUDA suites check the rows; this checks the rule).
 */
class FilterProjectTileShapeTest {
  private static final int INTERPRETER_TILE = LaunchShape.TILE_ITEMS;
  private static final List<InputSpec> PLAIN = List.of(
      new InputSpec(ColumnType.LONG, Encoding.PLAIN, false),
      new InputSpec(ColumnType.INT, Encoding.PLAIN, true));

  @Test
  void aShortProgramOfPlainOrForColumnsTakesTilesOfEightItems() {
    assertEquals(2 * INTERPRETER_TILE, FilterProjectGenerator.tileItems(shortFilter(), PLAIN));
    List<InputSpec> encoded = List.of(new InputSpec(ColumnType.LONG, Encoding.FOR, false),
        new InputSpec(ColumnType.INT, Encoding.FOR, true));
    assertEquals(2 * INTERPRETER_TILE, FilterProjectGenerator.tileItems(shortFilter(), encoded));
  }

  @Test
  void aGpuDforColumnKeepsTheInterpretersTile() {
    // One tile is one GPU-DFOR set.
    List<InputSpec> dfor = List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, false),
        new InputSpec(ColumnType.INT, Encoding.DFOR, false));
    assertEquals(INTERPRETER_TILE, FilterProjectGenerator.tileItems(shortFilter(), dfor));
  }

  @Test
  void aLongProgramKeepsTheInterpretersTile() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT), false);
    int sum = b.loadColumn(0);
    for (int i = 0; i < 30; i++) {
      sum = b.emitNew(Opcode.ADD_INT, sum, b.loadColumn(1), 64);
    }
    Program program = b.build(-1, List.of(new Program.Output(sum, ColumnType.LONG)));
    assertTrue(program.instructionCount() > 24);
    assertEquals(INTERPRETER_TILE, FilterProjectGenerator.tileItems(program, PLAIN));
  }

  @Test
  void aProgramThatProbesKeepsTheInterpretersTile() {
    List<ColumnType> types = List.of(ColumnType.INT, ColumnType.LONG);
    int probing = 0;
    for (long seed = 0; seed < 50; seed++) {
      Program program = RandomPrograms.generateProbing(types, false, seed).program();
      if (!program.tables().isEmpty()) {
        probing++;
        List<InputSpec> inputs = List.of(new InputSpec(ColumnType.INT, Encoding.PLAIN, false),
            new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
        assertEquals(INTERPRETER_TILE, FilterProjectGenerator.tileItems(program, inputs));
      }
    }
    assertTrue(probing > 0, "no program of the 50 probed a table");
  }

  /** FilterProjectBench's shape: x * 3 + y WHERE y % 10 < 5. */
  private static Program shortFilter() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT), false);
    int x = b.loadColumn(0);
    int y = b.loadColumn(1);
    int sum = b.emitNew(Opcode.ADD_INT, b.emitNew(Opcode.MUL_INT, x, b.loadConstant(3), 64), y,
        64);
    int keep = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.REM_INT, y, b.loadConstant(10), 32),
        b.loadConstant(5), Comparison.LT.code());
    return b.build(keep, List.of(new Program.Output(sum, ColumnType.LONG)));
  }
}
