package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Aggregate kernels whose groups are sliced among blocks (AggregateUpdateGenerator.slicesGroups,
 * the launch's GroupSlices), without a GPU: which kernels may, what their key and code hold, and
 * that they compile within their registers with no local memory. That they aggregate right is
 * the CUDA suites' (CudaGeneratedHashAggregateDifferentialTest).
 */
class SlicedGroupsTest {
  private static final KernelFeatures SM90 = KernelFeatures.forArch("sm_90");
  /** An H100's shared memory: per multiprocessor, per block (opted in), kept per block. */
  private static final KernelFeatures.SharedMemory H100 =
      new KernelFeatures.SharedMemory(233_472, 232_448, 1_024);
  private static final String SLICE_CHECK = "the row's slice of the groups";

  /** GROUP BY {@code keys}: COUNT(*), SUM and MAX of a LONG. */
  private static AggregateSpec spec(List<ColumnType> keys) {
    return LocalKeyTableTest.spec(keys);
  }

  private static List<InputSpec> inputs(AggregateSpec spec, boolean nullable) {
    return spec.inputTypes().stream().map(t -> new InputSpec(t, Encoding.PLAIN, nullable))
        .toList();
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean nullable, int slices)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs(spec, nullable), spec, SM90, new BitSet(), slices);
  }

  @Test
  void onlyKernelsOfAWholeMultiprocessorFindingEntriesByFixedWidthKeysSlice() {
    AggregateSpec oneKey = spec(List.of(ColumnType.LONG));
    AggregateSpec twoKeys = spec(List.of(ColumnType.INT, ColumnType.LONG));
    for (AggregateSpec spec : List.of(oneKey, twoKeys)) {
      assertTrue(AggregateUpdateGenerator.slicesGroups(
          ProgramBuilder.identity(spec.inputTypes(), false), spec, inputs(spec, false)),
          "" + spec);
    }
    assertTrue(AggregateUpdateGenerator.slicesGroups(
        ProgramBuilder.identity(oneKey.inputTypes(), false), oneKey, inputs(oneKey, true)),
        "one key that may be NULL");
    for (List<ColumnType> keys : List.of(List.of(ColumnType.STRING),
        List.of(ColumnType.LONG, ColumnType.LONG, ColumnType.LONG), List.<ColumnType>of())) {
      AggregateSpec spec = spec(keys);
      Program program = ProgramBuilder.identity(spec.inputTypes(), false);
      assertFalse(AggregateUpdateGenerator.slicesGroups(program, spec, inputs(spec, false)),
          "" + keys);
      assertThrows(IllegalArgumentException.class, () -> AggregateUpdateGenerator.generate(
          program, inputs(spec, false), spec, SM90, new BitSet(), 4));
    }
  }

  /** Two keys of which one may be NULL were slower sliced on an H100 (GroupSlices). */
  @Test
  void twoKeysMadeFromAColumnThatMayBeNullDoNotSlice() {
    AggregateSpec spec = spec(List.of(ColumnType.LONG, ColumnType.LONG));
    // c, k % 3, v: the second key computed from a column no key is.
    ProgramBuilder b = new ProgramBuilder(spec.inputTypes(), false);
    int k = b.loadColumn(0);
    int c = b.loadColumn(1);
    int v = b.loadColumn(2);
    int third = b.emitNew(Opcode.REM_INT, k, b.loadConstant(3), 64);
    Program remainder = b.build(-1, List.of(new Program.Output(c, ColumnType.LONG),
        new Program.Output(third, ColumnType.LONG), new Program.Output(v, ColumnType.LONG)));
    Program identity = ProgramBuilder.identity(spec.inputTypes(), false);
    InputSpec plain = new InputSpec(ColumnType.LONG, Encoding.PLAIN, false);
    InputSpec nullable = new InputSpec(ColumnType.LONG, Encoding.PLAIN, true);
    List<InputSpec> firstNullable = List.of(nullable, plain, plain);
    List<InputSpec> secondNullable = List.of(plain, nullable, plain);
    List<InputSpec> valueNullable = List.of(plain, plain, nullable);
    assertFalse(AggregateUpdateGenerator.slicesGroups(identity, spec, firstNullable));
    assertFalse(AggregateUpdateGenerator.slicesGroups(identity, spec, secondNullable));
    assertFalse(AggregateUpdateGenerator.slicesGroups(remainder, spec, firstNullable),
        "k % 3 of a k that may be NULL");
    assertFalse(AggregateUpdateGenerator.slicesGroups(remainder, spec, secondNullable));
    assertTrue(AggregateUpdateGenerator.slicesGroups(identity, spec, valueNullable),
        "only the functions' input may be NULL");
    assertTrue(AggregateUpdateGenerator.slicesGroups(remainder, spec, valueNullable));
    assertThrows(IllegalArgumentException.class, () -> AggregateUpdateGenerator.generate(
        identity, firstNullable, spec, SM90, new BitSet(), 2));
  }

  @Test
  void aSlicedKernelIsAKernelOfItsOwnWithTheSliceCheck() throws Exception {
    AggregateSpec spec = spec(List.of(ColumnType.LONG));
    GeneratedKernel whole = kernel(spec, false, 1);
    GeneratedKernel sliced = kernel(spec, false, 6);
    assertNotEquals(whole.key(), sliced.key());
    assertNotEquals(kernel(spec, false, 5).key(), sliced.key());
    assertFalse(whole.ptx().contains(SLICE_CHECK));
    assertFalse(whole.ptx().contains("rem.u32"), "an unsliced kernel computes no slice");
    assertTrue(sliced.ptx().contains(SLICE_CHECK));
    // Its warps queue their slice's rows in the dynamic shared memory, after the table: static
    // arrays of a block of 1,024 threads' queues would pass ptxas's 48 KiB (two keys' do).
    assertTrue(sliced.ptx().contains("the kept row into the warp's queue"));
    assertFalse(sliced.ptx().contains("_kept["), "queues in static shared memory");
    AggregateSpec twoKeys = spec(List.of(ColumnType.INT, ColumnType.LONG));
    assertTrue(KeptRowQueue.sharedBytes(twoKeys, AggregateUpdateGenerator.MAX_BLOCK_THREADS)
        > 48 << 10);
    LocalTableLayout compact = LocalTableLayout.of(twoKeys, true);
    int entries = AggregateUpdateGenerator.slicedTableEntries(twoKeys, compact, H100);
    assertTrue(AggregateUpdateGenerator.slicedSharedBytes(twoKeys, compact, entries)
        <= LocalTableSize.wholeMultiprocessorBudget(H100), "past the table's budget");
    assertTrue(sliced.ptx().matches("(?s).*rem\\.u32 %r\\d+, %r\\d+, 6;.*"),
        "the block's slice, modulo 6");
  }

  @Test
  @RequiresPtxCompiler
  void slicedKernelsCompileWithinTheirRegistersWithoutLocalMemory() throws Exception {
    for (List<ColumnType> keys : List.of(List.of(ColumnType.LONG), List.of(ColumnType.INT),
        List.of(ColumnType.INT, ColumnType.LONG), List.of(ColumnType.LONG, ColumnType.LONG))) {
      AggregateSpec spec = spec(keys);
      // Two keys slice only where neither may be NULL (slicesGroups).
      for (boolean nullable : keys.size() == 1 ? new boolean[] {false, true}
          : new boolean[] {false}) {
        for (boolean filtered : new boolean[] {false, true}) {
          Program program = AggregateBlockShapeTest.program(spec, filtered);
          GeneratedKernel kernel = AggregateUpdateGenerator.generate(program,
              inputs(spec, nullable), spec, SM90, new BitSet(), 6);
          CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
          String shape = keys + " nullable " + nullable + " filter " + filtered;
          assertNull(GeneratedModule.rejection(report), shape + ": " + report.summary());
          assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
              shape + ": " + report.summary());
        }
      }
    }
  }
}
