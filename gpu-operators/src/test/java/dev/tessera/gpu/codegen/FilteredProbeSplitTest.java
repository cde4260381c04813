package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.BitSet;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Where the first probe of an aggregate's filter is of a join table with a probe filter and the
 * filter needs its row, the generated update queues the rows whose keys' bit is set, and the
 * probe's walk runs for 32 of them at once (ProgramEmitter.splitAtFilteredProbe); elsewhere the
 * kernel is the one made without knowing of the filter. No GPU: what the kernels compute is
 * CudaHashJoinDifferentialTest's aggregatesOverFilteredProbesAnswerAsTheHostDoes.
 */
class FilteredProbeSplitTest {
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType INT = ColumnType.INT;
  private static final JoinTableSchema PART = new JoinTableSchema(List.of(LONG), List.of(LONG));
  private static final JoinTableSchema SUPPLIER =
      new JoinTableSchema(List.of(INT), List.of(INT));
  private static final List<InputSpec> INPUTS = List.of(plain(LONG), plain(INT), plain(LONG));
  /** PTX comments: where a warp pops rows off its stack, and where it pushes rows onto it. */
  private static final String POP = "rows off the warp's stack";
  private static final String PUSH = "onto the warp's stack";
  /** Where a probe's code ends: its label placed. */
  private static final Pattern PROBE_DONE = Pattern.compile("\n\\$L_probe_done_\\d+:");

  private static InputSpec plain(ColumnType type) {
    return new InputSpec(type, Encoding.PLAIN, false);
  }

  private static BitSet tables(int... indexes) {
    BitSet set = new BitSet();
    for (int t : indexes) {
      set.set(t);
    }
    return set;
  }

  /**
   * Over (part key, supplier key, v): probe part, then supplier (behind the part's conjunct);
   * grouped by the part's payload and the supplier key, SUM(v). {@code partConjunct}: "inner"
   * (the part row IS NOT NULL), "payload" (its payload > 0), "anti" (IS NULL), "or" (its payload
   * > 0 OR the supplier key >= 0, which a row without a part passes).
   */
  private static Program star(String partConjunct) {
    ProgramBuilder b = new ProgramBuilder(List.of(LONG, INT, LONG), false);
    int part = b.table(PART);
    int supplier = b.table(SUPPLIER);
    int partRow = b.emitNew(Opcode.PROBE, part, b.constant(b.loadColumn(0)), 1);
    int payload = b.emitNew(Opcode.LOAD_BUILD, part, partRow, 0);
    int positive = b.emitNew(Opcode.CMP_INT, payload, b.loadConstant(0), Comparison.GT.code());
    int supplierKey = b.loadColumn(1);
    int first = switch (partConjunct) {
      case "inner" -> b.emitNew(Opcode.IS_NOT_NULL, partRow, 0, 0);
      case "payload" -> positive;
      case "anti" -> b.emitNew(Opcode.IS_NULL, partRow, 0, 0);
      default -> b.emitNew(Opcode.OR, positive, b.emitNew(Opcode.CMP_INT, supplierKey,
          b.loadConstant(0), Comparison.GE.code()), 0);
    };
    int supplierRow = b.emitNew(Opcode.PROBE, supplier, b.constant(supplierKey), 1);
    int keep = b.emitNew(Opcode.AND, first, b.emitNew(Opcode.IS_NOT_NULL, supplierRow, 0, 0), 0);
    return b.build(keep, List.of(new Program.Output(payload, LONG),
        new Program.Output(supplierKey, INT), new Program.Output(b.loadColumn(2), LONG)));
  }

  private static final AggregateSpec SPEC = new AggregateSpec(List.of(LONG, INT, LONG), 2,
      List.of(new AggregateFunction(Kind.SUM, 2, LONG)), false);

