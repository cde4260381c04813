package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.KernelFeatures;
import dev.tessera.gpu.codegen.LocalTableLayout;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: the generated aggregate-update kernels of random pipelines (RandomPrograms,
 * every other one probing join tables, over random column layouts) feeding random aggregations
 * (0 to 4 keys of the program's first outputs, then a function per other output, of a kind its
 * type admits, and COUNT(*)) compile with the in-jar PTX compiler for sm_90 with no stack frame,
 * no spills and at most 128 registers; the generator declines only what it says it does not
 * cover. As for the filter-project kernels, at most 1 kernel in 10 may be rejected for a few bytes
 * of spills (the pipeline then runs on the interpreter). A kernel that reads no GPU-DFOR column
 * holds one copy of the group's update, run for each of a thread's items (a copy per item would
 * make the compile four times slower). Whether the kernels compute the right thing is the CUDA
 * aggregate suites' job, on a GPU.
 */
class GeneratedAggregateCompileTest {
  private static final int PIPELINES = 200;
  /** The pipelines whose kernels that fill a multiprocessor compile with compact tables. */
  private static final int COMPACT_PIPELINES = 120;

  @BeforeAll
  static void compilerLoads() {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
  }

  @Test
  void randomAggregatePipelinesCompileWithoutStackOrSpills() {
    AtomicInteger generated = new AtomicInteger();
    AtomicInteger declined = new AtomicInteger();
    AtomicInteger rejected = new AtomicInteger();
    AtomicLong slowest = new AtomicLong();
    AtomicInteger mostRegisters = new AtomicInteger();
    AtomicInteger inRegisters = new AtomicInteger();
    AtomicInteger inRuns = new AtomicInteger();
    AtomicInteger inline = new AtomicInteger();
    AtomicInteger prefiltered = new AtomicInteger();
    AtomicInteger atFilterBit = new AtomicInteger();
    IntStream.range(0, PIPELINES).parallel().forEach(seed -> {
      Pipeline pipeline = Pipeline.of(seed);
      Program program = pipeline.program();
      AggregateSpec spec = pipeline.spec();
      List<InputSpec> inputs = pipeline.inputs();
      GeneratedKernel kernel;
      try {
        // Half the probing pipelines for tables that all have a probe filter.
        BitSet probeFiltered = new BitSet();
        if (seed % 4 == 1) {
          probeFiltered.set(0, program.tables().size());
        }
        kernel = AggregateUpdateGenerator.generate(program, inputs, spec, features(seed),
            probeFiltered);
      } catch (CodegenUnsupportedException e) {
        if (AggregateUpdateGenerator.whyNotGenerated(program, spec) == null) {
          fail("declined a pipeline it covers: " + e.getMessage() + "\n"
              + program.disassemble());
        }
        declined.incrementAndGet();
        return;
      }
      CompiledKernel compiled;
      try {
        compiled = GeneratedModule.compile(kernel, "sm_90");
      } catch (RuntimeException e) {
        throw new AssertionError("seed " + seed + " " + inputs + " " + spec + ": "
            + e.getMessage() + "\n" + program.disassemble(), e);
      }
      CompileReport report = compiled.report(kernel.entry());
      if (!compiledClean(report, rejected, () -> "seed " + seed + " " + inputs + " " + spec
          + "\n" + program.disassemble())) {
        return;
      }
      generated.incrementAndGet();
      if (kernel.ptx().contains("onto the warp's stack")) {
        prefiltered.incrementAndGet(); // rows wait for a probe in their warp's stack
        if (kernel.ptx().contains("the keys' bit in the probe filter of join table")) {
          atFilterBit.incrementAndGet(); // for its walk, after its probe filter's bit
        }
      }
      if (kernel.ptx().contains("the thread's accumulators")) {
        inRegisters.incrementAndGet(); // a global aggregate accumulating in registers
        if (kernel.ptx().contains(AggregateUpdateGenerator.RUN_MARK)) {
          inRuns.incrementAndGet(); // its thread's rows consecutive, sharing GPU-FOR headers
        }
      } else {
        inline.incrementAndGet(); // the group's update written into the kernel
        if (inputs.stream().noneMatch(i -> i.encoding() == Encoding.DFOR)) {
          // No item reads registers of its own: one copy of the update, run for each item.
          assertEquals(1, occurrences(kernel.ptx(), UPDATE_MARK), () -> "seed " + seed);
        } else if (GeneratedModule.decodesDforTiles(kernel)) {
          // Each item reads its own registers of the decoded tiles: a copy of the update each.
          assertTrue(occurrences(kernel.ptx(), UPDATE_MARK) > 1, () -> "seed " + seed);
        }
      }
      slowest.accumulateAndGet(compiled.compileNanos(), Math::max);
      mostRegisters.accumulateAndGet(report.registers(), Math::max);
    });
    System.out.printf("generated aggregate kernels: %d compiled cleanly (%d accumulating in"
        + " registers, %d of them over runs of GPU-FOR rows, %d updating groups inline, %d with"
        + " prefiltered rows, %d of them waiting after a probe filter's bit; at most %d"
        + " registers, slowest compile %.0f ms), %d declined, %d rejected for a few bytes of"
        + " spills%n", generated.get(), inRegisters.get(), inRuns.get(), inline.get(),
        prefiltered.get(), atFilterBit.get(), mostRegisters.get(),
        slowest.get() / 1e6, declined.get(), rejected.get());
    assertEquals(PIPELINES, generated.get() + declined.get() + rejected.get());
    assertTrue(rejected.get() <= PIPELINES / 10, rejected.get() + " kernels spilled");
    assertTrue(generated.get() >= PIPELINES / 4, "too few pipelines were generated: "
        + generated.get() + " of " + PIPELINES);
    assertTrue(inRegisters.get() > 0, "no global aggregate accumulated in registers");
    assertTrue(inRuns.get() > 0, "no global aggregate read runs of GPU-FOR rows");
    assertTrue(inline.get() > 0, "no kernel updated its groups inline");
    assertTrue(prefiltered.get() > 0, "no kernel held rows for a probe (PrefilteredRows)");
    assertTrue(atFilterBit.get() > 0, "no kernel held rows after a probe filter's bit");
    assertTrue(atFilterBit.get() < prefiltered.get(), "no kernel held rows behind a guard");
  }

