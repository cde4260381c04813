package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: wide projections (RandomPrograms.wideProjection, 20 to 32 outputs over random
 * layouts), most of whose generated kernels need more than 128 registers to hold every output's
 * buffer addresses (37 of 40 here, 122 to 254 registers), compile within them (all but one in 10:
 * 39 of 40, 32 to 140 registers) in their POINTERS_PER_USE form
 * (-Dtessera.codegen.outputPointersPerUse=true, FilterProjectGenerator.Form; this class turns it
 * on), which reads an output's addresses where a row is written; the kernel's first form is the
 * same text either way. That the form writes the right rows is the CUDA suites' (with the
 * switch on).
 */
class OutputPointersPerUseCompileTest {
  private static final String PROPERTY = "tessera.codegen.outputPointersPerUse";
  private static final int PROGRAMS = 40;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @AfterEach
  void switchOff() {
    System.clearProperty(PROPERTY);
  }

  @Test
  void wideProjectionsCompileWithinTheRegistersWithTheSwitch() throws Exception {
    int overWithout = 0;
    int overWith = 0;
    for (int seed = 0; seed < PROGRAMS; seed++) {
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
      Program program = RandomPrograms.wideProjection(types, 20 + random.nextInt(13),
          random.nextLong());
      List<InputSpec> inputs = GeneratedFilterProjectCompileTest.randomLayouts(types, random);
      String where = "seed " + seed + " " + inputs + "\n" + program.disassemble();

      GeneratedKernel without = FilterProjectGenerator.generate(program, inputs);
      CompileReport report = GeneratedModule.compile(without, "sm_90").report(without.entry());
      if (report.registers() > GeneratedModule.MAX_REGISTERS) {
        overWithout++;
      }

      System.setProperty(PROPERTY, "true");
      GeneratedKernel with = FilterProjectGenerator.generate(program, inputs);
      System.clearProperty(PROPERTY);
      assertEquals(without.ptx(), with.ptx(), where);
      CompileReport used = GeneratedModule.compile(with, "sm_90").report(with.entry());
      String rejection = GeneratedModule.rejection(used);
      if (rejection != null) {
        assertTrue(used.clean(), () -> used.summary() + "\n" + where);
        overWith++;
      }
    }
    System.out.printf("wide projections: %d of %d kernels over %d registers without their"
        + " pointers-per-use form, %d with it%n", overWithout, PROGRAMS,
        GeneratedModule.MAX_REGISTERS, overWith);
    assertTrue(overWithout >= PROGRAMS / 2, overWithout + " of " + PROGRAMS
        + " wide projections over the registers: the test no longer reaches the form");
    assertTrue(overWith <= PROGRAMS / 10, overWith + " of " + PROGRAMS
        + " wide projections over the registers with their pointers-per-use form");
  }
}
