package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which generated kernels read their program's words as a parameter, and where the words lie.
 * Whether a kernel reading them gets the right answers is the CUDA suites' job.
 */
class ProgramWordsTest {
  private static final InputSpec PLAIN_LONG = new InputSpec(ColumnType.LONG, Encoding.PLAIN, true);
  private static final InputSpec FOR_INT = new InputSpec(ColumnType.INT, Encoding.FOR, false);
  private static final InputSpec DFOR_INT = new InputSpec(ColumnType.INT, Encoding.DFOR, false);

  /** Both columns and a constant out, with {@code unused} more constants in its array. */
  private static Program program(int unused) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT), false);
    int x = b.loadColumn(0);
    int y = b.loadColumn(1);
    int seven = b.loadConstant(7);
    for (int i = 0; i < unused; i++) {
      b.constant(i);
    }
    return b.build(-1, List.of(new Program.Output(x, ColumnType.LONG),
        new Program.Output(y, ColumnType.INT), new Program.Output(seven, ColumnType.INT)));
  }

  @Test
  void theDescriptorsThenTheTablesThenTheConstants() {
    ProgramWords words = ProgramWords.of(program(2), 2);
    assertEquals(0, words.inputAt(0));
    assertEquals(48, words.inputAt(1));
    assertEquals(96, words.tableAt(0), "no tables: the constants follow the descriptors");
    assertEquals(96, words.constantAt(0));
    assertEquals(96 + 3 * 8, words.bytes());
  }

  @Test
  void aKernelReadsItsDescriptorsAndConstantsAsAParameterWhereTheyFit() throws Exception {
    List<InputSpec> inputs = List.of(PLAIN_LONG, FOR_INT);
    String ptx = FilterProjectGenerator.generate(program(0), inputs).ptx();
    assertTrue(ptx.contains("_program_words[104]"), ptx);
    assertTrue(ptx.contains("_program_words+96]"), "the constant, at its place: " + ptx);
    assertFalse(ptx.contains("_inputs]"), "the descriptors' array in memory is not read: " + ptx);
    assertNotNull(FilterProjectGenerator.programWords(program(0), inputs));
  }

  @Test
  void wordsThatDoNotFitTheParameterSpaceAreReadFromMemory() throws Exception {
    List<InputSpec> inputs = List.of(PLAIN_LONG, FOR_INT);
    // 4,096 bytes less the 15 parameters' 120, less the descriptors' 96: 485 constants fit.
    assertNotNull(FilterProjectGenerator.programWords(program(484), inputs));
    assertNull(FilterProjectGenerator.programWords(program(485), inputs));
    String ptx = FilterProjectGenerator.generate(program(485), inputs).ptx();
    assertFalse(ptx.contains("_program_words"), ptx);
    assertTrue(ptx.contains("_inputs]"), ptx);
    assertTrue(FilterProjectGenerator.key(program(484), inputs).contains(";w"));
    assertFalse(FilterProjectGenerator.key(program(485), inputs).contains(";w"));
  }

  @Test
  void kernelsDecodingGpuDforTilesReadTheirWordsFromMemory() throws Exception {
    List<InputSpec> inputs = List.of(PLAIN_LONG, DFOR_INT);
    assertNull(FilterProjectGenerator.programWords(program(0), inputs));
    assertFalse(FilterProjectGenerator.generate(program(0), inputs).ptx()
        .contains("_program_words"));
  }
}
