package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: a kernel's module, which carries only the prelude functions the kernel calls,
 * compiles to the same kernel as the module with the whole prelude: the same registers, stack,
 * spills, shared memory and callees, and a cubin of the same size (the bytes differ only in the
 * numbers in the names of the kernel's shared variables). So leaving functions out can change
 * what a GPU runs in nothing but compile time.
 */
class GeneratedModulePreludeTest {
  private static final int PIPELINES = 12;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void filterAndAggregateKernelsCompileAsWithTheWholePrelude() {
    String whole = GeneratedModule.preludeText();
    int compared = 0;
    for (int seed = 0; seed < PIPELINES; seed++) {
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
      Program program = RandomPrograms.generate(types, random.nextBoolean(), random.nextLong());
      List<InputSpec> inputs = GeneratedFilterProjectCompileTest.randomLayouts(types, random);
      AggregateSpec spec = GeneratedAggregateCompileTest.randomSpec(program, random);
      GeneratedKernel kernel;
      try {
        kernel = seed % 2 == 0 ? FilterProjectGenerator.generate(program, inputs)
            : AggregateUpdateGenerator.generate(program, inputs, spec);
      } catch (CodegenUnsupportedException e) {
        continue;
      }
      String module = GeneratedModule.text(kernel);
      if (!kernel.ptx().contains("tessera_civil_part")) {
        assertFalse(module.contains(".func tessera_civil_part("), "an uncalled function stayed");
      }
      CompiledKernel shaken = PtxCompiler.compile(module, "sm_90");
      CompiledKernel full = PtxCompiler.compile(whole + "\n" + kernel.ptx(), "sm_90");
      assertEquals(withoutTimes(full.report(kernel.entry())),
          withoutTimes(shaken.report(kernel.entry())), "seed " + seed);
      assertEquals(full.cubin().length, shaken.cubin().length, "seed " + seed);
      compared++;
    }
    assertTrue(compared >= PIPELINES / 2, "only " + compared + " pipelines were generated");
  }

  private static String withoutTimes(CompileReport r) {
    return r.function() + " " + r.registers() + " " + r.stackFrameBytes() + " "
        + r.spillStoreBytes() + " " + r.spillLoadBytes() + " " + r.sharedMemoryBytes() + " "
        + r.callees();
  }

}
