package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Which generated aggregate kernels write a second, plain copy of an item for warps whose items
 * find no shortcut ({@link ShortcutMode}), and what that copy leaves out. No GPU (the CUDA
 * contract suite's {@code warpsLeaveAndRetakeTheShortcutsForRepeatedKeysAsTheirKeysChange} runs
 * both copies).
 */
class ShortcutModeTest {
  private static final String PLAIN = "$L_item_plain";
  private static final String UPDATED = "$L_item_updated";

  /** HashAggregateBench's: one key, COUNT(*), SUM, MIN and MAX of a LONG. */
  static AggregateSpec benchSpec(ColumnType key) {
    return new AggregateSpec(List.of(key, ColumnType.LONG), 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean nullable)
      throws CodegenUnsupportedException {
    return kernel(spec, nullable, Encoding.PLAIN);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean nullable, Encoding encoding)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, encoding, nullable)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs, spec, KernelFeatures.forArch("sm_90"));
  }

  private static int count(String text, String what) {
    return text.split(Pattern.quote(what), -1).length - 1;
  }

  /** The plain copy: from its label's placement to the item's end. */
  private static String plainCopy(String ptx) {
    int start = ptx.indexOf("\n" + labelOf(ptx, PLAIN) + ":");
    int end = ptx.indexOf("\n" + labelOf(ptx, UPDATED) + ":");
    assertTrue(start >= 0 && end > start, "the plain copy's label comes before the item's end");
    return ptx.substring(start, end);
  }

  /** The name of the first label that starts with {@code prefix}. */
  private static String labelOf(String ptx, String prefix) {
    int at = ptx.indexOf(prefix);
    int end = at;
    while (Character.isLetterOrDigit(ptx.charAt(end)) || ptx.charAt(end) == '_'
        || ptx.charAt(end) == '$') {
      end++;
    }
    return ptx.substring(at, end);
  }

  @Test
  void aKernelOfOneKeyThatCannotBeNullLooksRowsUpPlainlyInASecondCopy() throws Exception {
    GeneratedKernel k = kernel(benchSpec(ColumnType.LONG), false);
    String ptx = k.ptx();
    // The item's start branches to the plain copy where the warp takes no shortcut.
    assertTrue(ptx.contains("bra.uni " + labelOf(ptx, PLAIN) + ";"), "branches to the copy");
    String plain = plainCopy(ptx);
    // The copy: no test for a warp of one group (vote.all) and no run; the global table's
    // lookup and the row path, once each.
    assertFalse(plain.contains("vote.sync.all"), plain);
    assertFalse(plain.contains("run"), plain);
    assertEquals(1, count(plain, "ld.relaxed.gpu.global.v2.u64"),
        "one probe of the global table");
    assertEquals(1, count(plain, "red.global.min.s64"), "one global row path");
    // Both copies fit the 64 registers of a block of 1,024 threads, with no stack or spill.
    CompileReport report = GeneratedModule.compile(k, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
  }

  @Test
  @RequiresPtxCompiler
  void aLongAndAnIntKeyKeepTheirPlainCopyWithinABlocksRegisters() throws Exception {
    // HashAggregateBench's "two columns": GROUP BY a LONG and an INT. The INT, loaded
    // sign-extended, is not sign-extended again for the table (GroupedAggregateEmitter.canonical):
    // with the two shifts the in-jar compiler spilled 8 bytes at 64 registers and the kernel
    // fell back to its leaner form, without the copy.
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.INT,
        ColumnType.LONG), 2, benchSpec(ColumnType.LONG).functions().stream()
            .map(f -> f.kind() == Kind.COUNT_ROWS ? f
                : new AggregateFunction(f.kind(), 2, f.resultType())).toList(), false);
    GeneratedKernel k = kernel(spec, false);
    assertTrue(k.ptx().contains(PLAIN), "a plain copy");
    GeneratedKernel withCopy = new GeneratedKernel(k.entry(), k.key(), k.ptx(), k.target());
    CompileReport report = GeneratedModule.compile(withCopy, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
  }

  @Test
  void aKernelWithACopyHasALeanerFormWithoutItThatTheCompilerFallsBackTo() throws Exception {
    GeneratedKernel k = kernel(benchSpec(ColumnType.LONG), false);
    GeneratedKernel leaner = k.leaner();
    assertTrue(leaner != null && !leaner.ptx().contains(PLAIN), "the leaner form has no copy");
    assertEquals(k.entry(), leaner.entry());
    // The kernel held to fewer registers than it needs (a stack or spills): its leaner form at
    // its ask of 64, not either with more registers (fewer threads a block).
    GeneratedKernel tight = new GeneratedKernel(k.entry(), k.key(),
        k.ptx().replace(".maxnreg 64", ".maxnreg 24"), k.target(), leaner);
    assertFalse(GeneratedModule.compile(new GeneratedKernel(k.entry(), k.key(), tight.ptx(),
        k.target()), "sm_90").report(k.entry()).registers() <= 24, "24 is too few for it");
    CompiledKernel compiled = GeneratedModule.compile(tight, "sm_90");
    CompileReport report = compiled.report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
    assertArrayEquals(GeneratedModule.compile(leaner, "sm_90").cubin(), compiled.cubin());
    // A kernel without a copy has no leaner form.
    assertNull(kernel(benchSpec(ColumnType.LONG), false, Encoding.DFOR).leaner());
  }

  @Test
  void aKernelOfGpuDforInputsHasNoPlainCopy() throws Exception {
    // Blocks of 128 threads decode its tiles, with a register ask of 128: a copy there was not
    // measured, and its registers would cost blocks.
    GeneratedKernel k = kernel(benchSpec(ColumnType.LONG), false, Encoding.DFOR);
    assertFalse(k.ptx().contains(PLAIN));
    assertNull(k.leaner());
  }

  @Test
  void aKernelWhoseKeyCanBeNullTakesTheCopyWithItsNullKeysRowsApart() throws Exception {
    // HashAggregateBench's "nullable keys": the key can be NULL, the value not.
    AggregateSpec spec = benchSpec(ColumnType.LONG);
    GeneratedKernel k = AggregateUpdateGenerator.generate(
        ProgramBuilder.identity(spec.inputTypes(), false),
        List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, true),
            new InputSpec(ColumnType.LONG, Encoding.PLAIN, false)),
        spec, KernelFeatures.forArch("sm_90"));
    String ptx = k.ptx();
    // The rows whose key is NULL are updated after the item, copy or not, once
    // (GroupedAggregateEmitter.nullKeyRows): the item's keys are never NULL, and the copy, with
    // no null flags to hold, fits the 64 registers of a block of 1,024 threads.
    assertTrue(ptx.contains(PLAIN), "a plain copy where the key can be NULL");
    assertEquals(1, count(ptx, "$L_null_rows_done_") - 1, "one update of the NULL keys' rows");
    assertTrue(ptx.indexOf("\n" + labelOf(ptx, UPDATED) + ":") < ptx.indexOf(
        "\n" + labelOf(ptx, "$L_null_rows_done_") + ":"), "after the item, copy or not");
    assertFalse(plainCopy(ptx).contains("$L_null_rows_done_"), "not in the copy");
    GeneratedKernel withCopy = new GeneratedKernel(k.entry(), k.key(), ptx, k.target());
    CompileReport report = GeneratedModule.compile(withCopy, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
    // Where a function's input can be NULL too, the NULL keys' rows stay in the item, which
    // takes no copy: apart, that kernel needed 110 registers.
    String together = kernel(spec, true).ptx();
    assertFalse(together.contains("$L_null_rows_done_"));
    assertFalse(together.contains(PLAIN));
  }

  @Test
  void aKernelWithoutRunsHasNoPlainCopy() throws Exception {
    // FLOAT inputs take no runs (RunAccumulators.registerInputs), so no shortcut to leave.
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.FLOAT), 1,
        List.of(new AggregateFunction(Kind.MIN, 1, ColumnType.FLOAT)), false);
    assertFalse(kernel(spec, false).ptx().contains(PLAIN));
  }

  @Test
  void doubleFunctionsTakeRunsAndThePlainCopyWithinTheRegisterAsk() throws Exception {
    // HashAggregateBench's "double values": count(*), sum(v), min(v), max(v) of a DOUBLE v.
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.DOUBLE), 1,
        List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
            new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE),
            new AggregateFunction(Kind.MIN, 1, ColumnType.DOUBLE),
            new AggregateFunction(Kind.MAX, 1, ColumnType.DOUBLE)), false);
    GeneratedKernel k = kernel(spec, false);
    assertTrue(k.ptx().contains(PLAIN), "DOUBLE SUM, MIN and MAX accumulate runs");
    // The form with the copy itself, not its leaner fallback.
    GeneratedKernel withCopy = new GeneratedKernel(k.entry(), k.key(), k.ptx(), k.target());
    CompileReport report = GeneratedModule.compile(withCopy, "sm_90").report(k.entry());
    assertTrue(report.clean() && report.registers() <= 64, report.summary());
  }
}
