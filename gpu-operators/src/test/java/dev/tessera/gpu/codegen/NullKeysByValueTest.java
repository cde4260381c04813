package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
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
 * NULL keys held by value in the per-block table (GroupLookup.tableForms): a NULL key's value
 * there is LocalKeyTable.NULL_KEY, the entries' null words are neither written nor read, and a
 * row whose LONG key is NULL_KEY itself looks in the global table. The CUDA suites run these
 * kernels (CudaHashAggregateDifferentialTest's
 * nullableKeysOverValuesWithoutNullsMatchTheHostReference among them, whose LONG keys include
 * NULL_KEY).
 */
class NullKeysByValueTest {
  /** An entry's null word stored at its claim (its group word is an s32). */
  private static final String NULL_WORD_STORE = "st\\.relaxed\\.cta\\.shared\\.u32 ";
  /** A NULL key's value in the table: NULL_KEY where the key is not valid. */
  private static final String NULL_KEY_VALUE =
      "selp\\.b64 %rd\\d+, %rd\\d+, " + LocalKeyTable.NULL_KEY + ", %p\\d+;";
  /** A key compared with NULL_KEY: the test for a key that is that value itself. */
  private static final String NULL_KEY_TEST =
      "setp\\.eq\\.s64 %p\\d+, %rd\\d+, " + LocalKeyTable.NULL_KEY + ";";

  /** GROUP BY k (a LONG), c (an INT): count(*), sum, min and max of a LONG that cannot be NULL. */
  private static final AggregateSpec TWO_KEYS = new AggregateSpec(
      List.of(ColumnType.LONG, ColumnType.INT, ColumnType.LONG), 2,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
          new AggregateFunction(Kind.SUM, 2, ColumnType.LONG),
          new AggregateFunction(Kind.MIN, 2, ColumnType.LONG),
          new AggregateFunction(Kind.MAX, 2, ColumnType.LONG)), false);

  private static GeneratedKernel kernel(AggregateSpec spec, boolean[] nullable)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = new java.util.ArrayList<>();
    for (int i = 0; i < spec.inputTypes().size(); i++) {
      inputs.add(new InputSpec(spec.inputTypes().get(i), Encoding.PLAIN,
          i < nullable.length && nullable[i]));
    }
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs, spec, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void twoKeysThatCanBeNullAreHeldWithoutNullWords() throws Exception {
    String ptx = kernel(TWO_KEYS, new boolean[] {true, true}).ptx();
    assertEquals(0, hits(ptx, NULL_WORD_STORE), "held by value, no null words");
    assertEquals(2, hits(ptx, NULL_KEY_VALUE), "each key's NULL as NULL_KEY");
    // Only the LONG can be NULL_KEY itself: a sign-extended INT never is.
    assertEquals(1, hits(ptx, NULL_KEY_TEST), "the LONG key tested for NULL_KEY");
  }

  @Test
  void keysThatCannotBeNullNeitherBecomeNorMeetNullKey() throws Exception {
    String ptx = kernel(TWO_KEYS, new boolean[] {false, false}).ptx();
    assertEquals(0, hits(ptx, NULL_WORD_STORE));
    assertEquals(0, hits(ptx, NULL_KEY_VALUE));
    assertEquals(0, hits(ptx, NULL_KEY_TEST), "a key that is NULL_KEY is held like any other");
  }

  @Test
  void oneKeyThatCanBeNullHoldsItsNullGroupByValue() throws Exception {
    // HashAggregateBench's "nullable keys": the item's keys are not NULL (the NULL rows go apart,
    // GroupedAggregateEmitter.nullKeyRows), but the table holds the NULL group, as NULL_KEY.
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG), 1,
        TWO_KEYS.functions().stream().map(f -> f.kind() == Kind.COUNT_ROWS ? f
            : new AggregateFunction(f.kind(), 1, f.resultType())).toList(), false);
    String on = kernel(spec, new boolean[] {true}).ptx();
    assertEquals(0, hits(on, NULL_WORD_STORE));
    assertEquals(1, hits(on, NULL_KEY_VALUE), "the NULL rows' key");
    // The item's key and the NULL rows' each tested (a NULL one is never NULL_KEY itself).
    assertEquals(2, hits(on, NULL_KEY_TEST));
  }

  @Test
  @RequiresPtxCompiler
  void twoKeysThatCanBeNullFitAWholeBlocksRegisters() throws Exception {
    for (boolean[] nullable : new boolean[][] {{true, false}, {false, true}, {true, true}}) {
      GeneratedKernel on = kernel(TWO_KEYS, nullable);
      CompileReport report = GeneratedModule.compile(on, "sm_90").report(on.entry());
      // 90 to 96 registers with the null words (672 threads a block instead of 1,024).
      assertTrue(report.clean()
          && report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
          nullable[0] + ", " + nullable[1] + ": " + report.summary());
    }
  }
}
