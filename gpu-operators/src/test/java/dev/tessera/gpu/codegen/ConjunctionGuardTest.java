package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Where the filter is a conjunction whose right operand probes a join table, the generated
 * kernels skip that probe for rows the left operand has decided (false, or NULL where nothing
 * but the filter's outcome depends on the conjunction, ProgramEmitter.keepOnly): one branch per
 * guarded conjunction and item, in the filter-project kernel (its items then no longer run in
 * lockstep) and in the aggregate update. A conjunction is an AND or ChainCompiler's SELECT(keep,
 * condition, false). Cheaper right operands get no branch unless they read a value an earlier
 * branch may have skipped. No GPU: what the kernels compute is the CUDA join suites'
 * (CudaHashJoinDifferentialTest).
 */
class ConjunctionGuardTest {
  private static final ColumnType INT = ColumnType.INT;
  private static final InputSpec PLAIN_INT = new InputSpec(INT, Encoding.PLAIN, false);
  private static final String SKIP = "conjunct_skipped";

  /**
   * StarJoinBench's program: probe part, category = 1, AND probe supplier, region = 1, AND the
   * date probe matched; or, with {@code probeRight} false, the second conjunct a comparison of a
   * fact column.
   */
  private static Program star(boolean probeRight) {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int part = b.table(new JoinTableSchema(List.of(INT), List.of(INT, INT)));
    int supplier = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int partRow = b.emitNew(Opcode.PROBE, part, b.constant(b.loadColumn(0)), 1);
    int category = b.emitNew(Opcode.LOAD_BUILD, part, partRow, 1);
    int keep = equalsOne(b, category);
    int second = probeRight
        ? equalsOne(b, b.emitNew(Opcode.LOAD_BUILD, supplier,
            b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(1)), 1), 0))
        : equalsOne(b, b.loadColumn(1));
    keep = b.emitNew(Opcode.AND, keep, second, 0);
    return b.build(keep, List.of(new Program.Output(b.emitNew(Opcode.LOAD_BUILD, part, partRow,
        0), INT), new Program.Output(b.loadColumn(3), INT)));
  }

  private static int equalsOne(ProgramBuilder b, int register) {
    return b.emitNew(Opcode.CMP_INT, register, b.loadConstant(1), Comparison.EQ.code());
  }

  private static List<InputSpec> inputs() {
    return List.of(PLAIN_INT, PLAIN_INT, PLAIN_INT, PLAIN_INT);
  }

  private static GeneratedKernel aggregate(Program program) throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(program, inputs(), new AggregateSpec(
        List.of(INT, INT), 1, List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)),
        false));
  }

  /**
   * Where the kernel last reads a word of join table {@code table}'s view, which it takes as a
   * parameter ({@link ProgramWords}); -1 where it reads none.
   */
  private static int lastViewRead(String ptx, Program program, int table) {
    ProgramWords words = ProgramWords.of(program, inputs().size());
    Matcher read = Pattern.compile("_program_words\\+(\\d+)\\]").matcher(ptx);
    int last = -1;
    while (read.find()) {
      int at = Integer.parseInt(read.group(1));
      if (at >= words.tableAt(table) && at < words.tableAt(table + 1)) {
        last = read.start();
      }
    }
    return last;
  }

  /** Branches to a skip label (each label is placed once and branched to once). */
  private static int guards(String ptx) {
    return (ptx.split(SKIP, -1).length - 1) / 2;
  }

  @Test
  void aProbeInTheRightOperandIsSkippedWhereTheLeftIsFalse() throws Exception {
    String filterProject = FilterProjectGenerator.generate(star(true), inputs()).ptx();
    String update = aggregate(star(true)).ptx();
    assertEquals(4, guards(filterProject), "one per item: 4 items per thread with probes");
    assertEquals(1, guards(update), "the update's items share one copy of the code");
    // The supplier's probe (reading table 1's view) comes after the branch.
    for (String ptx : List.of(filterProject, update)) {
      assertTrue(ptx.indexOf("bra $L_" + SKIP) < lastViewRead(ptx, star(true), 1), ptx);
    }
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    for (GeneratedKernel kernel : List.of(FilterProjectGenerator.generate(star(true), inputs()),
        aggregate(star(true)))) {
      assertCompilesClean(kernel);
    }
  }

  @Test
  void aLaterConjunctReadingAValueOfASkippedOneIsSkippedToo() throws Exception {
    // part.category = 1 AND supplier.name IS NOT NULL AND supplier.name STARTS_WITH 'A': the
    // third conjunct reads the name the second loaded (skipped where the first is false), so it
    // is skipped there too, though it probes nothing itself.
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT), false);
    int part = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int supplier = b.table(new JoinTableSchema(List.of(INT), List.of(ColumnType.STRING)));
    int category = b.emitNew(Opcode.LOAD_BUILD, part,
        b.emitNew(Opcode.PROBE, part, b.constant(b.loadColumn(0)), 1), 0);
    int name = b.emitNew(Opcode.LOAD_BUILD, supplier,
        b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(1)), 1), 0);
    int keep = b.emitNew(Opcode.AND, equalsOne(b, category),
        b.emitNew(Opcode.IS_NOT_NULL, name, 0, 0), 0);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.STARTS_WITH, name,
        b.loadString("A".getBytes(java.nio.charset.StandardCharsets.UTF_8)), 0), 0);
    Program program = b.build(keep, List.of(new Program.Output(b.loadColumn(1), INT)));
    GeneratedKernel update = AggregateUpdateGenerator.generate(program,
        List.of(PLAIN_INT, PLAIN_INT), new AggregateSpec(List.of(INT), 1, List.of(
            new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG)), false));
    assertEquals(2, guards(update.ptx()));
  }

  /**
   * The star program as ChainCompiler writes a chain of filters and probes: each later condition
   * as SELECT(keep, condition, otherwise) with {@code otherwise} the constant 0 (false).
   */
  private static Program chain(long otherwise) {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int part = b.table(new JoinTableSchema(List.of(INT), List.of(INT, INT)));
    int supplier = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int partRow = b.emitNew(Opcode.PROBE, part, b.constant(b.loadColumn(0)), 1);
    int keep = b.emitNew(Opcode.IS_NOT_NULL, partRow, 0, 0);
    keep = b.emitNew(Opcode.SELECT, keep,
        equalsOne(b, b.emitNew(Opcode.LOAD_BUILD, part, partRow, 1)), b.loadConstant(otherwise));
    int supplierRow = b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(1)), 1);
    keep = b.emitNew(Opcode.SELECT, keep, b.emitNew(Opcode.IS_NOT_NULL, supplierRow, 0, 0),
        b.loadConstant(otherwise));
    return b.build(keep, List.of(new Program.Output(b.emitNew(Opcode.LOAD_BUILD, supplier,
        supplierRow, 0), INT), new Program.Output(b.loadColumn(3), INT)));
  }

  @Test
  void aChainOfFiltersAsSelectsWithAFalseOtherwiseIsGuardedLikeAnAnd() throws Exception {
    String filterProject = FilterProjectGenerator.generate(chain(0), inputs()).ptx();
    String update = aggregate(chain(0)).ptx();
    // The supplier's probe, behind the second SELECT. The first SELECT's condition loads the
    // part's payload at a row its keep already probed (on every row): not worth a branch.
    assertEquals(4, guards(filterProject), "one per item");
    assertEquals(1, guards(update));
    for (String ptx : List.of(filterProject, update)) {
      assertTrue(ptx.indexOf("bra $L_" + SKIP) < lastViewRead(ptx, chain(0), 1), ptx);
    }
    // With any other constant the SELECT keeps rows whose keep is false: no guard, and another
    // kernel (the constant is otherwise an argument the kernel does not bake in).
    assertEquals(0, guards(FilterProjectGenerator.generate(chain(1), inputs()).ptx()));
    assertEquals(0, guards(aggregate(chain(1)).ptx()));
    assertTrue(!FilterProjectGenerator.key(chain(0), inputs())
        .equals(FilterProjectGenerator.key(chain(1), inputs())));
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    for (GeneratedKernel kernel : List.of(FilterProjectGenerator.generate(chain(0), inputs()),
        aggregate(chain(0)))) {
      assertCompilesClean(kernel);
    }
  }

  /**
   * The kernel compiles without a stack frame or spills, at once or, as the runtime compiles it
   * again (GeneratedKernels), with the in-jar compiler's other options. With its defaults the
   * in-jar compiler (CUDA 12.0's) at -O3 keeps some filter-project kernels of these programs to
   * 40 registers and spills a few bytes: the chain's since it reads its descriptors as a
   * parameter (ProgramWords), the star's since the probe's walk compares keys without the hash.
   * Its -O1 spills nothing there.
   */
  private static void assertCompilesClean(GeneratedKernel kernel) {
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    if (!report.clean()) {
      CompiledKernel again = GeneratedModule.compileAgain(kernel, "sm_90");
      assertTrue(again != null && again.report(kernel.entry()).clean(), report.toString());
    }
  }

  /** How a filter's conjunction is built in {@link #starAnd}. */
  private enum Shape {
    /** StarJoinBench's: category = 1 AND supplier.region = 1. */
    PLAIN,
    /** (category + 1) = 2 on the left: an ADD_INT, which may raise under ANSI. */
    ADDITION_ON_THE_LEFT,
    /** The AND also read by IS_NOT_NULL (not a conjunction), then ANDed with that. */
    READ_BY_ANOTHER_INSTRUCTION
  }

  private static Program starAnd(boolean ansi, Shape shape) {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT, INT), ansi);
    int part = b.table(new JoinTableSchema(List.of(INT), List.of(INT, INT)));
    int supplier = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int category = b.emitNew(Opcode.LOAD_BUILD, part,
        b.emitNew(Opcode.PROBE, part, b.constant(b.loadColumn(0)), 1), 1);
    int left = equalsOne(b, category);
    if (shape == Shape.ADDITION_ON_THE_LEFT) {
      int plusOne = b.emitNew(Opcode.ADD_INT, category, b.loadConstant(1), 32);
      left = b.emitNew(Opcode.CMP_INT, plusOne, b.loadConstant(2), Comparison.EQ.code());
    }
    int region = b.emitNew(Opcode.LOAD_BUILD, supplier,
        b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(1)), 1), 0);
    int keep = b.emitNew(Opcode.AND, left, equalsOne(b, region), 0);
    if (shape == Shape.READ_BY_ANOTHER_INSTRUCTION) {
      keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, keep, 0, 0), 0);
    }
    return b.build(keep, List.of(new Program.Output(b.loadColumn(2), INT),
        new Program.Output(b.loadColumn(3), INT)));
  }

  /**
   * Whether the kernel's first guard stops where the left operand is not true (NULL too: a
   * not.pred of "valid and true"), rather than only where it is valid and false.
   */
  private static boolean stopsWhereNotTrue(String ptx) {
    String[] lines = ptx.split("\n");
    for (int i = 1; i < lines.length; i++) {
      if (lines[i].contains("bra $L_" + SKIP)) {
        return lines[i - 1].trim().startsWith("not.pred");
      }
    }
    throw new AssertionError("no guard in " + ptx);
  }

  @Test
  void anAndOfAFilterThatRaisesNothingStopsWhereItsLeftOperandIsNull() throws Exception {
    // category = 1 is NULL where the part probe finds no row (StarJoinBench's sparse form): the
    // AND is then NULL or false, and the filter drops the row whatever the supplier probe says.
    for (boolean ansi : new boolean[] {false, true}) {
      Program program = starAnd(ansi, Shape.PLAIN);
      assertTrue(stopsWhereNotTrue(FilterProjectGenerator.generate(program, inputs()).ptx()));
      assertTrue(stopsWhereNotTrue(aggregate(program).ptx()));
    }
    // Without ANSI the addition raises nothing either.
    assertTrue(stopsWhereNotTrue(aggregate(starAnd(false, Shape.ADDITION_ON_THE_LEFT)).ptx()));
  }

  @Test
  void anAndStopsOnlyWhereItsLeftOperandIsFalseWhereSkippingItsRightCouldShow() throws Exception {
    // Under ANSI the filter's addition may raise, and Spark evaluates the right operand of a NULL
    // left one, so whether the AND is NULL or false could decide an error; and an AND read by an
    // instruction other than a conjunction must hold its exact value. Both stop only at false.
    for (Program program : List.of(starAnd(true, Shape.ADDITION_ON_THE_LEFT),
        starAnd(false, Shape.READ_BY_ANOTHER_INSTRUCTION))) {
      assertTrue(!stopsWhereNotTrue(FilterProjectGenerator.generate(program, inputs()).ptx()));
      assertTrue(!stopsWhereNotTrue(aggregate(program).ptx()));
    }
    // The two rules make different kernels of the same shape.
    assertTrue(!FilterProjectGenerator.key(starAnd(true, Shape.ADDITION_ON_THE_LEFT), inputs())
        .equals(FilterProjectGenerator.key(starAnd(false, Shape.ADDITION_ON_THE_LEFT), inputs())));
  }

  @Test
  void aRightOperandWithoutAProbeIsNotWorthABranch() throws Exception {
    assertEquals(0, guards(FilterProjectGenerator.generate(star(false), inputs()).ptx()));
    assertEquals(0, guards(aggregate(star(false)).ptx()));
  }
}
