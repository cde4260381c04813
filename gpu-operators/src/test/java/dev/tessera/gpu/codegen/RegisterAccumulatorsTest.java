package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.AggregateBlockShapeTest.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A global aggregate's register accumulators at the end of the kernel: every warp's lane 0 puts
 * its warp's sums in shared memory, and after the block's barrier thread 0 alone adds the other
 * warps' and merges the block's into the global accumulators. No GPU (the CUDA differential
 * suites' global aggregates run these kernels against the host reference).
 */
class RegisterAccumulatorsTest {
  private static final int WARPS = 128 / 32;

  /** COUNT(*), SUM, MIN, MAX of one LONG column, without keys. */
  private static final AggregateSpec SPEC = new AggregateSpec(List.of(ColumnType.LONG), 0,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
          new AggregateFunction(Kind.SUM, 0, ColumnType.LONG),
          new AggregateFunction(Kind.MIN, 0, ColumnType.LONG),
          new AggregateFunction(Kind.MAX, 0, ColumnType.LONG)), true);

  private static GeneratedKernel kernel(boolean nullable) throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(SPEC.inputTypes(), false),
        List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, nullable)), SPEC,
        KernelFeatures.forArch("sm_90"));
  }

  @Test
  void theBlocksWarpsAreSummedBeforeOneMergeIntoTheGlobalAccumulators() throws Exception {
    String ptx = kernel(false).ptx();
    int functions = SPEC.functions().size();
    // Each warp's slot: a value a function, a high word for the sum, a seen flag a function.
    assertEquals(functions + 1 + functions, count(ptx, "st.shared."));
    // Thread 0 reads the other warps' slots, each at its own offset.
    assertEquals((WARPS - 1) * (functions + 1 + functions), count(ptx, "ld.shared."));
    int stored = ptx.lastIndexOf("st.shared.");
    int barrier = ptx.indexOf("bar.sync 0", stored);
    int firstRead = ptx.indexOf("ld.shared.");
    int firstAtomic = ptx.indexOf("atom.global");
    assertTrue(stored < barrier && barrier < firstRead && firstRead < firstAtomic, ptx);
    // The merge is thread 0's alone: it is skipped where %tid.x is not 0.
    assertTrue(ptx.substring(barrier, firstRead).matches(
        "(?s).*setp\\.ne\\.u32 %p\\d+, %r\\d+, 0;\\s+@%p\\d+ bra \\$L_merged_\\d+;.*"),
        ptx.substring(barrier, firstRead));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelsCompileClean() throws Exception {
    for (boolean nullable : new boolean[] {false, true}) {
      GeneratedKernel kernel = kernel(nullable);
      TestPtx.assertCompilesClean(kernel, "sm_90");
    }
  }
}
