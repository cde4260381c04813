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
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: random pipelines that probe join tables with a string key (RandomPrograms'
 * probing programs, over random column layouts) generate filter-project and aggregate-update
 * kernels (most of which compare the keys' bytes at the walk: elsewhere nothing kept reads the
 * probe) that compile with the in-jar PTX compiler for sm_90 without stack, spills or more than
 * 128 registers (at most 1 in 10 rejected for a few bytes of spills, as for the others: such a
 * pipeline runs on the interpreter). Whether they find the right rows is
 * CudaGeneratedHashJoinDifferentialTest's job, on a GPU.
 */
class StringProbeCompileTest {
  /** ProgramEmitter.STRING_KEY_COMPARE. */
  private static final String STRING_KEY_COMPARE = "a string key's bytes against the build row's";
  private static final int PIPELINES = 120;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void pipelinesProbingStringKeysCompileWithoutStackOrSpills() {
    List<Integer> seeds = seedsProbingStringKeys();
    AtomicInteger compiled = new AtomicInteger();
    AtomicInteger rejected = new AtomicInteger();
    AtomicInteger walks = new AtomicInteger();
    seeds.parallelStream().forEach(seed -> {
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
      Program program = RandomPrograms.generateProbing(types, random.nextBoolean(),
          random.nextLong()).program();
      List<InputSpec> inputs = GeneratedFilterProjectCompileTest.randomLayouts(types, random);
      assertNull(FilterProjectGenerator.whyNotGenerated(program), program::disassemble);
      for (GeneratedKernel kernel : kernels(seed, program, inputs, random)) {
        if (kernel.ptx().contains(STRING_KEY_COMPARE)) {
          walks.incrementAndGet(); // elsewhere the probe's row is read by nothing kept
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
    System.out.printf("string-key probes: %d kernels compiled cleanly, %d rejected for a few"
        + " bytes of spills; %d compare string keys at the walk%n", compiled.get(),
        rejected.get(), walks.get());
    int kernels = compiled.get() + rejected.get();
    assertTrue(kernels >= 2 * PIPELINES, kernels + " kernels");
    assertTrue(walks.get() >= kernels / 2, walks.get() + " of " + kernels
        + " kernels compare string keys");
    assertTrue(rejected.get() <= kernels / 10, rejected.get() + " kernels spilled");
  }

  /** The program's filter-project kernel, and its aggregate-update kernel of a random spec. */
  private static List<GeneratedKernel> kernels(int seed, Program program, List<InputSpec> inputs,
      Random random) {
    List<GeneratedKernel> kernels = new ArrayList<>();
    try {
      kernels.add(FilterProjectGenerator.generate(program, inputs));
      AggregateSpec spec = GeneratedAggregateCompileTest.randomSpec(program, random);
      BitSet probeFiltered = new BitSet();
      if (seed % 2 == 0) {
        probeFiltered.set(0, program.tables().size());
      }
      kernels.add(AggregateUpdateGenerator.generate(program, inputs, spec, KernelFeatures.OLDEST,
          probeFiltered));
    } catch (CodegenUnsupportedException e) {
      throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
    }
    return kernels;
  }

  /** Seeds of the first PIPELINES probing programs whose probes reach a string-keyed table. */
  private static List<Integer> seedsProbingStringKeys() {
    List<Integer> seeds = new ArrayList<>();
    for (int seed = 0; seeds.size() < PIPELINES; seed++) {
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(5));
      Program program = RandomPrograms.generateProbing(types, random.nextBoolean(),
          random.nextLong()).program();
      if (probesStringKeys(program)
          && FilterProjectGenerator.uncoveredOpcodes(program).isEmpty()) {
        seeds.add(seed);
      }
    }
    return seeds;
  }

  private static boolean probesStringKeys(Program program) {
    for (int i = 0; i < program.instructionCount(); i++) {
      int[] code = program.code();
      if (code[i * Program.WORDS] == Opcode.PROBE.code() && program.tables()
          .get(code[i * Program.WORDS + 2]).keyTypes().stream().anyMatch(ColumnType::isString)) {
        return true;
      }
    }
    return false;
  }
}
