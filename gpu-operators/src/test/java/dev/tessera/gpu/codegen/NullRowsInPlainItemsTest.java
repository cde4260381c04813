package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A plain item's NULL keys' rows through its row path (GroupedAggregateEmitter.nullRowsJoin):
 * the rows whose lane remembers the NULL group's per-block entry join the plain copy's rows, with
 * that group and entry. No GPU (CudaHashAggregateDifferentialTest's nullable-key scenarios and
 * HashAggregateSuite run it on CUDA).
 */
class NullRowsInPlainItemsTest {
  /** HashAggregateBench's "nullable keys": GROUP BY a LONG that can be NULL; its functions. */
  private static final AggregateSpec NULLABLE_KEY = new AggregateSpec(
      List.of(ColumnType.LONG, ColumnType.LONG), 1,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
          new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
          new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
          new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);

  /**
   * The join: the NULL rows whose lane knows the NULL group's entry (a .b32 at or above 0) take
   * its group and that entry, and are or'ed into the item's rows.
   */
  private static final Pattern JOIN = Pattern.compile("""
      \tsetp\\.ge\\.s32 (%p\\d+), (%r\\d+), 0;
      \tand\\.pred \\1, \\1, %p\\d+;
      \t@\\1 mov\\.u32 %r\\d+, %r\\d+;
      \t@\\1 mov\\.u32 %r\\d+, \\2;
      \tor\\.pred %p\\d+, %p\\d+, \\1;
      """);

  private static GeneratedKernel kernel(boolean nullableKey) throws Exception {
    return AggregateUpdateGenerator.generate(
        ProgramBuilder.identity(NULLABLE_KEY.inputTypes(), false),
        List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, nullableKey),
            new InputSpec(ColumnType.LONG, Encoding.PLAIN, false)),
        NULLABLE_KEY, KernelFeatures.forArch("sm_90"));
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
    String ptx = kernel(true).ptx();
    Matcher join = JOIN.matcher(plainCopy(ptx));
    assertTrue(join.find(), "the join in the plain copy");
    assertFalse(join.find(), "once");
    // Only there: the item with shortcuts leaves the NULL rows to their own pass after it.
    assertEquals(1, TestPtx.hits(ptx, JOIN.pattern()));
  }

  @Test
  void aKeyThatCannotBeNullHasNoJoin() throws Exception {
    assertEquals(0, TestPtx.hits(kernel(false).ptx(), JOIN.pattern()));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelWithTheJoinKeepsItsPlainCopyWithinABlocksRegisters() throws Exception {
    GeneratedKernel k = kernel(true);
    GeneratedKernel withCopy = new GeneratedKernel(k.entry(), k.key(), k.ptx(), k.target());
    CompileReport report = GeneratedModule.compile(withCopy, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
  }
}