  /**
   * The same random pipelines' kernels that fill a multiprocessor, which take the compact
   * per-block table (LocalTableLayout), unsliced and, where they may, in 3 slices: they call the
   * compact table's reset and merge and compile as the others do (at most 1 in 10 rejected for a
   * few bytes of spills).
   */
  @Test
  void compactTablesOfRandomPipelinesCompileWithoutStackOrSpills() {
    int compiled = compileWholeMultiprocessorKernels(Pipeline::of, "compact");
    assertTrue(compiled >= 20, "too few kernels fill a multiprocessor: " + compiled);
  }

  /**
   * With {@link LocalTableLayout#LEAN_PROPERTY} set, the kernels of the same random pipelines
   * and of as many whose program passes its input columns through (where a function's input is
   * a column that cannot be NULL, the lean table leaves out its seen flag): those whose table is
   * lean call the lean reset and merge, the others the compact ones, and all compile as the
   * others do; the generator's check that a left-out flag's input cannot be NULL holds.
   */
  @Test
  void leanTablesOfRandomPipelinesCompileWithoutStackOrSpills() {
    String was = System.setProperty(LocalTableLayout.LEAN_PROPERTY, "true");
    try {
      AtomicInteger lean = new AtomicInteger();
      IntFunction<Pipeline> pipelines = seed -> {
        Pipeline pipeline = seed % 2 == 0 ? Pipeline.of(seed) : Pipeline.passingColumns(seed);
        if (LocalTableLayout.of(pipeline.program(), pipeline.spec(), pipeline.inputs(), true)
            .lean()) {
          lean.incrementAndGet();
        }
        return pipeline;
      };
      int compiled = compileWholeMultiprocessorKernels(pipelines, "lean");
      assertTrue(compiled >= 20, "too few kernels fill a multiprocessor: " + compiled);
      assertTrue(lean.get() >= 20, "too few lean tables: " + lean.get());
    } finally {
      if (was == null) {
        System.clearProperty(LocalTableLayout.LEAN_PROPERTY);
      } else {
        System.setProperty(LocalTableLayout.LEAN_PROPERTY, was);
      }
    }
  }

  /**
   * The kernels that fill a multiprocessor of {@link #COMPACT_PIPELINES} pipelines, unsliced
   * and, where they may, in 3 slices: each calls its table's reset and merge (the lean ones
   * where its layout is lean, {@code what}: the others'), and they compile as the others do (at
   * most 1 in 10 rejected for a few bytes of spills). Returns the kernels compiled cleanly.
   */
  private static int compileWholeMultiprocessorKernels(IntFunction<Pipeline> pipelines,
      String what) {
    AtomicInteger compiled = new AtomicInteger();
    AtomicInteger rejected = new AtomicInteger();
    IntStream.range(0, COMPACT_PIPELINES).parallel().forEach(seed -> {
      Pipeline pipeline = pipelines.apply(seed);
      Program program = pipeline.program();
      AggregateSpec spec = pipeline.spec();
      List<InputSpec> inputs = pipeline.inputs();
      if (!AggregateUpdateGenerator.fillsMultiprocessor(program, spec, inputs)
          || AggregateUpdateGenerator.whyNotGenerated(program, spec) != null) {
        return;
      }
      String merge = LocalTableLayout.of(program, spec, inputs, true).lean()
          ? "tessera_agg_lean_merge" : "tessera_agg_compact_merge";
      for (int slices : AggregateUpdateGenerator.slicesGroups(program, spec, inputs)
          ? new int[] {1, 3} : new int[] {1}) {
        GeneratedKernel kernel;
        try {
          kernel = AggregateUpdateGenerator.generate(program, inputs, spec, features(seed),
              new BitSet(), slices);
        } catch (CodegenUnsupportedException e) {
          throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        }
        assertTrue(kernel.ptx().contains(merge), () -> "seed " + seed + ": " + merge);
        CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
        if (compiledClean(report, rejected, () -> "seed " + seed + " " + inputs + " " + spec
            + "\n" + program.disassemble())) {
          compiled.incrementAndGet();
        }
      }
    });
    System.out.printf("%s tables: %d kernels compiled cleanly, %d rejected for a few bytes"
        + " of spills%n", what, compiled.get(), rejected.get());
    assertTrue(rejected.get() * 10 <= compiled.get() + rejected.get(),
        rejected.get() + " kernels spilled");
    return compiled.get();
  }

