package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.bench.WideProjectionBench;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: wide projections (RandomPrograms.wideProjection, 20 to 32 outputs over random
 * layouts), most of whose generated kernels need more than 128 registers in their first forms
 * (every output's buffer addresses held through phase B: 37 of 40 here, 122 to 254 registers),
 * compile within them as the runtime compiles them (GeneratedKernels: GeneratedModule.compile,
 * then compileAgain), which takes their last form, POINTERS_PER_USE (FilterProjectGenerator.Form:
 * an output's addresses read where a row is written): all 40 here (the test allows one in ten;
 * 39 of 40 in that form's first compile, at -O3). That the form writes the right rows is the
 * CUDA suites' (CudaFilterProjectTest.wideProjectionsMatchTheHostReference). And the generator
 * expects it ({@link GeneratedKernel#leanerAtOnce}, so that the leaner forms compile from the
 * start) of most of them, and wrongly of few.
 */
class WideProjectionCompileTest {
  private static final int PROGRAMS = 40;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void wideProjectionsCompileWithinTheRegistersInTheirLastForm() throws Exception {
    int overBeforeLast = 0;
    int over = 0;
    int expected = 0;
    int expectedWrongly = 0;
    for (int seed = 0; seed < PROGRAMS; seed++) {
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
      Program program = RandomPrograms.wideProjection(types, 20 + random.nextInt(13),
          random.nextLong());
      List<InputSpec> inputs = GeneratedFilterProjectCompileTest.randomLayouts(types, random);
      String where = "seed " + seed + " " + inputs + "\n" + program.disassemble();

      GeneratedKernel kernel = FilterProjectGenerator.generate(program, inputs);
      List<GeneratedKernel> forms = new ArrayList<>();
      for (GeneratedKernel form = kernel; form != null; form = form.leaner()) {
        forms.add(new GeneratedKernel(form.entry(), form.key(), form.ptx(), form.target()));
      }
      if (forms.subList(0, forms.size() - 1).stream().noneMatch(f -> fits(f))) {
        overBeforeLast++;
      }
      if (kernel.leanerAtOnce()) {
        expected++;
        if (fits(forms.get(0))) {
          expectedWrongly++;
        }
      }

      CompileReport used = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
      if (GeneratedModule.rejection(used) != null
          && GeneratedModule.compileAgain(kernel, "sm_90") == null) {
        assertTrue(used.clean(), () -> used.summary() + "\n" + where);
        over++;
      }
    }
    System.out.printf("wide projections: %d of %d kernels over %d registers before their last"
        + " form, %d in it; %d expected over in the first form, %d of them wrongly%n",
        overBeforeLast, PROGRAMS, GeneratedModule.MAX_REGISTERS, over, expected, expectedWrongly);
    assertTrue(overBeforeLast >= PROGRAMS / 2, overBeforeLast + " of " + PROGRAMS
        + " wide projections over the registers before the last form: the test no longer"
        + " reaches it");
    assertTrue(over <= PROGRAMS / 10, over + " of " + PROGRAMS
        + " wide projections over the registers in their last form");
    assertTrue(expected >= PROGRAMS / 2, "the generator expects " + expected + " of " + PROGRAMS
        + " wide projections' first forms over the registers");
    assertTrue(expectedWrongly <= PROGRAMS / 10, expectedWrongly + " of " + PROGRAMS
        + " wide projections expected over the registers in their first form fit it");
  }

  /**
   * WideProjectionBench's kernel as the runtime compiles it (GeneratedKernels.load): its first
   * form over the registers, so the driver's compiler is not tried, and its last form, the one
   * used, which spills at -O3, compiled again (-O1) beside the leaner forms, clean.
   */
  @Test
  void theBenchmarksWideProjectionIsCompiledAgainFromTheStartWithoutTheDriver()
      throws Exception {
    Program program = WideProjectionBench.program();
    List<InputSpec> inputs = program.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    GeneratedKernel kernel = FilterProjectGenerator.generate(program, inputs);
    assertTrue(kernel.leanerAtOnce());

    GeneratedModule.Compilation compilation = GeneratedModule.compilation(kernel, "sm_90");
    assertFalse(compilation.firstFormFits());
    CompileReport used = compilation.used().report(kernel.entry());
    assertFalse(used.clean(), used.summary());
    assertNotNull(compilation.againAhead());
    CompileReport again = GeneratedModule.compiledAgain(compilation.againAhead())
        .report(kernel.entry());
    assertNull(GeneratedModule.rejection(again), again.summary());
  }

  /** Whether {@code form}, compiled alone, is a kernel the runtime would use. */
  private static boolean fits(GeneratedKernel form) {
    return GeneratedModule.rejection(
        GeneratedModule.compile(form, "sm_90").report(form.entry())) == null;
  }
}
