package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A kernel that asks for fewer registers than {@link GeneratedModule#MAX_REGISTERS} (one of the
 * launch's block asks for a block of 1,024 threads' worth) is compiled with them where ptxas can
 * do without spills, and with the most a generated kernel may take where it cannot.
 */
class GeneratedModuleRegistersTest {
  private static GeneratedKernel keyed() throws Exception {
    AggregateSpec spec = LocalKeyTableTest.spec(List.of(ColumnType.LONG));
    List<ColumnType> types = spec.inputTypes();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(types, false),
        types.stream().map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList(), spec,
        KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aTextsRegisterCountsBelowTheMostAreLiftedToIt() {
    String text = ".visible .entry a()\n.maxnreg 64\n{\n}\n.visible .entry b()\n.maxnreg "
        + GeneratedModule.MAX_REGISTERS + "\n{\n}\n";
    String lifted = GeneratedModule.withMaxRegisters(text);
    assertEquals(text.replace(".maxnreg 64\n", ".maxnreg " + GeneratedModule.MAX_REGISTERS
        + "\n"), lifted);
    assertEquals(lifted, GeneratedModule.withMaxRegisters(lifted));
  }

  @Test
  @RequiresPtxCompiler
  void aKernelThatSpillsWithTheRegistersItAsksForIsCompiledWithMore() throws Exception {
    GeneratedKernel kernel = keyed();
    String asked = ".maxnreg " + AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS + "\n";
    assertTrue(kernel.ptx().contains(asked));
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    assertNull(GeneratedModule.rejection(report), report.summary());
    assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
        report.summary());

    // Asked for 24, it spills: compiled again with up to MAX_REGISTERS, clean.
    GeneratedKernel tight = new GeneratedKernel(kernel.entry(), kernel.key() + ";tight",
        kernel.ptx().replace(asked, ".maxnreg 24\n"), kernel.target());
    CompileReport lifted = GeneratedModule.compile(tight, "sm_90").report(kernel.entry());
    assertNull(GeneratedModule.rejection(lifted), lifted.summary());
    assertTrue(lifted.registers() > 24, lifted.summary());
  }

  /**
   * Three forms of the keyed kernel, told apart by a comment: the first and the last ask for 24
   * registers and spill; the middle one asks for what it needs. The leaner forms compile side by
   * side, and the one used is the first that fits, not the last to finish or the last form.
   */
  @Test
  @RequiresPtxCompiler
  void theFirstLeanerFormThatFitsIsUsedThoughTheLaterOnesCompileBesideIt() throws Exception {
    GeneratedKernel kernel = keyed();
    GeneratedKernel last = form(kernel, "last", true, null);
    GeneratedKernel chain = form(kernel, "first", true, form(kernel, "middle", false, last));

    CompiledKernel used = GeneratedModule.compile(chain, "sm_90");
    assertTrue(used.ptx().contains("// form middle"), "not the middle form");
    assertNull(GeneratedModule.rejection(used.report(kernel.entry())));
    assertTrue(used.compileNanos() > 0);
  }

  /**
   * A kernel whose generator expects its first form rejected has its leaner forms compiled
   * beside that form from the start: the form used is the one the compiles after a rejection
   * would take, the middle one where the first spills, and the first where it fits.
   */
  @Test
  @RequiresPtxCompiler
  void leanerFormsCompiledAtOnceLeaveTheChoiceOfFormAsItWas() throws Exception {
    GeneratedKernel kernel = keyed();
    GeneratedKernel rest = form(kernel, "middle", false, form(kernel, "last", true, null));
    GeneratedKernel spills = atOnce(form(kernel, "first", true, rest));
    GeneratedKernel fits = atOnce(form(kernel, "first", false, rest));

    CompiledKernel afterSpills = GeneratedModule.compile(spills, "sm_90");
    assertTrue(afterSpills.ptx().contains("// form middle"), "not the middle form");
    assertNull(GeneratedModule.rejection(afterSpills.report(kernel.entry())));
    CompiledKernel first = GeneratedModule.compile(fits, "sm_90");
    assertTrue(first.ptx().contains("// form first"), "not the first form");
    assertNull(GeneratedModule.rejection(first.report(kernel.entry())));
  }

