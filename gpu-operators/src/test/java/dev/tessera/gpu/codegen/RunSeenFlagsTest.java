package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which runs keep a function's seen flag (RunAccumulators.tracksSeen): a run of a kernel of one
 * key only where the function's input can be NULL, a run of two keys always. A run's merges
 * (where a lane's run changes group, and at the end of the launch) test the flag of each function
 * that keeps one. No GPU (CudaGeneratedHashAggregateDifferentialTest and the contract suites run
 * the kernels).
 */
class RunSeenFlagsTest {
  /** A merge's test of a function's seen flag. */
  private static final String SEEN_TEST = "@!%p\\d+ bra \\$L_run_function\\d+_";
  /** A merge of a run (its end's label). */
  private static final String MERGE = "(?m)^\\$L_run_merged_\\d+:";

  /**
   * Two tests (SUM and MAX) in each of a merge's two copies (into the per-block entry, into the
   * global accumulators), at each of the kernel's merges of a run.
   */
  private static void assertEveryFlagTested(String ptx) {
    int merges = TestPtx.hits(ptx, MERGE);
    assertTrue(merges >= 2, "a merge when a run changes group and one at the end");
    assertEquals(4 * merges, TestPtx.hits(ptx, SEEN_TEST));
  }

  /** GROUP BY {@code keys}, count(*), sum(v), max(v) of a LONG v (LocalKeyTableTest.spec). */
  private static String ptx(List<ColumnType> keys, boolean nullableValue) throws Exception {
    AggregateSpec spec = LocalKeyTableTest.spec(keys);
    List<InputSpec> inputs = new ArrayList<>();
    for (int c = 0; c < spec.inputTypes().size(); c++) {
      inputs.add(new InputSpec(spec.inputTypes().get(c), Encoding.PLAIN,
          c == keys.size() && nullableValue));
    }
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs, spec, KernelFeatures.forArch("sm_90")).ptx();
  }

  @Test
  void aRunOfOneKeyWhoseInputsCannotBeNullHasNoSeenFlags() throws Exception {
    String ptx = ptx(List.of(ColumnType.LONG), false);
    assertTrue(TestPtx.hits(ptx, MERGE) >= 2, "runs");
    assertEquals(0, TestPtx.hits(ptx, SEEN_TEST));
  }

  @Test
  void aRunOfOneKeyKeepsTheFlagsOfInputsThatCanBeNull() throws Exception {
    assertEveryFlagTested(ptx(List.of(ColumnType.LONG), true));
  }

  @Test
  void aRunOfTwoKeysKeepsItsFlags() throws Exception {
    // Without them the in-jar compiler spilled this kernel's richer form at 64 registers.
    assertEveryFlagTested(ptx(List.of(ColumnType.LONG, ColumnType.INT), false));
  }
}
