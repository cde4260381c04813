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
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The per-block table's size (no GPU needed): what fits the shared memory it is given, and the
 * entries a kernel that fills a multiprocessor has as a constant (where no input can be NULL),
 * which its launch gives it.
 */
class LocalTableSizeTest {
  @Test
  void thePerBlockTableFitsItsSharedMemoryBudget() {
    for (int functions = 1; functions <= 64; functions++) {
      int entries = LocalTableSize.entries(sumsByKey(functions), 0);
      assertTrue(entries == 0 || Integer.bitCount(entries) == 1, "a power of two: " + entries);
      assertTrue(localTable(functions).tableBytes(entries) <= 16 << 10,
          functions + " functions");
      assertTrue(entries <= 256);
      // With each entry's key (8 bytes and a null word): 24 KiB in all.
      int keyed = LocalTableSize.entries(sumsByKey(functions), 12);
      assertTrue(keyed == 0 || Integer.bitCount(keyed) == 1, "a power of two: " + keyed);
      assertTrue(localTable(functions).tableBytes(keyed) + 12 * keyed <= 24 << 10,
          functions + " functions, keyed");
      assertTrue(keyed <= 256 && keyed >= entries);
    }
    assertEquals(128, LocalTableSize.entries(sumsByKey(4), 0)); // 84 bytes an entry
    assertEquals(256, LocalTableSize.entries(sumsByKey(4), 12)); // 96
    assertEquals(10_752, localTable(4).tableBytes(128));
    assertEquals(1, LocalTableSize.entries(
        new AggregateSpec(TYPES, 0, sumsOf(13), false), 0)); // a global aggregate: one group
    // Nothing to accumulate:
    assertEquals(0, LocalTableSize.entries(new AggregateSpec(TYPES, 2, List.of(), false), 0));
    assertEquals(0, localTable(5).tableBytes(0));
  }

  @Test
  void aTableOfAWholeMultiprocessorFitsItsBudget() {
    // An H100's or H200's 228 KiB, 85% of it, less the 1 KiB the system keeps for a block.
    int budget = 233_472 * 85 / 100 - 1024;
    assertEquals(budget, LocalTableSize.wholeMultiprocessorBudget(
        new KernelFeatures.SharedMemory(233_472, 232_448, 1024)));
    int most = LocalTableSize.MAX_WHOLE_ENTRIES;
    assertEquals(2048, LocalTableSize.wholeMultiprocessorEntries(sums(4), 12, budget, most));
    // Two LONG keys: 104 bytes an entry (sums take all of an entry's words), 1,898 of them (a
    // power of two would be 1,024); HashAggregateBench's count, sum, min and max take 76.
    assertEquals(budget / 104,
        LocalTableSize.wholeMultiprocessorEntries(sums(4), 20, budget, most));
    assertEquals(budget / 76, LocalTableSize.wholeMultiprocessorEntries(
        LocalTableLayout.of(SPEC, true), 20, budget, LocalTableSize.MAX_SLICED_ENTRIES));
    for (int functions = 1; functions <= 64; functions++) {
      LocalTableLayout layout = sums(functions);
      for (int keyBytes : new int[] {12, 20}) {
        int entries = LocalTableSize.wholeMultiprocessorEntries(layout, keyBytes, budget, most);
        assertTrue(entries <= 2048, functions + " functions: " + entries);
        assertTrue(layout.tableBytes(entries) + keyBytes * entries <= budget,
            functions + " functions");
        assertTrue(layout.tableBytes(entries + 1) + keyBytes * (entries + 1) > budget
            || entries == 2048, functions + " functions: as many as fit");
        assertTrue(entries >= LocalTableSize.entries(sumsByKey(functions), keyBytes));
      }
      // A table found by group (no keys): its slots are masked, so a power of two.
      int byGroup = LocalTableSize.wholeMultiprocessorEntries(layout, 0, budget, most);
      assertTrue(Integer.bitCount(byGroup) == 1 && byGroup <= 2048, "a power of two: " + byGroup);
    }
    // One entry is 96 bytes, 100 with the table's bytes rounded up to 8 before the keys.
    assertEquals(0, LocalTableSize.wholeMultiprocessorEntries(sums(4), 12, 99, most));
    assertEquals(1, LocalTableSize.wholeMultiprocessorEntries(sums(4), 12, 100, most));
    assertEquals(2, LocalTableSize.wholeMultiprocessorEntries(sums(4), 12, 192, most));
    assertEquals(0, LocalTableSize.wholeMultiprocessorEntries(sums(0), 12, budget, most));
  }

  /** The compact layout of {@code count} LONG sums: as LocalTable's, 4 + 20 F bytes an entry. */
  private static LocalTableLayout sums(int count) {
    return sums(count, true);
  }

  /** LocalTable's layout (the table of a block of 128 threads) of {@code count} LONG sums. */
  private static LocalTableLayout localTable(int count) {
    return sums(count, false);
  }

