package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A remainder's fast paths: a LONG one takes the 32-bit remainder where both operands fit, and
 * one by a constant that is not 0 has no zero test and cannot be NULL, so a GROUP BY k, k % 3
 * holds two keys that cannot be NULL. A kernel's key says which of its constants are 0. No GPU:
 * the CUDA suites run these kernels (FilterProjectContractTest's longRemaindersAcrossThirtyTwoBits
 * among them, as CudaGeneratedFilterProjectContractTest).
 */
class FastRemainderTest {
  private static final ColumnType LONG = ColumnType.LONG;
  /** The divisor's zero test: a 64-bit compare of a register with 0. */
  private static final String ZERO_TEST = "setp\\.eq\\.s64 %p\\d+, %rd\\d+, 0;";
  private static final AggregateSpec SPEC = new AggregateSpec(List.of(LONG, LONG, LONG), 2,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, LONG),
          new AggregateFunction(Kind.SUM, 2, LONG), new AggregateFunction(Kind.MIN, 2, LONG),
          new AggregateFunction(Kind.MAX, 2, LONG)), false);
  private static final List<InputSpec> INPUTS =
      List.of(new InputSpec(LONG, Encoding.PLAIN, false),
          new InputSpec(LONG, Encoding.PLAIN, false));

  /** k, k % divisor (PMOD where {@code pmod}), v: HashAggregateBench's "two keys". */
  private static Program byKeyAndRemainder(long divisor, boolean pmod) {
    ProgramBuilder b = new ProgramBuilder(List.of(LONG, LONG), false);
    int k = b.loadColumn(0);
    int bucket = b.emitNew(pmod ? Opcode.PMOD_INT : Opcode.REM_INT, k, b.loadConstant(divisor),
        64);
    return b.build(-1, List.of(new Program.Output(k, LONG), new Program.Output(bucket, LONG),
        new Program.Output(b.loadColumn(1), LONG)));
  }

  private static GeneratedKernel kernel(long divisor, boolean pmod)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(byKeyAndRemainder(divisor, pmod), INPUTS, SPEC,
        KernelFeatures.forArch("sm_90"));
  }

  private static String key(long divisor) {
    return AggregateUpdateGenerator.key(byKeyAndRemainder(divisor, false), INPUTS, SPEC,
        KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aLongRemainderTakesThe32BitOneWhereBothOperandsFit() throws Exception {
    for (boolean pmod : new boolean[] {false, true}) {
      String ptx = kernel(3, pmod).ptx();
      // PMOD takes a second remainder, of the first one plus the divisor, where it was negative.
      int remainders = pmod ? 2 : 1;
      assertEquals(remainders, hits(ptx, "rem\\.u32 %r\\d+, %r\\d+, %r\\d+;"), "pmod " + pmod);
      assertEquals(remainders, hits(ptx, "rem\\.s64"),
          "pmod " + pmod + ": the 64-bit one where they do not");
      assertEquals(remainders, hits(ptx, "\tor\\.b64 (%rd\\d+), %rd\\d+, %rd\\d+;\n"
          + "\tshr\\.u64 \\1, \\1, 32;\n\tsetp\\.ne\\.u64 (%p\\d+), \\1, 0;\n"
          + "\t@\\2 bra \\$L_rem_wide_\\d+;"), "pmod " + pmod + ": both operands' high words");
    }
  }

  @Test
  void aRemainderByANonZeroConstantHasNoZeroTest() throws Exception {
    for (boolean pmod : new boolean[] {false, true}) {
      // By 0 the test stays: the result is NULL (or an error under ANSI).
      int byZero = hits(kernel(0, pmod).ptx(), ZERO_TEST);
      int byThree = hits(kernel(3, pmod).ptx(), ZERO_TEST);
      assertTrue(byThree < byZero, "pmod " + pmod + ": " + byThree + " zero tests of " + byZero);
    }
  }

  @Test
  void theKeySaysWhichConstantsAreZero() {
    assertEquals(key(3), key(5));
    assertNotEquals(key(3), key(0));
  }

  @Test
  @RequiresPtxCompiler
  void twoKeysOfWhichOneIsARemainderCompileInAWholeBlocksRegisters() throws Exception {
    // Not NULL, the keys need no null words nor flags: the whole multiprocessor's 64 registers a
    // thread, where a NULL-able remainder took the kernel to 90.
    GeneratedKernel kernel = kernel(3, false);
    CompileReport report = TestPtx.assertCompilesClean(kernel, "sm_90");
    assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
        report.summary());
  }
}
