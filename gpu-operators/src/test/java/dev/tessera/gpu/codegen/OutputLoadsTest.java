package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.bench.FilterProjectBench;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How phase B of a generated filter-project kernel issues its items' column loads: a group's
 * behind one branch where they read GPU-FOR columns that are output as they are, so that the
 * items' dependent loads wait together; each item's behind a branch of its own otherwise.
 */
class OutputLoadsTest {

  @Test
  void gpuForOutputLoadsSitBehindOneBranchAGroup() throws Exception {
    String ptx = kernel(Encoding.FOR).ptx();
    assertEquals(0, TestPtx.hits(ptx, "// item \\d+: the outputs' loads"));
    int groups = TestPtx.hits(ptx, "// items \\d+ to \\d+: the outputs' loads");
    assertTrue(groups >= 1, ptx);
    assertEquals(1, branchesBetween(ptx, "// items 0 to", "// item 0: the outputs\n"));
  }

  /** A plain column's one load waits on nothing: its items keep their own branches. */
  @Test
  void plainColumnsKeepTheirLoadsPerItem() throws Exception {
    String ptx = kernel(Encoding.PLAIN).ptx();
    assertEquals(0, TestPtx.hits(ptx, "// items \\d+ to \\d+: the outputs' loads"));
    assertTrue(TestPtx.hits(ptx, "// item \\d+: the outputs' loads") > 1, ptx);
  }

  /** Outputs computed from the loads keep their loads per item, whatever the encoding. */
  @Test
  void computedOutputsKeepTheirLoadsPerItem() throws Exception {
    Program bench = FilterProjectBench.program();
    List<InputSpec> gpuFor = bench.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.FOR, false)).toList();
    String ptx = FilterProjectGenerator.generate(bench, gpuFor).ptx();
    assertEquals(0, TestPtx.hits(ptx, "// items \\d+ to \\d+: the outputs' loads"));
    assertTrue(TestPtx.hits(ptx, "// item \\d+: the outputs' loads") > 1, ptx);
  }

  /**
   * A group's loaded values live across the outputs' computing (prelude calls included): where
   * they take the kernel past its registers, the compiler takes the same kernel with each item's
   * loads in its own branch, where it uses them (and after that, the form reading its outputs'
   * addresses where it writes them, the last).
   */
  @Test
  void aKernelLoadingAGroupAheadHasALeanerFormThatDoesNot() throws Exception {
    for (Encoding encoding : List.of(Encoding.FOR, Encoding.PLAIN)) {
      GeneratedKernel kernel = kernel(encoding);
      GeneratedKernel leaner = kernel.leaner();
      assertNotNull(leaner, encoding.toString());
      assertEquals(kernel.entry(), leaner.entry());
      assertEquals(kernel.key(), leaner.key());
      assertEquals(0, TestPtx.hits(leaner.ptx(),
          "// items? \\d+( to \\d+)?: the outputs' loads"), leaner.ptx());
      assertNotNull(leaner.leaner(), encoding.toString());
      assertNull(leaner.leaner().leaner());
    }
  }

  @Test
  @RequiresPtxCompiler
  void compilesWithoutStack() throws Exception {
    TestPtx.assertCompilesClean(kernel(Encoding.FOR), "sm_90");
    TestPtx.assertCompilesClean(kernel(Encoding.FOR).leaner(), "sm_90");
  }

  /**
   * A dimension table's filter: key, a, b WHERE a < 5 over three GPU-FOR INT columns (SSB's
   * dimension filters keep a key and a payload or two of the rows an attribute selects).
   */
  private static Program program() {
    ProgramBuilder b = new ProgramBuilder(
        List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT), false);
    int key = b.loadColumn(0);
    int a = b.loadColumn(1);
    int other = b.loadColumn(2);
    int keep = b.emitNew(Opcode.CMP_INT, a, b.loadConstant(5), Comparison.LT.code());
    return b.build(keep, List.of(new Program.Output(key, ColumnType.INT),
        new Program.Output(a, ColumnType.INT), new Program.Output(other, ColumnType.INT)));
  }

  private static GeneratedKernel kernel(Encoding encoding) throws CodegenUnsupportedException {
    return FilterProjectGenerator.generate(program(), program().inputTypes().stream()
        .map(t -> new InputSpec(t, encoding, false)).toList());
  }

  private static int branchesBetween(String ptx, String from, String to) {
    int start = ptx.indexOf(from);
    int end = ptx.indexOf(to, start);
    assertTrue(start >= 0 && end > start, from + " before " + to);
    return TestPtx.hits(ptx.substring(start, end), "\\bbra(\\.uni)?\\s");
  }

}
