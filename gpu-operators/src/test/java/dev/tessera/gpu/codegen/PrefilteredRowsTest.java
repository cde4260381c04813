package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An aggregate whose filter probes a join table behind conjuncts that read a value (SSB Q1.1:
 * the date's probe behind the discount and quantity ranges; Q2.1: the supplier's behind the
 * part's) runs those conjuncts for each of the thread's items, and the probe and the rest once
 * for 32 rows that passed them, taken from the warp's stack in shared memory (PrefilteredRows).
 * No GPU: the CUDA encoded-input suite checks the results (EncodedInputContractTest's probed
 * global and grouped aggregates).
 */
class PrefilteredRowsTest {
  private static final String PUSH = "onto the warp's stack";
  private static final String POP = "off the warp's stack";
  private static final String PROBE = "// probe of join table 0";

  /**
   * SSB Q1.1's program: IS NOT NULL(date key) AND discount in [1, 3] AND quantity < 25 AND the
   * date probe matched; SUM(price * discount). With {@code ansi} and {@code riskyFilter}, the
   * quantity's conjunct is quantity + 1 < 26, which can overflow.
   */
  private static Program q11(boolean ansi, boolean riskyFilter) {
    ColumnType i = ColumnType.INT;
    ProgramBuilder b = new ProgramBuilder(List.of(i, i, i, i), ansi);
    int dates = b.table(new JoinTableSchema(List.of(i), List.of(i)));
    int dateKey = b.loadColumn(0);
    int discount = b.loadColumn(1);
    int quantity = b.loadColumn(2);
    int keep = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, dateKey, 0, 0),
        compare(b, discount, 1, Comparison.GE), 0);
    keep = b.emitNew(Opcode.AND, keep, compare(b, discount, 3, Comparison.LE), 0);
    int small = riskyFilter
        ? compare(b, b.emitNew(Opcode.ADD_INT, quantity, b.loadConstant(1), 32), 26,
            Comparison.LT)
        : compare(b, quantity, 25, Comparison.LT);
    keep = b.emitNew(Opcode.AND, keep, small, 0);
    int found = b.emitNew(Opcode.IS_NOT_NULL,
        b.emitNew(Opcode.PROBE, dates, b.constant(b.loadColumn(0)), 1), 0, 0);
    keep = b.emitNew(Opcode.AND, keep, found, 0);
    int revenue = b.emitNew(Opcode.MUL_INT, b.loadColumn(3), discount, 32);
    return b.build(keep, List.of(new Program.Output(revenue, ColumnType.INT)));
  }

  private static int compare(ProgramBuilder b, int register, long constant, Comparison c) {
    return b.emitNew(Opcode.CMP_INT, register, b.loadConstant(constant), c.code());
  }

  private static List<InputSpec> inputs(Encoding encoding) {
    InputSpec column = new InputSpec(ColumnType.INT, encoding, false);
    return List.of(column, column, column, column);
  }

  private static final AggregateSpec SUM = new AggregateSpec(List.of(ColumnType.INT), 0,
      List.of(new AggregateFunction(Kind.SUM, 0, ColumnType.LONG)), true);

  private static String ptx(Program program, Encoding encoding, AggregateSpec spec)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(program, inputs(encoding), spec,
        KernelFeatures.forArch("sm_90")).ptx();
  }

  @ParameterizedTest
  @EnumSource(value = Encoding.class, names = {"FOR", "PLAIN"})
  void theProbeRunsOnceForTheRowsItsConjunctsPassed(Encoding encoding) throws Exception {
    String ptx = ptx(q11(true, false), encoding, SUM);
    int items = encoding == Encoding.FOR ? 8 : 4;
    assertEquals(items, hits(ptx, PUSH), "a push an item");
    assertEquals(1, hits(ptx, POP), "one pop");
    assertEquals(1, hits(ptx, PROBE), "one probe, after the pop");
    assertTrue(ptx.indexOf(PROBE) > ptx.indexOf(POP), "the probe after the pop");
    assertEquals(items, hits(ptx, "vote\\.sync\\.ballot\\.b32"), "a ballot an item");
    // Each passing row carries its discount (a 32-bit value) with it, not the date key, which
    // the cheap conjuncts only check for NULLs (it has none).
    assertEquals(2, hits(ptx, "\\.shared \\.align 4 \\.b32 \\w+_prefiltered_(rows|v\\d+)\\["),
        "the row and the discount");
    assertEquals(0, hits(ptx, "\\.shared \\.align 8 \\.b64 \\w+_prefiltered_"), "64-bit values");
  }

  @Test
  void aRunReadsTheHeadersOfTheConjunctsColumnsOnly() throws Exception {
    String ptx = ptx(q11(true, false), Encoding.FOR, SUM);
    assertTrue(ptx.contains(AggregateUpdateGenerator.RUN_MARK), "not one run of rows");
    String items = ptx.substring(0, ptx.indexOf(POP));
    // The discount's and the quantity's widths words, once a run; the date key and the price
    // are decoded where a popped row reads them.
    assertEquals(2, hits(items, "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+4\\];"),
        "widths words read by the items");
    assertEquals(2, hits(ptx.substring(ptx.indexOf(POP)),
        "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+4\\];"), "widths words read after the pop");
  }

  @Test
  void notWhereADroppedRowCouldOweAnErrorNorWithoutAProbe() throws Exception {
    assertFalse(ptx(q11(true, true), Encoding.FOR, SUM).contains(PUSH),
        "the filter's ANSI add can fail: a row the cheap conjuncts drop still reports it");
    assertTrue(ptx(q11(false, true), Encoding.FOR, SUM).contains(PUSH),
        "without ANSI the add wraps");
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.INT, ColumnType.INT), false);
    int keep = compare(b, b.loadColumn(0), 3, Comparison.LT);
    Program noProbe = b.build(keep, List.of(new Program.Output(b.loadColumn(1), ColumnType.INT)));
    AggregateSpec sum = new AggregateSpec(List.of(ColumnType.INT), 0,
        List.of(new AggregateFunction(Kind.SUM, 0, ColumnType.LONG)), false);
    assertFalse(AggregateUpdateGenerator.generate(noProbe, inputs(Encoding.FOR).subList(0, 2),
        sum, KernelFeatures.forArch("sm_90")).ptx().contains(PUSH), "no probe");
  }

  /**
   * SSB Q2.1's shape: NULL checks of the join keys (which have no NULLs), then a probe of the
   * part table, then one of the supplier table, grouped by a STRING payload of the first: the
   * first probe runs for every row; the second, the group's lookup and the kept-row queue's push
   * for the rows it found, popped after each item. Grouped by an INT instead, the kernel fills
   * the multiprocessor with blocks of a size known at launch, which the stacks do not serve.
   */
  @Test
  void aGroupedAggregateSplitsAfterItsFirstProbe() throws Exception {
    ColumnType i = ColumnType.INT;
    ProgramBuilder b = new ProgramBuilder(List.of(i, i, i), true);
    int parts = b.table(new JoinTableSchema(List.of(i), List.of(ColumnType.STRING, i)));
    int suppliers = b.table(new JoinTableSchema(List.of(i), List.of(i)));
    int keep = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, b.loadColumn(0), 0, 0),
        b.emitNew(Opcode.IS_NOT_NULL, b.loadColumn(1), 0, 0), 0);
    int part = b.emitNew(Opcode.PROBE, parts, b.constant(b.loadColumn(0)), 1);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, part, 0, 0), 0);
    int supplier = b.emitNew(Opcode.PROBE, suppliers, b.constant(b.loadColumn(1)), 1);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, supplier, 0, 0), 0);
    for (boolean stringKey : new boolean[] {true, false}) {
      Program program = b.build(keep, List.of(
          new Program.Output(b.emitNew(Opcode.LOAD_BUILD, parts, part, stringKey ? 0 : 1),
              stringKey ? ColumnType.STRING : i),
          new Program.Output(b.loadColumn(2), i)));
      AggregateSpec grouped = new AggregateSpec(List.of(stringKey ? ColumnType.STRING : i, i),
          1, List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)), true);
      String ptx = AggregateUpdateGenerator.generate(program, inputs(Encoding.FOR).subList(0, 3),
          grouped, KernelFeatures.forArch("sm_90")).ptx();
      if (!stringKey) {
        assertFalse(ptx.contains(PUSH), "a kernel of any block size");
        continue;
      }
      assertEquals(2, hits(ptx, PUSH), "two pushes, the item loop's pair");
      // The pass that flushes the stack skips the pair's first parts (its rows would be read
      // past the batch) and their pushes with them: a push after the skip would read registers
      // the skip did not write (see everyRegisterAPushReadsIsWrittenWhereItsItemIsSkipped).
      int pairDone = ptx.indexOf("$L_pair_done");
      assertTrue(pairDone >= 0, "the flushing pass skips the pair");
      assertTrue(ptx.indexOf("$L_pair_done", pairDone + 1) > ptx.lastIndexOf(PUSH),
          "the skip ends after both pushes");
      assertEquals(1, hits(ptx, POP), "one pop");
      String beforePop = ptx.substring(0, ptx.indexOf(POP));
      assertEquals(2, hits(beforePop, "// probe of join table"), "the first probe, per item");
      assertEquals(3, hits(ptx, "// probe of join table"), "the second after the pop");
      assertTrue(ptx.indexOf("KeptRowQueue") > ptx.indexOf(POP), "the queue after the pop");
      // A row carries the part's build row (its name loaded after) and nothing else.
      assertEquals(1, hits(ptx, "\\.shared \\.align 8 \\.b64 \\w+_prefiltered_v\\d+\\["),
          "the build row");
    }
  }

  /**
   * A lane whose item lies outside the tile skips the item's first part but joins the warp's
   * push, which reads (predicated off) the registers that part writes: each must be written on
   * the skipping path too, or ptxas keeps it live through every loop of the kernel, holding what
   * the last item left (SSB Q1.1's kernel: 64 registers, 39 with them written).
   */
  @ParameterizedTest
  @EnumSource(value = Encoding.class, names = {"FOR", "PLAIN"})
  void everyRegisterAPushReadsIsWrittenWhereItsItemIsSkipped(Encoding encoding)
      throws Exception {
    String ptx = ptx(q11(true, false), encoding, SUM);
    Matcher skip = Pattern.compile("@%p\\d+ bra (\\$L_item\\d+_outside_\\d+);").matcher(ptx);
    int items = 0;
    while (skip.find()) {
      items++;
      String label = skip.group(1);
      int skipped = ptx.indexOf(label + ":");
      assertTrue(skipped > skip.end(), label + " placed after its branch");
      int push = ptx.indexOf(PUSH, skipped);
      int pushed = ptx.indexOf("popc.b32", ptx.indexOf("popc.b32", push) + 1); // the count
      Set<String> written = written(ptx.substring(0, skip.start()));
      written.addAll(written(ptx.substring(skipped, pushed))); // the push's own too
      Matcher store = Pattern.compile("st\\.shared\\.\\w+ \\[[^]]+\\], (%\\w+);")
          .matcher(ptx.substring(push, pushed));
      int stores = 0;
      while (store.find()) {
        stores++;
        assertTrue(written.contains(store.group(1)), store.group(1) + ", stored by the push after "
            + label + ", is not written where the item is skipped");
      }
      assertTrue(stores >= 2, "the row and the discount");
    }
    assertEquals(encoding == Encoding.FOR ? 8 : 4, items, "an item's skip each");
  }

  /** The registers {@code ptx}'s instructions write (their first operand). */
  private static Set<String> written(String ptx) {
    Set<String> written = new HashSet<>();
    Matcher m = Pattern.compile("(?m)^\\s*(?:@!?%p\\d+ )?[a-z][\\w.]* (%\\w+),").matcher(ptx);
    while (m.find()) {
      written.add(m.group(1));
    }
    return written;
  }

  @ParameterizedTest
  @EnumSource(value = Encoding.class, names = {"FOR", "PLAIN"})
  @RequiresPtxCompiler
  void theKernelCompilesClean(Encoding encoding) throws Exception {
    GeneratedKernel kernel = AggregateUpdateGenerator.generate(q11(true, false),
        inputs(encoding), SUM, KernelFeatures.forArch("sm_90"));
    TestPtx.assertCompilesClean(kernel, "sm_90");
  }
}