  private static GeneratedKernel kernel(Program program, BitSet probeFiltered)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(program, INPUTS, SPEC, KernelFeatures.OLDEST,
        probeFiltered);
  }

  /** The first probe of join table {@code table} comes after the stack's pop. */
  private static boolean probedAfterThePop(String ptx, int table) {
    return ptx.indexOf("// probe of join table " + table) > ptx.indexOf(POP);
  }

  @Test
  void rowsWaitForAFilteredProbesWalkAfterItsBit() throws Exception {
    for (String conjunct : List.of("inner", "payload")) {
      String unfiltered = kernel(star(conjunct), new BitSet()).ptx();
      assertTrue(unfiltered.contains(PUSH), "split at the guard before the supplier's probe");
      assertTrue(!probedAfterThePop(unfiltered, 0), "the part probed before the push");
      GeneratedKernel filtered = kernel(star(conjunct), tables(0));
      String ptx = filtered.ptx();
      // Before the push: the part key's hash and the filter's bit; after the pop: the walk.
      assertTrue(ptx.indexOf(PUSH) < ptx.indexOf(POP), conjunct);
      int bit = ptx.indexOf(ProgramEmitter.PROBE_FILTER_SPLIT + " 0");
      assertTrue(bit >= 0 && bit < ptx.indexOf(PUSH), "the part's bit tested before the push");
      assertTrue(probedAfterThePop(ptx, 0), conjunct);
      assertTrue(ptx.substring(0, ptx.indexOf(PUSH)).contains("ld.global.nc.u8"),
          "the filter's byte read before the push");
      // Popped rows passed the bit: the part's walk does not read it again.
      int walk = ptx.indexOf("// probe of join table 0", ptx.indexOf(POP));
      Matcher probeDone = PROBE_DONE.matcher(ptx);
      assertTrue(probeDone.find(walk));
      String partProbe = ptx.substring(walk, probeDone.start());
      assertFalse(partProbe.contains("ld.global.nc.u8"), partProbe);
      assertNotEquals(AggregateUpdateGenerator.key(star(conjunct), INPUTS, SPEC,
          KernelFeatures.OLDEST, tables(0)), AggregateUpdateGenerator.key(star(conjunct),
          INPUTS, SPEC, KernelFeatures.OLDEST, new BitSet()));
      assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
      CompileReport report = GeneratedModule.compile(filtered, "sm_90").report(filtered.entry());
      assertTrue(report.clean(), report.toString());
    }
  }

  @Test
  void theItemLoopPairsItemsSoTheirFilterBytesAreReadTogether() throws Exception {
    String ptx = kernel(star("inner"), tables(0)).ptx();
    String loop = ptx.substring(ptx.indexOf("$L_item_loop"));
    int first = loop.indexOf(AggregateUpdateGenerator.PAIRED_ITEM + "0");
    int second = loop.indexOf(AggregateUpdateGenerator.PAIRED_ITEM + "1");
    int push = loop.indexOf(PUSH);
    assertTrue(0 <= first && first < second && second < push, "both first parts, then pushes");
    // Between the pair's first part and its pushes: no branch (a row outside the tile does not
    // pass instead), and the two bytes read without testing the filter's address.
    String parts = loop.substring(first, push);
    assertFalse(parts.contains("bra"), parts);
    assertEquals(2, AggregateBlockShapeTest.count(parts, "\tld.global.nc.u8"), parts);
    assertEquals(0, AggregateBlockShapeTest.count(parts, "ld.global.nc.u64"),
        "the keys come loaded ahead");
    assertEquals(2, AggregateBlockShapeTest.count(loop.substring(push), PUSH),
        "two pushes before a pop");
    assertFalse(ptx.contains("min.s64"), "no row clamped: nothing is read past the batch");
    // Keys that can be NULL come loaded ahead with their validity bytes: nothing read past the
    // batch either.
    List<InputSpec> nullableKeys = List.of(new InputSpec(LONG, Encoding.PLAIN, true),
        plain(INT), plain(LONG));
    String nullable = AggregateUpdateGenerator.generate(star("inner"), nullableKeys, SPEC,
        KernelFeatures.OLDEST, tables(0)).ptx();
    assertTrue(nullable.contains(AggregateUpdateGenerator.PAIRED_ITEM + "1"));
    assertFalse(nullable.contains("min.s64"), "no row clamped where the keys can be NULL");
    // A first part that loads a column it cannot load ahead (a GPU-FOR one) is paired too, a
    // row past the batch read at its last row.
    List<InputSpec> encodedKeys = List.of(new InputSpec(LONG, Encoding.FOR, false),
        plain(INT), plain(LONG));
    String clamped = AggregateUpdateGenerator.generate(star("inner"), encodedKeys, SPEC,
        KernelFeatures.OLDEST, tables(0)).ptx();
    assertTrue(clamped.contains(AggregateUpdateGenerator.PAIRED_ITEM + "1"));
    assertEquals(2, AggregateBlockShapeTest.count(clamped, "min.s64"), "each item's row");
  }

  @Test
  void aFilterThatKeepsRowsWithoutTheProbesRowIsNotSplitAtItsBit() throws Exception {
    for (String conjunct : List.of("anti", "or")) {
      String filtered = kernel(star(conjunct), tables(0, 1)).ptx();
      String unfiltered = kernel(star(conjunct), new BitSet()).ptx();
      assertEquals(withoutEntry(unfiltered), withoutEntry(filtered), conjunct);
    }
    // The supplier's table filtered, the part's (the first probe) not.
    assertEquals(withoutEntry(kernel(star("inner"), new BitSet()).ptx()),
        withoutEntry(kernel(star("inner"), tables(1)).ptx()));
  }

  @Test
  void theKernelIsKeyedByTheFilteredTableOfItsFirstProbeAlone() throws Exception {
    // The supplier's filter changes nothing in the kernel (its probe tests the filter's address
    // at run time): batches whose supplier table has one or not share the kernel.
    Program program = star("inner");
    assertEquals(0, ProgramEmitter.filterFirstProbeTable(program));
    assertEquals(key(program, tables(0)), key(program, tables(0, 1)));
    assertEquals(key(program, new BitSet()), key(program, tables(1)));
    assertNotEquals(key(program, tables(0)), key(program, new BitSet()));
    assertEquals(kernel(program, tables(0)).entry(), kernel(program, tables(0, 1)).entry());
    assertEquals(kernel(program, tables(0)).ptx(), kernel(program, tables(0, 1)).ptx());
    // Without a filter, no probe is the filter's.
    assertEquals(-1, ProgramEmitter.filterFirstProbeTable(
        ProgramBuilder.identity(List.of(LONG, INT, LONG), false)));
  }

  private static String key(Program program, BitSet probeFiltered) {
    return AggregateUpdateGenerator.key(program, INPUTS, SPEC, KernelFeatures.OLDEST,
        probeFiltered);
  }

  @Test
  void withoutFilteredTablesTheKeyIsUnchanged() {
    Program program = star("inner");
    assertEquals(AggregateUpdateGenerator.key(program, INPUTS, SPEC),
        AggregateUpdateGenerator.key(program, INPUTS, SPEC, KernelFeatures.OLDEST,
            new BitSet()));
  }

  private static String withoutEntry(String ptx) {
    return ptx.replaceAll("tessera_gen_aggregate_[0-9a-f]+", "ENTRY");
  }
}
