package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A filter of comparisons joined by AND and by ChainCompiler's SELECT(keep, condition, false)
 * (SSB Q1.1's shape) is tested through predicates: no BOOLEAN value of it is compared with 0 as a
 * 64-bit value (two machine instructions, and the select before them), neither by AND, nor by the
 * SELECT, nor by the filter: the kernel has as many such tests as one whose filter is a single
 * comparison (the tile's own code has some). No GPU: the CUDA filter-project and aggregate suites
 * run such filters, with NULLs.
 */
class BooleanPredicatesTest {
  private static final ColumnType INT = ColumnType.INT;
  /** A 64-bit value compared with 0: what a BOOLEAN's test was. */
  private static final String TEST_OF_ZERO = "setp\\.(eq|ne)\\.s64 %p\\d+, %rd\\d+, 0;";

  /**
   * WHERE c0 BETWEEN 1 AND 3 AND c1 < 25, then SELECT(that, c2 = 7, false), as ChainCompiler
   * joins a filter to the filters before it; SELECT c2.
   */
  private static Program program() {
    return program(false);
  }

  /** {@link #program()}, or with {@code single} the filter c0 >= 1 alone. */
  private static Program program(boolean single) {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT), false);
    int c0 = b.loadColumn(0);
    int low = b.emitNew(Opcode.CMP_INT, c0, b.loadConstant(1), Comparison.GE.code());
    int high = b.emitNew(Opcode.CMP_INT, c0, b.loadConstant(3), Comparison.LE.code());
    if (single) {
      return b.build(low, List.of(new Program.Output(b.loadColumn(2), INT)));
    }
    int between = b.emitNew(Opcode.AND, low, high, 0);
    int small = b.emitNew(Opcode.CMP_INT, b.loadColumn(1), b.loadConstant(25),
        Comparison.LT.code());
    int keep = b.emitNew(Opcode.AND, between, small, 0);
    int c2 = b.loadColumn(2);
    int seven = b.emitNew(Opcode.CMP_INT, c2, b.loadConstant(7), Comparison.EQ.code());
    int filter = b.emitNew(Opcode.SELECT, keep, seven, b.loadConstant(0));
    return b.build(filter, List.of(new Program.Output(c2, INT)));
  }

  private static List<InputSpec> inputs(boolean nullable) {
    return List.of(new InputSpec(INT, Encoding.PLAIN, nullable),
        new InputSpec(INT, Encoding.PLAIN, nullable), new InputSpec(INT, Encoding.PLAIN, nullable));
  }

  @Test
  void theFilterProjectKernelTestsNoBooleanAsA64BitValue() throws Exception {
    for (boolean nullable : new boolean[] {false, true}) {
      String ptx = FilterProjectGenerator.generate(program(), inputs(nullable)).ptx();
      String single = FilterProjectGenerator.generate(program(true), inputs(nullable)).ptx();
      assertEquals(hits(single, TEST_OF_ZERO), hits(ptx, TEST_OF_ZERO), "nullable " + nullable);
    }
  }

  @Test
  void theAggregateKernelTestsNoBooleanAsA64BitValue() throws Exception {
    AggregateSpec sum = new AggregateSpec(List.of(INT), 0,
        List.of(new AggregateFunction(Kind.SUM, 0, ColumnType.LONG)), false);
    for (boolean nullable : new boolean[] {false, true}) {
      String ptx = AggregateUpdateGenerator.generate(program(), inputs(nullable), sum,
          KernelFeatures.forArch("sm_90")).ptx();
      String single = AggregateUpdateGenerator.generate(program(true), inputs(nullable), sum,
          KernelFeatures.forArch("sm_90")).ptx();
      assertEquals(hits(single, TEST_OF_ZERO), hits(ptx, TEST_OF_ZERO), "nullable " + nullable);
    }
  }
}
