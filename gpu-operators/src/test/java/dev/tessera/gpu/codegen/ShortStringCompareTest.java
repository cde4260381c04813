package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Where a GROUP BY has one string key (with or without fixed-width keys), a group whose hash and
 * length equal the row's, at most 8 bytes, is the row's without reading the key heap
 * (GroupLookup.stringEqual); with two string keys the heap decides. No GPU
 * (CudaGeneratedHashAggregateDifferentialTest's string keys run them).
 */
class ShortStringCompareTest {
  /** The length test that sends a short key past the heap's compare to its equal label. */
  private static final String SHORT_KEY = "setp\\.le\\.s32 %p\\d+, %r\\d+, 8;\\n\\t@%p\\d+ bra "
      + "\\$L_key\\d+_same_\\d+;";

  private static int shortcuts(List<ColumnType> keys, boolean nullable) throws Exception {
    List<ColumnType> types = new ArrayList<>(keys);
    types.add(ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, keys.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, keys.size(), ColumnType.LONG)), false);
    Program program = ProgramBuilder.identity(types, false);
    List<InputSpec> inputs = types.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    GeneratedKernel kernel = AggregateUpdateGenerator.generate(program, inputs, spec,
        KernelFeatures.forArch("sm_90"));
    TestPtx.assertCompilesClean(kernel, "sm_90");
    return TestPtx.hits(kernel.ptx(), SHORT_KEY);
  }

  @Test
  void theHashDecidesAShortKeyWhereItIsTheOnlyString() throws Exception {
    for (boolean nullable : new boolean[] {false, true}) {
      assertEquals(1, shortcuts(List.of(ColumnType.STRING), nullable));
      assertEquals(1, shortcuts(List.of(ColumnType.INT, ColumnType.STRING), nullable));
      assertEquals(1, shortcuts(List.of(ColumnType.STRING, ColumnType.LONG, ColumnType.INT),
          nullable));
    }
  }

  @Test
  void theHeapDecidesWhereThereAreTwoStrings() throws Exception {
    assertEquals(0, shortcuts(List.of(ColumnType.STRING, ColumnType.STRING), false));
    assertEquals(0, shortcuts(List.of(ColumnType.INT, ColumnType.STRING, ColumnType.STRING),
        true));
  }
}
