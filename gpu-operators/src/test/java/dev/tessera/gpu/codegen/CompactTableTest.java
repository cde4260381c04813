package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The per-block table's compact layout (LocalTableLayout, hash_aggregate.cuh CompactLocalTable),
 * without a GPU: its sections, the entries it gives a kernel that fills a multiprocessor, that
 * only such kernels take it, and that they compile within their registers with no local memory
 * (GeneratedAggregateCompileTest compiles random pipelines' such kernels). Whether the compact
 * kernels aggregate right is the CUDA suites' to say, on a GPU.
 */
class CompactTableTest {
  private static final KernelFeatures SM90 = KernelFeatures.forArch("sm_90");
  private static final KernelFeatures.SharedMemory H100 =
      new KernelFeatures.SharedMemory(233_472, 232_448, 1_024);

  /** HashAggregateBench's functions: COUNT(*), SUM, MIN and MAX of a LONG, by a LONG key. */
  private static AggregateSpec benchSpec() {
    return new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG), 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
  }

  @Test
  void theFullLayoutIsLocalTables() {
    LocalTableLayout full = new LocalTableLayout(benchSpec().functions(), false);
    assertEquals(4 + 20 * 4, full.entryBytes()); // 4 + 20 F
    assertEquals(32, full.highsPerEntry());
    assertEquals(64, full.groupWordsPerEntry()); // after values[F][E] and highs[F][E]
    assertEquals(68, full.seenPerEntry());
    for (int f = 0; f < 4; f++) {
      assertTrue(full.hasHigh(f) && full.hasSeen(f));
      assertEquals(f, full.highRow(f));
      assertEquals(f, full.seenRow(f));
    }
    assertEquals(1628 * 84, full.tableBytes(1628)); // a multiple of 8 already
  }

  @Test
  void theCompactLayoutGivesHighWordsToSumsAndSeenFlagsToAllButCounts() {
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.LONG), 1, List.of(
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, 1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)), false);
    LocalTableLayout compact = new LocalTableLayout(spec.functions(), true);
    boolean[] highs = {false, false, true, false, true};
    boolean[] seen = {true, false, true, false, true};
    for (int f = 0; f < highs.length; f++) {
      assertEquals(highs[f], compact.hasHigh(f), "function " + f);
      assertEquals(seen[f], compact.hasSeen(f), "function " + f);
    }
    assertEquals(0, compact.highRow(2));
    assertEquals(1, compact.highRow(4));
    assertEquals(0, compact.seenRow(0));
    assertEquals(1, compact.seenRow(2));
    assertEquals(2, compact.seenRow(4));
    assertEquals(40, compact.highsPerEntry()); // 5 values
    assertEquals(56, compact.groupWordsPerEntry()); // and 2 highs
    assertEquals(60, compact.seenPerEntry());
    assertEquals(72, compact.entryBytes()); // and 3 seen flags, where LocalTable takes 104
    assertEquals(4 + 20 * 5 - 32, compact.entryBytes());
  }

  @Test
  void onlyKernelsOfAWholeMultiprocessorTakeTheCompactLayout() throws Exception {
    AggregateSpec spec = benchSpec();
    assertTrue(LocalTableLayout.of(spec, true).compact());
    assertFalse(LocalTableLayout.of(spec, false).compact(), "a block of 128 threads");
    GeneratedKernel whole = kernel(spec, false, 1);
    assertTrue(whole.key().contains("compact;"));
    assertTrue(whole.ptx().contains("tessera_agg_compact_reset"));
    assertTrue(whole.ptx().contains("tessera_agg_compact_merge"));
    assertFalse(whole.ptx().contains("tessera_agg_local_"));
    // Three keys behind a filter: blocks of 128 threads, LocalTable's layout.
    AggregateSpec threeKeys = LocalKeyTableTest.spec(List.of(ColumnType.INT, ColumnType.INT,
        ColumnType.INT));
    Program filtered = AggregateBlockShapeTest.program(threeKeys, true);
    List<InputSpec> inputs = threeKeys.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(filtered, threeKeys, inputs));
    GeneratedKernel blocks = AggregateUpdateGenerator.generate(filtered, inputs, threeKeys, SM90,
        new BitSet(), 1);
    assertFalse(blocks.key().contains("compact;"));
    assertTrue(blocks.ptx().contains("tessera_agg_local_reset"));
    assertFalse(blocks.ptx().contains("tessera_agg_compact_"));
    // 68 bytes an entry with the key where LocalTable's took 96: a sliced table holds about
    // 2,300 groups on an H100 where it held 1,628, so 10^4 groups take 6 slices, not 9.
    LocalTableLayout compact = LocalTableLayout.of(spec, true);
    int entries = AggregateUpdateGenerator.slicedTableEntries(spec, compact, H100);
    assertTrue(entries > 2200, "" + entries);
    assertTrue(AggregateUpdateGenerator.slicedSharedBytes(spec, compact, entries)
        <= LocalTableSize.wholeMultiprocessorBudget(H100), "past the table's budget");
  }

  @Test
  @RequiresPtxCompiler
  void compactKernelsCompileWithinTheirRegistersWithoutLocalMemory() throws Exception {
    for (AggregateSpec spec : List.of(benchSpec(), LocalKeyTableTest.spec(List.of(
        ColumnType.INT, ColumnType.LONG)), LocalKeyTableTest.spec(List.of(ColumnType.LONG)))) {
      for (int slices : new int[] {1, 6}) {
        for (boolean filtered : new boolean[] {false, true}) {
          for (boolean nullable : new boolean[] {false, true}) {
            Program program = AggregateBlockShapeTest.program(spec, filtered);
            List<InputSpec> inputs = spec.inputTypes().stream()
                .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
            if (slices > 1 && !AggregateUpdateGenerator.slicesGroups(program, spec, inputs)) {
              continue;
            }
            GeneratedKernel kernel = AggregateUpdateGenerator.generate(program, inputs, spec,
                SM90, new BitSet(), slices);
            assertTrue(kernel.ptx().contains("tessera_agg_compact_merge"));
            CompileReport report =
                GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
            assertNull(GeneratedModule.rejection(report), spec + " slices " + slices
                + " filter " + filtered + " nullable " + nullable + ": " + report.summary());
          }
        }
      }
    }
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean nullable, int slices)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    return AggregateUpdateGenerator.generate(AggregateBlockShapeTest.program(spec, false),
        inputs, spec, SM90, new BitSet(), slices);
  }
}
