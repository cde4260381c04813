package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A lane's last string key and its group (GroupLookup.beginStrings): remembered in a kernel of
 * one block a multiprocessor (an unfiltered GROUP BY of one string), not in others.
 * No GPU (CudaGeneratedHashAggregateDifferentialTest's string keys run them).
 */
class StringKeyRecallTest {
  private static final String RECALL = "the lane's last string key";

  private static AggregateSpec spec(List<ColumnType> keys) {
    List<ColumnType> types = new ArrayList<>(keys);
    types.add(ColumnType.LONG);
    int value = keys.size();
    return new AggregateSpec(types, keys.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, value, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, value, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, value, ColumnType.LONG)), false);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean filtered, boolean nullable)
      throws CodegenUnsupportedException {
    List<ColumnType> types = spec.inputTypes();
    Program program;
    if (filtered) {
      ProgramBuilder b = new ProgramBuilder(types, false);
      List<Program.Output> outputs = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
      }
      int value = outputs.get(types.size() - 1).register();
      int keep = b.emitNew(Opcode.CMP_INT, value, b.loadConstant(0), Comparison.GT.code());
      program = b.build(keep, outputs);
    } else {
      program = ProgramBuilder.identity(types, false);
    }
    List<InputSpec> inputs = types.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    return AggregateUpdateGenerator.generate(program, inputs, spec,
        KernelFeatures.forArch("sm_90"));
  }

  @Test
  void anUnfilteredKernelOfOneStringKeyRemembersTheLanesLastKey() throws Exception {
    for (boolean nullable : new boolean[] {false, true}) {
      GeneratedKernel kernel = kernel(spec(List.of(ColumnType.STRING)), false, nullable);
      String ptx = kernel.ptx();
      assertTrue(ptx.contains(RECALL), "nullable " + nullable);
      // The key's bytes against the last one's, a word of each at a time.
      assertEquals(1, ptx.lines().filter(l -> l.matches("\\$L_key_recall_word_\\d+:")).count());
      // Only a warp whose rows all took their lane's last group compares: a uniform branch
      // past the compares on the warp's vote.
      assertTrue(Pattern.compile("@!%p\\d+ bra\\.uni \\$L_key_recalled_\\d+;").matcher(ptx)
          .find());
      CompileReport report = TestPtx.assertCompilesClean(kernel, "sm_90");
      assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
          report.summary());
    }
  }

  @Test
  void otherKernelsDoNot() throws Exception {
    // Filtered (blocks of 128 threads), several keys with a string, fixed-width keys.
    assertFalse(kernel(spec(List.of(ColumnType.STRING)), true, false).ptx().contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.INT, ColumnType.STRING)), false, false).ptx()
        .contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.LONG)), false, false).ptx().contains(RECALL));
    assertFalse(kernel(spec(List.of(ColumnType.INT, ColumnType.INT)), false, false).ptx()
        .contains(RECALL));
  }
}
