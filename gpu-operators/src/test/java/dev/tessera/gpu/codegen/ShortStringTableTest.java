package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The block's table of a kernel of one string key, which fills a multiprocessor with a filter
 * or without (not with a probe), holds the short strings' short forms
 * (LocalKeyTable.holdsShortStrings); other kernels of strings find their groups by group. A
 * lane there remembers its last long string (GroupLookup.recallLong). No GPU
 * (CudaGeneratedHashAggregateDifferentialTest's string keys run them).
 */
class ShortStringTableTest {
  private static final String SHORT_TABLE = "a short string as one fixed-width key";
  private static final String LONG_RECALL = "a long string: its lane's last";

  private static List<InputSpec> inputs(AggregateSpec spec, boolean nullable) {
    return spec.inputTypes().stream().map(t -> new InputSpec(t, Encoding.PLAIN, nullable))
        .toList();
  }

  private static GeneratedKernel kernel(AggregateSpec spec, boolean filtered, boolean nullable)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(AggregateBlockShapeTest.program(spec, filtered),
        inputs(spec, nullable), spec, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aKernelOfOneStringFindsShortStringsByKeyWithOrWithoutAFilter() throws Exception {
    AggregateSpec spec = LocalKeyTableTest.spec(List.of(ColumnType.STRING));
    for (boolean filtered : new boolean[] {false, true}) {
      assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(
          AggregateBlockShapeTest.program(spec, filtered), spec, inputs(spec, false)));
      for (boolean nullable : new boolean[] {false, true}) {
        GeneratedKernel kernel = kernel(spec, filtered, nullable);
        String form = "filtered " + filtered + ", nullable " + nullable;
        assertTrue(kernel.ptx().contains(SHORT_TABLE), form);
        CompileReport report = TestPtx.assertCompilesClean(kernel, "sm_90");
        assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
            form + ": " + report.summary());
      }
    }
  }

  @Test
  void aLongStringIsComparedWithItsLanesLastWhereItsWarpRepeats() throws Exception {
    for (boolean filtered : new boolean[] {false, true}) {
      for (boolean nullable : new boolean[] {false, true}) {
        String ptx =
            kernel(LocalKeyTableTest.spec(List.of(ColumnType.STRING)), filtered, nullable).ptx();
        String form = "filtered " + filtered + ", nullable " + nullable;
        assertEquals(1, TestPtx.hits(ptx, LONG_RECALL), form);
        // The bytes against the last string's, a word of each at a time.
        assertEquals(1, TestPtx.hits(ptx, "\\$L_long_recall_word_\\d+:"), form);
        // Only a warp whose rows all took their lane's last group compares: a uniform branch
        // past the compares on the warp's vote.
        assertEquals(1, TestPtx.hits(ptx, "@!%p\\d+ bra\\.uni \\$L_long_recalled_\\d+;"),
            form);
      }
    }
  }

  @Test
  void otherKernelsOfStringsFindTheirGroupsByGroup() throws Exception {
    assertFalse(kernel(LocalKeyTableTest.spec(List.of(ColumnType.INT, ColumnType.STRING)), false,
        false).ptx().contains(SHORT_TABLE));
    assertFalse(kernel(LocalKeyTableTest.spec(List.of(ColumnType.INT, ColumnType.STRING)), false,
        false).ptx().contains(LONG_RECALL));
  }

  @Test
  void theTableSizeCountsTheShortForms() {
    // A string key's short form takes a LONG and a null word an entry, as a LONG key's does.
    AggregateSpec strings = LocalKeyTableTest.spec(List.of(ColumnType.STRING));
    AggregateSpec longs = LocalKeyTableTest.spec(List.of(ColumnType.LONG));
    assertEquals(LocalKeyTable.bytes(longs, 2048), LocalKeyTable.bytes(strings, 2048, true, false));
    KernelFeatures.SharedMemory hopper = KernelFeatures.forArch("sm_90").shared();
    assertEquals(LocalTableSize.wholeMultiprocessorEntries(longs,
            LocalTableLayout.of(longs, true), false, hopper),
        LocalTableSize.wholeMultiprocessorEntries(strings,
            LocalTableLayout.of(strings, true), false, hopper));
    // Nine functions: 1,024 entries without the keys' bytes would not fit with them.
    List<ColumnType> types = new ArrayList<>(List.of(ColumnType.STRING, ColumnType.LONG));
    List<AggregateFunction> nine = new ArrayList<>();
    for (int f = 0; f < 9; f++) {
      nine.add(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG));
    }
    AggregateSpec wide = new AggregateSpec(types, 1, nine, false);
    int entries = LocalTableSize.wholeMultiprocessorEntries(wide,
        LocalTableLayout.of(wide, true), false, hopper);
    long bytes = LocalTableLayout.of(wide, true).tableBytes(entries)
        + LocalKeyTable.bytes(wide, entries, true, false);
    assertTrue(bytes <= LocalTableSize.wholeMultiprocessorBudget(hopper), "entries " + entries);
  }
}
