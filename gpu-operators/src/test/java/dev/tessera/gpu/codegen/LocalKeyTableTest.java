package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which generated aggregate kernels find their per-block entries by key, what shared memory the
 * keys take, and that such a kernel claims, publishes and confirms entries as LocalKeyTable
 * says. No GPU (the CUDA differential suites run them).
 */
class LocalKeyTableTest {
  /** A per-block entry claimed: EMPTY (-1) to BUSY (-2) in shared memory. */
  private static final String CLAIM =
      "(?s).*atom\\.shared\\.cas\\.b32 %r\\d+, \\[%rd\\d+\\], -1, -2;.*";
  /** A new group's global slot claimed by one lane for the lanes that name the same slot. */
  private static final String GLOBAL_CLAIM = "(?s).*match\\.any\\.sync\\.b64 %r\\d+, (%rd\\d+), "
      + "%r\\d+;(\n[^\n]*){0,12}\n\t@%p\\d+ atom\\.global\\.cas\\.b32 %r\\d+, \\[\\1\\], -1, -2;.*";
  /** GROUP BY {@code keys}: count(*), sum and max of a LONG (AggregateBlockShapeTest's too). */
  static AggregateSpec spec(List<ColumnType> keys) {
    List<ColumnType> types = new ArrayList<>(keys);
    types.add(ColumnType.LONG);
    int value = keys.size();
    return new AggregateSpec(types, keys.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, value, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, value, ColumnType.LONG)), false);
  }

  private static GeneratedKernel kernel(AggregateSpec spec, KernelFeatures features)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, true)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        inputs, spec, features);
  }

  @Test
  void oneFixedWidthKeyIsHeldInTheTable() {
    for (ColumnType key : List.of(ColumnType.LONG, ColumnType.INT, ColumnType.DOUBLE,
        ColumnType.BOOLEAN, ColumnType.DATE)) {
      assertTrue(LocalKeyTable.holds(spec(List.of(key))), key.toString());
      assertEquals(256 * 12,
          AggregateUpdateGenerator.localKeyBytes(spec(List.of(key)), 256, false, false));
    }
    for (List<ColumnType> keys : List.of(List.<ColumnType>of(), List.of(ColumnType.STRING),
        List.of(ColumnType.INT, ColumnType.INT))) {
      assertFalse(LocalKeyTable.holds(spec(keys)), keys.toString());
      assertEquals(0, AggregateUpdateGenerator.localKeyBytes(spec(keys), 256, false, false));
    }
    // Two where the kernel fills a multiprocessor; three nowhere.
    AggregateSpec two = spec(List.of(ColumnType.INT, ColumnType.DATE));
    assertEquals(256 * 20, AggregateUpdateGenerator.localKeyBytes(two, 256, true, false));
    AggregateSpec three = spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT));
    assertEquals(0, AggregateUpdateGenerator.localKeyBytes(three, 256, true, false));
  }

  /**
   * (k, c, v): GROUP BY k, c; SUM(v), where {@code probes}, of the rows whose c finds a row of a
   * join table (StarJoinBench's shape, one dimension).
   */
  private static Program twoKeys(boolean probes) {
    List<ColumnType> types = List.of(ColumnType.INT, ColumnType.INT, ColumnType.LONG);
    ProgramBuilder b = new ProgramBuilder(types, false);
    List<Program.Output> outputs = List.of(new Program.Output(b.loadColumn(0), ColumnType.INT),
        new Program.Output(b.loadColumn(1), ColumnType.INT),
        new Program.Output(b.loadColumn(2), ColumnType.LONG));
    if (!probes) {
      return b.build(-1, outputs);
    }
    int dimension = b.table(new JoinTableSchema(List.of(ColumnType.INT), List.of()));
    int found = b.emitNew(Opcode.PROBE, dimension, b.constant(b.loadColumn(1)), 1);
    return b.build(b.emitNew(Opcode.IS_NOT_NULL, found, 0, 0), outputs);
  }

  @Test
  void twoKeysAreHeldWhereTheKernelProbesNoJoinTable() throws Exception {
    // StarJoinBench's fused kernel (three probes, one row in 125 aggregated) was 2.3-4.6x
    // slower with them held: LocalKeyTable.MAX_WHOLE_MULTIPROCESSOR_KEYS.
    AggregateSpec spec = new AggregateSpec(
        List.of(ColumnType.INT, ColumnType.INT, ColumnType.LONG), 2,
        List.of(new AggregateFunction(Kind.SUM, 2, ColumnType.LONG)), false);
    List<InputSpec> inputs = spec.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    KernelFeatures hopper = KernelFeatures.forArch("sm_90");
    for (boolean probes : new boolean[] {false, true}) {
      Program program = twoKeys(probes);
      String ptx = AggregateUpdateGenerator.generate(program, inputs, spec, hopper).ptx();
      assertEquals(!probes, ptx.matches(CLAIM), "probes: " + probes);
      assertEquals(!probes,
          AggregateUpdateGenerator.key(program, inputs, spec, hopper).contains("keyed;"));
      assertEquals(!probes, AggregateUpdateGenerator.fillsMultiprocessor(program, spec, inputs));
    }
  }

  @Test
  void aHeldKeyIsClaimedPublishedAndConfirmed() throws Exception {
    AggregateSpec held = spec(List.of(ColumnType.LONG));
    GeneratedKernel kernel = kernel(held, KernelFeatures.forArch("sm_90"));
    String ptx = kernel.ptx();
    // Claimed from EMPTY to BUSY; published by a release; a match confirmed by an acquire.
    assertTrue(ptx.matches(CLAIM));
    assertTrue(ptx.matches(
        "(?s).*fence\\.acq_rel\\.cta;(\n[^\n]*){0,4}\n\tst\\.relaxed\\.cta\\.shared\\.s32.*"),
        "no release");
    assertTrue(ptx.contains("ld.acquire.cta.shared.s32"));
    // The keys are Long.MIN_VALUE before the block's first barrier, so that a match of another
    // key is the claimer's store and needs no acquire. These keys can be NULL, which the table
    // holds as LocalKeyTable.NULL_KEY (NullKeysByValueTest): no test for 0.
    String start = ptx.substring(0, ptx.indexOf("bar.sync 0"));
    assertTrue(start.matches("(?s).*\tst\\.shared\\.u64 \\[%rd\\d+\\], 0x8000000000000000;.*"),
        "no reset of the keys");
    assertTrue(ptx.matches("(?s).*\tsetp\\.ne\\.u64 %p\\d+, %rd\\d+, 0x8000000000000000;\n"
        + "\tand\\.pred (%p\\d+), [^\n]*\n\t@\\1 bra \\$L_local_key_same_\\d+;\n"
        + "\tmul\\.wide\\.u32 %rd\\d+, %r\\d+, 4;\n[^\n]*\n"
        + "\tld\\.acquire\\.cta\\.shared\\.s32.*"), "no hit without the acquire");
    assertTrue(AggregateUpdateGenerator.key(ProgramBuilder.identity(held.inputTypes(), false),
        List.of(), held).contains("keyed;"));

    AggregateSpec threeKeys = spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT));
    String other = kernel(threeKeys, KernelFeatures.forArch("sm_90")).ptx();
    assertFalse(other.contains("ld.acquire.cta.shared"));
    assertFalse(other.matches(CLAIM));
    assertFalse(AggregateUpdateGenerator.key(ProgramBuilder.identity(threeKeys.inputTypes(),
        false), List.of(), threeKeys).contains("keyed;"));
  }

  @Test
  void onlyAKernelThatFindsEntriesByGroupSharesALookupAmongTheWarpsRows() throws Exception {
    // By key, each row looks on its own (its last group or the table answers most rows): a
    // match.any over a warp of many keys cost more than it saved (H200, 100 groups -30%).
    // Both kernels match lanes once where they claim a new group's global slot (GroupLookup's
    // findOrInsert: only the lowest of the lanes about to claim one slot tries the CAS).
    String byKey = kernel(spec(List.of(ColumnType.LONG)), KernelFeatures.forArch("sm_90")).ptx();
    assertEquals(1, AggregateBlockShapeTest.count(byKey, "match.any.sync"));
    assertTrue(byKey.matches(GLOBAL_CLAIM), "the global slot's claim");
    // By group, the warp's rows with the same keys leave the global lookup to the first: one
    // match a key's null flag and one a key's value (the inputs here are nullable).
    String byGroup = kernel(spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT)),
        KernelFeatures.forArch("sm_90")).ptx();
    assertTrue(byGroup.matches(GLOBAL_CLAIM), "the global slot's claim");
    assertEquals(3, AggregateBlockShapeTest.count(byGroup, "match.any.sync.b32"));
    assertEquals(3 + 1, AggregateBlockShapeTest.count(byGroup, "match.any.sync.b64"));
  }

  @Test
  void aRunTakesTheEntryThatAnItemOfItsGroupFound() throws Exception {
    // count, sum and max of a LONG: integral, so the lanes' runs of one group are kept in
    // registers; a run begun at a row sent to the global table takes the entry found later.
    String ptx = kernel(spec(List.of(ColumnType.LONG)), KernelFeatures.forArch("sm_90")).ptx();
    assertTrue(ptx.matches("(?s).*\t@%p\\d+ max\\.s32 (%r\\d+), \\1, %r\\d+;\n.*"),
        "the run's entry: the larger of its own and the item's");
  }

  @Test
  @RequiresPtxCompiler
  void aHeldKeysKernelCompilesCleanForTheOldestDevice() throws Exception {
    GeneratedKernel kernel = kernel(spec(List.of(ColumnType.INT)), KernelFeatures.OLDEST);
    TestPtx.assertCompilesClean(kernel, "sm_75");
  }
}
