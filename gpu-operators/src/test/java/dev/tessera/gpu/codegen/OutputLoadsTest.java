package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
 * How phase B of a generated filter-project kernel issues its items' column loads: each item's
 * behind a branch of its own (the form that has run on GPUs), or, with {@link
 * FilterProjectGenerator#OUTPUT_LOADS_BY_GROUP}'s form, a group's behind one branch, so that the
 * items' dependent GPU-FOR loads wait together. No GPU: the CUDA filter-project suites run
 * both.
 */
class OutputLoadsTest {

  @Test
  void aGroupsOutputLoadsSitBehindOneBranchWhereEachItemsSatBehindItsOwn() throws Exception {
    String perItem = kernel(false).ptx();
    String byGroup = kernel(true).ptx();
    assertEquals(0, TestPtx.hits(perItem, "// items \\d+ to \\d+: the outputs' loads"));
    int items = TestPtx.hits(perItem, "// item \\d+: the outputs' loads");
    assertTrue(items > 1, perItem);
    assertEquals(0, TestPtx.hits(byGroup, "// item \\d+: the outputs' loads"));
    int groups = TestPtx.hits(byGroup, "// items \\d+ to \\d+: the outputs' loads");
    assertTrue(groups >= 1 && groups < items, groups + " groups of " + items + " items");
    assertEquals(1, branchesBetween(byGroup, "// items 0 to", "// item 0: the outputs\n"));
  }

  @Test
  void theTwoFormsAreTwoKernels() throws Exception {
    assertNotEquals(kernel(false).key(), kernel(true).key());
    assertEquals(FilterProjectGenerator.OUTPUT_LOADS_BY_GROUP ? kernel(true).key()
        : kernel(false).key(), FilterProjectGenerator.key(program(), inputs()));
  }

  /** A plain column's one load waits on nothing: its items keep their own branches. */
  @Test
  void plainColumnsKeepTheirLoadsPerItem() throws Exception {
    Program bench = FilterProjectBench.program();
    List<InputSpec> plain = bench.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    GeneratedKernel perItem = FilterProjectGenerator.generate(bench, plain, false);
    GeneratedKernel byGroup = FilterProjectGenerator.generate(bench, plain, true);
    assertEquals(perItem.ptx().replace(perItem.entry(), "k"),
        byGroup.ptx().replace(byGroup.entry(), "k"));
  }

  @Test
  @RequiresPtxCompiler
  void bothFormsCompileWithoutStack() throws Exception {
    for (boolean byGroup : new boolean[] {false, true}) {
      TestPtx.assertCompilesClean(kernel(byGroup), "sm_90");
    }
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

  private static List<InputSpec> inputs() {
    return program().inputTypes().stream().map(t -> new InputSpec(t, Encoding.FOR, false))
        .toList();
  }

  private static GeneratedKernel kernel(boolean byGroup) throws CodegenUnsupportedException {
    return FilterProjectGenerator.generate(program(), inputs(), byGroup);
  }

  private static int branchesBetween(String ptx, String from, String to) {
    int start = ptx.indexOf(from);
    int end = ptx.indexOf(to, start);
    assertTrue(start >= 0 && end > start, from + " before " + to);
    return TestPtx.hits(ptx.substring(start, end), "\\bbra(\\.uni)?\\s");
  }

}
