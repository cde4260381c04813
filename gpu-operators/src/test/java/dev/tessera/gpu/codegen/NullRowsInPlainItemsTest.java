package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/**
 * A plain item's NULL keys' rows through its row path, under {@value
 * GroupedAggregateEmitter#NULL_ROWS_IN_PLAIN_ITEMS_PROPERTY} (off by default): the rows whose
 * lane remembers the NULL group's per-block entry join the plain copy's rows, with that group and
 * entry. No GPU (CudaHashAggregateDifferentialTest's nullable-key scenarios run it on CUDA with
 * the property set).
 */
class NullRowsInPlainItemsTest {
  /** HashAggregateBench's "nullable keys": GROUP BY a LONG that can be NULL; its functions. */
  private static final AggregateSpec NULLABLE_KEY = new AggregateSpec(
      List.of(ColumnType.LONG, ColumnType.LONG), 1,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
          new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
          new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
          new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);

  private static <T> T with(boolean on, Callable<T> call) throws Exception {
    String property = GroupedAggregateEmitter.NULL_ROWS_IN_PLAIN_ITEMS_PROPERTY;
    String before = System.getProperty(property);
    System.setProperty(property, Boolean.toString(on));
    try {
      return call.call();
    } finally {
      if (before == null) {
        System.clearProperty(property);
      } else {
        System.setProperty(property, before);
      }
    }
  }

  private static List<InputSpec> inputs(boolean nullableKey) {
    return List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, nullableKey),
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
  }

  private static GeneratedKernel kernel(boolean nullableKey, boolean on) throws Exception {
    return with(on, () -> AggregateUpdateGenerator.generate(
        ProgramBuilder.identity(NULLABLE_KEY.inputTypes(), false), inputs(nullableKey),
        NULLABLE_KEY, KernelFeatures.forArch("sm_90")));
  }

  private static String key(boolean on) throws Exception {
    return with(on, () -> AggregateUpdateGenerator.key(
        ProgramBuilder.identity(NULLABLE_KEY.inputTypes(), false), inputs(true), NULLABLE_KEY));
  }

  /** The plain copy: from its label's placement to the item's end. */
  private static String plainCopy(String ptx) {
    int start = ptx.indexOf("\n$L_item_plain");
    int end = ptx.indexOf("\n$L_item_updated", start);
    assertTrue(start >= 0 && end > start, "a plain copy");
    return ptx.substring(start, end);
  }

  @Test
  void aPlainItemsNullRowsJoinItsRowsWithTheRememberedEntry() throws Exception {
    String off = plainCopy(kernel(true, false).ptx());
    String on = plainCopy(kernel(true, true).ptx());
    // The join: the lanes whose NULL group's entry is known (>= 0) among the NULL rows take
    // that group and entry, and are or'ed into the item's rows.
    assertEquals(TestPtx.hits(off, "or\\.pred ") + 1, TestPtx.hits(on, "or\\.pred "));
    assertEquals(TestPtx.hits(off, "@%p\\d+ mov\\.u32 ") + 2,
        TestPtx.hits(on, "@%p\\d+ mov\\.u32 "));
    assertNotEquals(key(false), key(true), "with the property, another kernel key");
  }

  @Test
  void aKeyThatCannotBeNullIsWrittenAsBefore() throws Exception {
    assertEquals(kernel(false, false).ptx().replaceAll("tessera_gen_aggregate_\\w+", "K"),
        kernel(false, true).ptx().replaceAll("tessera_gen_aggregate_\\w+", "K"));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelWithTheJoinKeepsItsPlainCopyWithinABlocksRegisters() throws Exception {
    GeneratedKernel k = kernel(true, true);
    GeneratedKernel withCopy = new GeneratedKernel(k.entry(), k.key(), k.ptx(), k.target());
    CompileReport report = GeneratedModule.compile(withCopy, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
  }
}