  /**
   * Pipeline {@code seed}: random input columns, a program over them (every other one probing join
   * tables), a random aggregation of its outputs and random layouts of its columns.
   */
  private record Pipeline(Program program, AggregateSpec spec, List<InputSpec> inputs) {
    static Pipeline of(int seed) {
      Random random = new Random(seed);
      List<ColumnType> types = GeneratedFilterProjectCompileTest.randomInputTypes(random);
      Program program = GeneratedFilterProjectCompileTest.randomProgram(seed, types, random);
      AggregateSpec spec = randomSpec(program, random);
      return new Pipeline(program, spec,
          GeneratedFilterProjectCompileTest.randomLayouts(types, random));
    }

    /** As {@link #of}, but the program passes the input columns through (as Spark's do). */
    static Pipeline passingColumns(int seed) {
      Random random = new Random(seed);
      List<ColumnType> types = GeneratedFilterProjectCompileTest.randomInputTypes(random);
      Program program = ProgramBuilder.identity(types, false);
      AggregateSpec spec = randomSpec(program, random);
      return new Pipeline(program, spec,
          GeneratedFilterProjectCompileTest.randomLayouts(types, random));
    }
  }

  /**
   * Whether the compile is clean. One rejected for a few bytes of stack or spills alone (within
   * the registers) is counted in {@code rejected}: the pipeline then runs on the interpreter,
   * which at most 1 kernel in 10 may. Any other rejection fails, naming the {@code pipeline}.
   */
  private static boolean compiledClean(CompileReport report, AtomicInteger rejected,
      Supplier<String> pipeline) {
    String rejection = GeneratedModule.rejection(report);
    if (rejection != null && !report.clean()
        && report.registers() <= GeneratedModule.MAX_REGISTERS) {
      rejected.incrementAndGet();
      return false;
    }
    assertNull(rejection, pipeline);
    return true;
  }

  /**
   * Half the pipelines as an sm_90 device gets them (redux.sync in the warp's reductions), half as
   * a Turing device does (shuffles), both compiled for sm_90.
   */
  private static KernelFeatures features(int seed) {
    return seed / 2 % 2 == 0 ? KernelFeatures.forArch("sm_90") : KernelFeatures.OLDEST;
  }

  /** The comment GroupedAggregateEmitter writes before each copy of the group's update. */
  private static final String UPDATE_MARK = "hash_aggregate.cuh AggregateItem, inline";

  private static int occurrences(String text, String part) {
    int n = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      n++;
    }
    return n;
  }

  /**
   * Keys: the program's first 0 to 4 outputs; a function per other output, as its type admits
   * (CudaHashAggregate's rules); and COUNT(*).
   */
  static AggregateSpec randomSpec(Program program, Random random) {
    List<ColumnType> types = program.outputs().stream().map(Program.Output::type).toList();
    int keys = random.nextInt(Math.min(4, types.size()) + 1);
    List<AggregateFunction> functions = new ArrayList<>();
    functions.add(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG));
    for (int c = keys; c < types.size(); c++) {
      ColumnType t = types.get(c);
      TypeId id = t.id();
      if (t.isString()) {
        functions.add(new AggregateFunction(Kind.COUNT, c, ColumnType.LONG));
      } else if (id == TypeId.DECIMAL) {
        functions.add(new AggregateFunction(Kind.SUM_DECIMAL, c,
            ColumnType.decimal(Math.min(18, t.precision() + 1), t.scale())));
      } else if (id == TypeId.BYTE || id == TypeId.SHORT || id == TypeId.INT
          || id == TypeId.LONG) {
        // SUM into LONG, as Spark's integral sums; MAX into its own type or a LONG.
        Kind kind = random.nextBoolean() ? Kind.SUM : Kind.MAX;
        boolean wide = random.nextBoolean();
        functions.add(new AggregateFunction(kind, c,
            kind == Kind.SUM || wide ? ColumnType.LONG : t));
      } else {
        functions.add(new AggregateFunction(random.nextBoolean() ? Kind.MIN : Kind.MAX, c, t));
      }
    }
    return new AggregateSpec(types, keys, functions, program.ansi());
  }
}
