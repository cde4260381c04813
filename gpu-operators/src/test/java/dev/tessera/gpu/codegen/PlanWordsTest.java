package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A generated aggregate kernel reads its plan from a by-value parameter where the plan fits the
 * parameter space, else from memory; both forms compile clean. No GPU (the CUDA aggregate suites
 * run both on one).
 */
class PlanWordsTest {
  /** GROUP BY a DOUBLE key, then {@code functions} of SUM, MIN and MAX over a LONG column. */
  private static GeneratedKernel kernel(int functions) throws CodegenUnsupportedException {
    List<ColumnType> types = List.of(ColumnType.DOUBLE, ColumnType.LONG);
    List<AggregateFunction> list = new ArrayList<>();
    Kind[] kinds = {Kind.SUM, Kind.MIN, Kind.MAX};
    for (int f = 0; f < functions; f++) {
      list.add(new AggregateFunction(kinds[f % kinds.length], 1, ColumnType.LONG));
    }
    AggregateSpec spec = new AggregateSpec(types, 1, list, true);
    List<InputSpec> inputs = types.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, true)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(types, true), inputs, spec);
  }

  private static AggregateSpec specOf(int functions) {
    return new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG), 1,
        Collections.nCopies(functions, new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)), true);
  }

  @Test
  void planOfFewColumnsIsAParameterOfItsOwnSize() throws Exception {
    assertEquals(8 * (16 + 12 * 4), PlanWords.bytes(specOf(3)));
    assertTrue(AggregateUpdateGenerator.takesPlanWords(specOf(3)));
    String ptx = kernel(3).ptx();
    assertTrue(ptx.contains("_plan_words[" + PlanWords.bytes(specOf(3)) + "]"), ptx);
    assertTrue(ptx.contains("_plan_words+"), ptx);
  }

  @Test
  void planWiderThanTheParameterSpaceIsReadFromMemory() throws Exception {
    int functions = 40; // 1 key + 40 functions: 16 + 12 * 41 words, more than 3,992 bytes
    assertFalse(AggregateUpdateGenerator.takesPlanWords(specOf(functions)));
    assertTrue(AggregateUpdateGenerator.takesPlanWords(specOf(functions - 1)));
    GeneratedKernel kernel = kernel(functions);
    assertFalse(kernel.ptx().contains("_plan_words"));
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    assertTrue(report.clean(), report.toString());
  }
}
