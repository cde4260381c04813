package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
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
 * (where a lane's run changes group, in each copy of the item, and at the end of the launch) test
 * the flag of each function that keeps one. No GPU (CudaGeneratedHashAggregateDifferentialTest and the contract suites run
 * the kernels).
 */
class RunSeenFlagsTest {
  /** A merge's test of a function's seen flag. */
  private static final String SEEN_TEST = "@!%p\\d+ bra \\$L_run_function\\d+_";

  /**
   * Three tests (SUM, MIN and MAX) in each of a merge's two copies (into the per-block entry, into
   * the global accumulators), at each of the kernel's merges of a run.
   */
  private static void assertEveryFlagTested(String ptx) {
    int merges = TestPtx.hits(ptx, "(?m)^\\$L_run_merged_\\d+:");
    assertTrue(merges >= 2, "a merge when a run changes group and one at the end");
    assertEquals(6 * merges, TestPtx.hits(ptx, SEEN_TEST));
  }

  /** GROUP BY {@code keys}, count(*), sum(v), min(v), max(v) of a LONG v. */
  private static String ptx(List<ColumnType> keys, boolean nullableValue) throws Exception {
    List<ColumnType> types = new ArrayList<>(keys);
    types.add(ColumnType.LONG);
    int v = keys.size();
    AggregateSpec spec = new AggregateSpec(types, keys.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, v, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, v, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, v, ColumnType.LONG)), false);
    List<InputSpec> inputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      inputs.add(new InputSpec(types.get(c), Encoding.PLAIN, c == v && nullableValue));
    }
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(types, false), inputs, spec,
        KernelFeatures.forArch("sm_90")).ptx();
  }

  @Test
  void aRunOfOneKeyWhoseInputsCannotBeNullHasNoSeenFlags() throws Exception {
    String ptx = ptx(List.of(ColumnType.LONG), false);
    assertTrue(TestPtx.hits(ptx, "(?m)^\\$L_run_merged_\\d+:") >= 2, "runs");
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
