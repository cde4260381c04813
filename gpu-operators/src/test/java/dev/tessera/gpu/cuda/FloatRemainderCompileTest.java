package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.KernelFeatures;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: random pipelines with FLOAT or DOUBLE % and pmod (REM_F32, REM_F64, PMOD_F32,
 * PMOD_F64) generate filter-project and aggregate-update kernels that compile with the in-jar
 * PTX compiler for sm_90 without stack, spills or more than 128 registers (at most 1 in 10
 * rejected for a few bytes of spills, as for the others: such a pipeline runs on the
 * interpreter). That the routine computes Java's remainder is
 * FloatRemainderTest's (its PTX run on the CPU); that the GPU does is the CUDA differential
 * suites'.
 */
class FloatRemainderCompileTest {
  /** The comment FloatRemainder writes before its long division. */
  private static final String LONG_DIVISION = "fmod: |x| > |y|";
  private static final int PIPELINES = 120;
  private static final Set<Opcode> REMAINDERS = EnumSet.of(Opcode.REM_F32, Opcode.REM_F64,
      Opcode.PMOD_F32, Opcode.PMOD_F64);

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void pipelinesWithFloatRemaindersCompileWithoutStackOrSpills() {
    List<Integer> seeds = seedsWithFloatRemainders();
    AtomicInteger compiled = new AtomicInteger();
    AtomicInteger rejected = new AtomicInteger();
    AtomicInteger divisions = new AtomicInteger();
    seeds.parallelStream().forEach(seed -> {
      Random random = new Random(seed);
      Program program = program(seed);
      List<ColumnType> types = program.inputTypes();
      List<InputSpec> inputs = GeneratedFilterProjectCompileTest.randomLayouts(types, random);
      assertNull(FilterProjectGenerator.whyNotGenerated(program), program::disassemble);
      for (GeneratedKernel kernel : kernels(seed, program, inputs, random)) {
        if (kernel.ptx().contains(LONG_DIVISION)) {
          divisions.incrementAndGet(); // elsewhere no kept value reads the remainder
        }
        CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
        String rejection = GeneratedModule.rejection(report);
        if (rejection != null && !report.clean()
            && report.registers() <= GeneratedModule.MAX_REGISTERS) {
          rejected.incrementAndGet();
          continue;
        }
        assertNull(rejection, () -> "seed " + seed + " " + inputs + "\n"
            + program.disassemble());
        compiled.incrementAndGet();
      }
    });
    System.out.printf("float remainders: %d kernels compiled cleanly, %d rejected for a few"
        + " bytes of spills; %d divide%n", compiled.get(), rejected.get(), divisions.get());
    int kernels = compiled.get() + rejected.get();
    assertTrue(kernels >= 2 * PIPELINES, kernels + " kernels");
    assertTrue(divisions.get() >= kernels / 4, divisions.get() + " of " + kernels
        + " kernels divide");
    assertTrue(rejected.get() <= kernels / 10, rejected.get() + " kernels spilled");
  }

  /** The program's filter-project kernel, and its aggregate-update kernel of a random spec. */
  private static List<GeneratedKernel> kernels(int seed, Program program, List<InputSpec> inputs,
      Random random) {
    List<GeneratedKernel> kernels = new ArrayList<>();
    try {
      kernels.add(FilterProjectGenerator.generate(program, inputs));
      AggregateSpec spec = GeneratedAggregateCompileTest.randomSpec(program, random);
      kernels.add(AggregateUpdateGenerator.generate(program, inputs, spec, KernelFeatures.OLDEST,
          new BitSet()));
    } catch (CodegenUnsupportedException e) {
      throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
    }
    return kernels;
  }

  /** Random program {@code seed}: every other one probes join tables. */
  private static Program program(int seed) {
    Random random = new Random(seed);
    List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
    return seed % 2 == 0
        ? RandomPrograms.generate(types, random.nextBoolean(), random.nextLong())
        : RandomPrograms.generateProbing(types, random.nextBoolean(), random.nextLong())
            .program();
  }

  /** Seeds of the first PIPELINES programs with a float remainder. */
  private static List<Integer> seedsWithFloatRemainders() {
    List<Integer> seeds = new ArrayList<>();
    for (int seed = 0; seeds.size() < PIPELINES; seed++) {
      Program program = program(seed);
      int[] code = program.code();
      for (int i = 0; i < program.instructionCount(); i++) {
        if (REMAINDERS.contains(Opcode.ofCode(code[i * Program.WORDS]))) {
          seeds.add(seed);
          break;
        }
      }
    }
    return seeds;
  }
}
