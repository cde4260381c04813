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
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The per-block table's lean layout (LocalTableLayout with {@link LocalTableLayout#LEAN_PROPERTY}
 * set; hash_aggregate.cuh LeanLocalTable), without a GPU: which words it leaves out, what a
 * kernel that fills a multiprocessor then holds, that such kernels are kernels of their own and
 * compile within their registers with no local memory. Whether they aggregate right is the CUDA
 * suites' to say, on a GPU, with the property set.
 */
class LeanTableTest {
  private static final KernelFeatures SM90 = KernelFeatures.forArch("sm_90");
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.LONG);

  private String was;

  @BeforeEach
  void leanTables() {
    was = System.setProperty(LocalTableLayout.LEAN_PROPERTY, "true");
  }

  @AfterEach
  void asBefore() {
    if (was == null) {
      System.clearProperty(LocalTableLayout.LEAN_PROPERTY);
    } else {
      System.setProperty(LocalTableLayout.LEAN_PROPERTY, was);
    }
  }

  /** HashAggregateBench's: COUNT(*), SUM, MIN and MAX of column 1, by column 0. */
  private static AggregateSpec benchSpec(boolean ansi) {
    return new AggregateSpec(TYPES, 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), ansi);
  }

  private static List<InputSpec> inputs(boolean valuesNullable) {
    return List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, false),
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, valuesNullable));
  }

  @Test
  void aWrappingSumHasNoHighWordAndAColumnThatCannotBeNullNoSeenFlag() {
    Program identity = ProgramBuilder.identity(TYPES, false);
    LocalTableLayout lean = LocalTableLayout.of(identity, benchSpec(false), inputs(false), true);
    assertTrue(lean.compact() && lean.lean());
    for (int f = 0; f < 4; f++) {
      assertFalse(lean.hasHigh(f), "function " + f);
      assertFalse(lean.hasSeen(f), "function " + f);
      assertEquals(0, lean.tableWords(f));
    }
    assertEquals(36, lean.entryBytes()); // 4 values and the group word, where compact takes 56
    assertEquals("tessera_agg_lean_merge", lean.mergeFunction());
    assertEquals("tessera_agg_lean_reset", lean.resetFunction());

    // A column that may be NULL keeps its functions' flags; an ANSI sum keeps its high word.
    LocalTableLayout nullable =
        LocalTableLayout.of(identity, benchSpec(false), inputs(true), true);
    assertTrue(nullable.lean(), "the wrapping sum");
    assertEquals(LocalTableLayout.TABLE_SEEN, nullable.tableWords(1));
    assertEquals(LocalTableLayout.TABLE_SEEN, nullable.tableWords(2));
    assertEquals(0, nullable.tableWords(0), "a count has neither");
    LocalTableLayout ansi = LocalTableLayout.of(identity, benchSpec(true), inputs(false), true);
    assertEquals(LocalTableLayout.TABLE_HIGH, ansi.tableWords(1));
    assertEquals(new LocalTableLayout(benchSpec(true).functions(), true).entryBytes() - 12,
        ansi.entryBytes());
    LocalTableLayout both = LocalTableLayout.of(identity, benchSpec(true), inputs(true), true);
    assertFalse(both.lean());
    assertEquals("tessera_agg_compact_merge", both.mergeFunction());
  }

  @Test
  void onlyAColumnPassedThroughIsKnownNeverNullAndOnlyWhereThereAreKeys() {
    // v + 1 cannot be NULL either, but only a column passed through is known so without the
    // generator's emission: its flag stays.
    ProgramBuilder b = new ProgramBuilder(TYPES, false);
    int key = b.loadColumn(0);
    int plusOne = b.emitNew(Opcode.ADD_INT, b.loadColumn(1), b.loadConstant(1), 64);
    Program computed = b.build(-1, List.of(new Program.Output(key, ColumnType.LONG),
        new Program.Output(plusOne, ColumnType.LONG)));
    LocalTableLayout layout = LocalTableLayout.of(computed, benchSpec(false), inputs(false), true);
    assertTrue(layout.hasSeen(2) && layout.hasSeen(3));
    assertFalse(layout.hasHigh(1), "the sum still wraps");
    // A global aggregate's entry is there before any row: its flags say whether one came.
    AggregateSpec global = new AggregateSpec(TYPES, 0, benchSpec(false).functions(), false);
    LocalTableLayout globalLayout = LocalTableLayout.of(
        ProgramBuilder.identity(TYPES, false), global, inputs(false), true);
    assertTrue(globalLayout.hasSeen(2));
    // Not where the kernel runs blocks of 128 threads (LocalTable's), nor with the switch off.
    assertFalse(LocalTableLayout.of(computed, benchSpec(false), inputs(false), false).compact());
    System.clearProperty(LocalTableLayout.LEAN_PROPERTY);
    assertFalse(LocalTableLayout.of(ProgramBuilder.identity(TYPES, false), benchSpec(false),
        inputs(false), true).lean());
  }

  @Test
  @RequiresPtxCompiler
  void leanKernelsAreTheirOwnHoldMoreEntriesAndCompileWithoutLocalMemory() throws Exception {
    AggregateSpec spec = benchSpec(false);
    Program identity = ProgramBuilder.identity(TYPES, false);
    KernelFeatures.SharedMemory h100 = SM90.shared();
    LocalTableLayout lean = LocalTableLayout.of(identity, spec, inputs(false), true);
    int leanSliced = AggregateUpdateGenerator.slicedTableEntries(spec, lean, h100);
    String leanKey = AggregateUpdateGenerator.key(identity, inputs(false), spec, SM90);
    System.clearProperty(LocalTableLayout.LEAN_PROPERTY);
    int compactSliced = AggregateUpdateGenerator.slicedTableEntries(spec,
        LocalTableLayout.of(identity, spec, inputs(false), true), h100);
    assertNotEquals(leanKey, AggregateUpdateGenerator.key(identity, inputs(false), spec, SM90));
    System.setProperty(LocalTableLayout.LEAN_PROPERTY, "true");
    // 48 bytes an entry with the key where the compact layout takes 68: 3,256 entries a sliced
    // table on an H100 where it holds 2,299, so 10^4 groups take 5 slices, not 6 (GroupSlices).
    assertTrue(leanSliced > compactSliced * 13 / 10, leanSliced + " against " + compactSliced);
    assertTrue(AggregateUpdateGenerator.slicedSharedBytes(spec, lean, leanSliced)
        <= LocalTableSize.wholeMultiprocessorBudget(h100), "past the budget");
    assertTrue(leanKey.contains("lean"));
    for (int slices : new int[] {1, 6}) {
      for (boolean filtered : new boolean[] {false, true}) {
        for (boolean nullable : new boolean[] {false, true}) {
          Program program = AggregateBlockShapeTest.program(spec, filtered);
          List<InputSpec> inputs = inputs(nullable);
          if (slices > 1 && !AggregateUpdateGenerator.slicesGroups(program, spec, inputs)) {
            continue;
          }
          GeneratedKernel kernel = AggregateUpdateGenerator.generate(program, inputs, spec,
              SM90, new BitSet(), slices);
          assertTrue(kernel.ptx().contains("tessera_agg_lean_merge"));
          assertFalse(kernel.ptx().contains("tessera_agg_compact_"));
          CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
          assertNull(GeneratedModule.rejection(report), "slices " + slices + " filter "
              + filtered + " nullable " + nullable + ": " + report.summary());
        }
      }
    }
  }
}
