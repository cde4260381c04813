package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: the generated filter-project kernels of random programs (RandomPrograms, every
 * other one probing join tables, over random column layouts: nullable or not, plain, GPU-FOR or
 * GPU-DFOR) compile with the in-jar PTX compiler for sm_90 with no stack frame, no spills and at
 * most 128 registers, and the generator declines a program only for what it says it does not
 * cover (opcodes without an emitter, join tables with string keys). The one exception allowed: a kernel
 * may be rejected for a few bytes of stack and spills, in at most 1 program of 10 (such a
 * pipeline runs on the interpreter). The in-jar ptxas (12.0) spills around the calls a kernel
 * makes per row: the prelude's string and calendar helpers, and the routines it compiles
 * divisions and remainders into; CUDA 13's ptxas compiles the same kernels without spills. Whether the kernels compute the right
 * thing is CudaGeneratedFilterProjectTest's job, on a GPU.
 */
class GeneratedFilterProjectCompileTest {
  private static final int PROGRAMS = 1000;
  private static final int MAX_INPUT_COLUMNS = 5;
  private static final int MAX_REGISTERS = GeneratedModule.MAX_REGISTERS;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void randomProgramsCompileWithoutStackOrSpills() {
    AtomicInteger generated = new AtomicInteger();
    AtomicInteger declined = new AtomicInteger();
    AtomicInteger rejected = new AtomicInteger();
    AtomicLong slowest = new AtomicLong();
    AtomicInteger mostRegisters = new AtomicInteger();
    IntStream.range(0, PROGRAMS).parallel().forEach(seed -> {
      Random random = new Random(seed);
      List<ColumnType> types = randomInputTypes(random);
      Program program = randomProgram(seed, types, random);
      List<InputSpec> inputs = randomLayouts(types, random);
      Set<Opcode> uncovered = FilterProjectGenerator.uncoveredOpcodes(program);
      GeneratedKernel kernel;
      try {
        kernel = FilterProjectGenerator.generate(program, inputs);
      } catch (CodegenUnsupportedException e) {
        if (FilterProjectGenerator.whyNotGenerated(program) == null) {
          fail("declined a program of covered opcodes: " + e.getMessage() + "\n"
              + program.disassemble());
        }
        declined.incrementAndGet();
        return;
      }
      assertTrue(uncovered.isEmpty(), "generated a kernel despite " + uncovered);
      CompiledKernel compiled;
      try {
        compiled = GeneratedModule.compile(kernel, "sm_90");
      } catch (RuntimeException e) {
        throw new AssertionError("seed " + seed + " " + inputs + ": " + e.getMessage() + "\n"
            + program.disassemble(), e);
      }
      CompileReport report = compiled.report(kernel.entry());
      String rejection = GeneratedModule.rejection(report);
      if (rejection != null && !report.clean() && report.registers() <= MAX_REGISTERS) {
        rejected.incrementAndGet();
        return;
      }
      assertNull(rejection, () -> "seed " + seed + " " + inputs + "\n" + program.disassemble());
      generated.incrementAndGet();
      slowest.accumulateAndGet(compiled.compileNanos(), Math::max);
      mostRegisters.accumulateAndGet(report.registers(), Math::max);
    });
    System.out.printf("generated kernels: %d compiled cleanly (at most %d registers, slowest"
        + " compile %.0f ms), %d declined (join tables of more keys than a probe compares), %d"
        + " rejected for a few bytes of spills%n", generated.get(), mostRegisters.get(),
        slowest.get() / 1e6, declined.get(), rejected.get());
    assertEquals(PROGRAMS, generated.get() + declined.get() + rejected.get());
    assertTrue(rejected.get() <= PROGRAMS / 10, rejected.get() + " kernels spilled");
    assertTrue(generated.get() >= PROGRAMS / 4, "too few programs were generated: "
        + generated.get() + " of " + PROGRAMS);
  }

  /**
   * Projections of 1 to 12 GPU-DFOR INT columns, all of them and behind a filter, compile, and
   * compile again with the runtime's other options where the first kernel is rejected (a few
   * bytes of spills, or more than 128 registers for the wide ones: the interpreter then runs
   * them). With the in-jar compiler's defaults alone, the projection of five crashed the JVM (a
   * SIGSEGV inside ptxas), as did SSB filter-projects over eight: GeneratedModule compiles such
   * kernels with its DFOR_OPTION. In surefire's forked JVM, a crash fails the build.
   */
  @Test
  void projectionsOfGpuDforColumnsCompileWithoutCrashing() throws CodegenUnsupportedException {
    for (int n = 1; n <= 12; n++) {
      List<ColumnType> types = Collections.nCopies(n, ColumnType.INT);
      List<InputSpec> inputs = Collections.nCopies(n,
          new InputSpec(ColumnType.INT, Encoding.DFOR, false));
      ProgramBuilder filtered = new ProgramBuilder(types, false);
      int keep = filtered.emitNew(Opcode.CMP_INT, filtered.loadColumn(0),
          filtered.loadConstant(5), Comparison.GT.code());
      List<Program.Output> outputs = new ArrayList<>();
      for (int c = 0; c < n; c++) {
        outputs.add(new Program.Output(filtered.loadColumn(c), ColumnType.INT));
      }
      for (Program program : List.of(ProgramBuilder.identity(types, false),
          filtered.build(keep, outputs))) {
        GeneratedKernel kernel = FilterProjectGenerator.generate(program, inputs);
        assertTrue(GeneratedModule.decodesDforTiles(kernel), kernel.entry());
        CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
        assertEquals(kernel.entry(), report.function());
        if (n <= 8 && n != 2) {
          // The narrow ones compile clean at once (all of two leave 4 bytes of spills).
          assertNull(GeneratedModule.rejection(report), report::summary);
        } else if (GeneratedModule.rejection(report) != null) {
          GeneratedModule.compileAgain(kernel, "sm_90");
        }
      }
    }
  }

  /** One to {@link #MAX_INPUT_COLUMNS} random input column types. */
  static List<ColumnType> randomInputTypes(Random random) {
    return RandomBatches.randomTypes(random, 1 + random.nextInt(MAX_INPUT_COLUMNS));
  }

  /** A random program over {@code types}; every other one (odd seeds) probes join tables too. */
  static Program randomProgram(int seed, List<ColumnType> types, Random random) {
    return seed % 2 == 0
        ? RandomPrograms.generate(types, random.nextBoolean(), random.nextLong())
        : RandomPrograms.generateProbing(types, random.nextBoolean(), random.nextLong())
            .program();
  }

  /** A layout per column as the cache and uploads make them. */
  static List<InputSpec> randomLayouts(List<ColumnType> types, Random random) {
    List<InputSpec> inputs = new ArrayList<>();
    for (ColumnType type : types) {
      boolean encodable = type.id() != TypeId.FLOAT && type.id() != TypeId.DOUBLE
          && type.id() != TypeId.BOOLEAN;
      Encoding encoding = encodable ? Encoding.values()[random.nextInt(3)] : Encoding.PLAIN;
      inputs.add(new InputSpec(type, encoding, random.nextBoolean()));
    }
    return inputs;
  }
}