  private static LocalTableLayout sums(int count, boolean compact) {
    return new LocalTableLayout(sumsOf(count), compact);
  }

  /** {@code count} sums of a LONG (column 1). */
  private static List<AggregateFunction> sumsOf(int count) {
    return Collections.nCopies(count, new AggregateFunction(Kind.SUM, 1, ColumnType.LONG));
  }

  /** GROUP BY a LONG (column 0): {@code count} sums of a LONG. */
  private static AggregateSpec sumsByKey(int count) {
    return new AggregateSpec(TYPES, 1, sumsOf(count), false);
  }

  @Test
  void sharedMemoryOfEachCapabilityIsTheProgrammingGuides() {
    assertEquals(new KernelFeatures.SharedMemory(233_472, 232_448, 1024),
        KernelFeatures.SharedMemory.ofCapability(9, 0)); // what an H100 and an H200 report
    assertEquals(new KernelFeatures.SharedMemory(167_936, 166_912, 1024),
        KernelFeatures.SharedMemory.ofCapability(8, 0));
    assertEquals(new KernelFeatures.SharedMemory(102_400, 101_376, 1024),
        KernelFeatures.SharedMemory.ofCapability(8, 9));
    assertEquals(new KernelFeatures.SharedMemory(65_536, 65_536, 0),
        KernelFeatures.SharedMemory.ofCapability(7, 5));
    assertEquals(KernelFeatures.SharedMemory.ofCapability(9, 0),
        KernelFeatures.forArch("sm_90").shared());
    assertEquals(KernelFeatures.SharedMemory.ofCapability(7, 5), KernelFeatures.OLDEST.shared());
  }

  /** GROUP BY a LONG: count(*), sum, min and max of a LONG (HashAggregateBench's). */
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.LONG);
  private static final AggregateSpec SPEC = new AggregateSpec(TYPES, 1, List.of(
      new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
      new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
      new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
      new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);

  @Test
  void aKernelThatFillsAMultiprocessorHasItsDevicesEntriesAsAConstant() throws Exception {
    Program program = ProgramBuilder.identity(TYPES, false);
    KernelFeatures hopper = KernelFeatures.forArch("sm_90");
    KernelFeatures ada = KernelFeatures.forArch("sm_89");
    // 68 bytes an entry in the compact layout: 2,048 in an H100's or H200's budget, 1,264 in
    // 84 KiB of an sm_89's (LocalTable's 96 bytes: 896).
    LocalTableLayout compact = LocalTableLayout.of(SPEC, true);
    assertEquals(2048,
        LocalTableSize.wholeMultiprocessorEntries(SPEC, compact, false, hopper.shared()));
    assertEquals(1264,
        LocalTableSize.wholeMultiprocessorEntries(SPEC, compact, false, ada.shared()));
    // With a nullable key too (its NULL rows go apart from the item, and the constant gained).
    for (boolean nullable : new boolean[] {false, true}) {
      List<InputSpec> inputs = List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, nullable),
          new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
      assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(program, SPEC, inputs));
      // One device's kernel is not another's: the entries are in the key.
      assertNotEquals(AggregateUpdateGenerator.key(program, inputs, SPEC, hopper),
          AggregateUpdateGenerator.key(program, inputs, SPEC, ada));
      for (KernelFeatures features : List.of(hopper, ada)) {
        GeneratedKernel kernel =
            AggregateUpdateGenerator.generate(program, inputs, SPEC, features);
        int entries =
            LocalTableSize.wholeMultiprocessorEntries(SPEC, compact, false, features.shared());
        assertTrue(Pattern.compile("mov\\.u64 %rd\\d+, " + entries + ";").matcher(kernel.ptx())
            .find(), "nullable " + nullable + ": the constant " + entries);
        CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
        assertNull(GeneratedModule.rejection(report), report.summary());
      }
    }
  }

  @Test
  void aKernelOfBlocksOf128ThreadsReadsItsEntriesFromThePlan() throws Exception {
    // A filtered GROUP BY of three keys: the table is found by group, its size the launch's
    // (plan) choice.
    List<ColumnType> types =
        List.of(ColumnType.LONG, ColumnType.INT, ColumnType.INT, ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, 3, List.of(
        new AggregateFunction(Kind.SUM, 3, ColumnType.LONG)), false);
    List<InputSpec> inputs = types.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    ProgramBuilder b = new ProgramBuilder(types, false);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
    }
    int keep = b.emitNew(Opcode.CMP_INT, outputs.get(3).register(), b.loadConstant(0),
        Comparison.GT.code());
    Program program = b.build(keep, outputs);
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(program, spec, inputs));
    KernelFeatures hopper = KernelFeatures.forArch("sm_90");
    assertEquals(AggregateUpdateGenerator.key(program, inputs, spec, hopper),
        AggregateUpdateGenerator.key(program, inputs, spec, KernelFeatures.forArch("sm_89")));
  }
}