  /** Where every form spills at its ask, the last is compiled again with its ask lifted. */
  @Test
  @RequiresPtxCompiler
  void whereNoFormFitsTheLastIsCompiledWithItsAskLifted() throws Exception {
    GeneratedKernel kernel = keyed();
    GeneratedKernel chain = form(kernel, "first", true,
        form(kernel, "middle", true, form(kernel, "last", true, null)));

    CompiledKernel used = GeneratedModule.compile(chain, "sm_90");
    assertTrue(used.ptx().contains("// form last"), "not the last form");
    assertTrue(used.ptx().contains(".maxnreg " + GeneratedModule.MAX_REGISTERS + "\n"));
    CompileReport report = used.report(kernel.entry());
    assertNull(GeneratedModule.rejection(report), report.summary());
    assertTrue(report.registers() > 24, report.summary());
  }

  /** What compileAgainAhead starts on a compile thread is what compileAgain gives. */
  @Test
  @RequiresPtxCompiler
  void compilingAgainAheadGivesWhatCompilingAgainGives() throws Exception {
    GeneratedKernel tight = form(keyed(), "only", true, null);
    CompiledKernel again = GeneratedModule.compileAgain(tight, "sm_90");
    CompiledKernel ahead = GeneratedModule.compiledAgain(
        GeneratedModule.compileAgainAhead(tight, "sm_90"));
    assertEquals(again.options(), ahead.options());
    assertEquals(again.ptx(), ahead.ptx());
    assertEquals(again.report(tight.entry()).registers(), ahead.report(tight.entry()).registers());
    assertNull(GeneratedModule.rejection(ahead.report(tight.entry())));
  }

  /**
   * A compilation whose leaner forms were compiled has compileAgain started beside them, its
   * result kept only where the last form is rejected: here the last form fits once its ask is
   * lifted, so it gives null, whether the leaner forms started with the first form's compile or
   * after its rejection. The form used is compile's. A kernel of one form has none; it fits the
   * registers, as both first forms here do (24 asked, more taken).
   */
  @Test
  @RequiresPtxCompiler
  void aCompilationCompilesAgainOnlyWhereTheLastFormIsRejected() throws Exception {
    GeneratedKernel kernel = keyed();
    GeneratedKernel chain = form(kernel, "first", true, form(kernel, "last", true, null));
    for (GeneratedKernel k : List.of(chain, atOnce(chain))) {
      GeneratedModule.Compilation compilation = GeneratedModule.compilation(k, "sm_90");
      assertEquals(GeneratedModule.compile(chain, "sm_90").ptx(), compilation.used().ptx());
      assertTrue(compilation.firstFormFits());
      assertNotNull(compilation.againAhead());
      assertNull(GeneratedModule.compiledAgain(compilation.againAhead()));
    }
    GeneratedModule.Compilation alone = GeneratedModule.compilation(kernel, "sm_90");
    assertNull(alone.againAhead());
    assertTrue(alone.firstFormFits());
  }

  /** {@code kernel} with {@link GeneratedKernel#leanerAtOnce}. */
  private static GeneratedKernel atOnce(GeneratedKernel kernel) {
    return new GeneratedKernel(kernel.entry(), kernel.key(), kernel.ptx(), kernel.target(),
        kernel.leaner(), true);
  }

  /** {@code kernel} marked with a comment naming the form, asking for 24 registers if tight. */
  private static GeneratedKernel form(GeneratedKernel kernel, String name, boolean tight,
      GeneratedKernel leaner) {
    String asked = ".maxnreg " + AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS + "\n";
    String ptx = kernel.ptx().replace(asked, (tight ? ".maxnreg 24\n" : asked)
        + "// form " + name + "\n");
    return new GeneratedKernel(kernel.entry(), kernel.key() + ";" + name, ptx, kernel.target(),
        leaner);
  }
}
