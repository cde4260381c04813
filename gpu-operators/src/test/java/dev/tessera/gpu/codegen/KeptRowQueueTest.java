package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which generated aggregate kernels queue their kept rows for the update (KeptRowQueue), the
 * queue's shared memory, and that such a kernel compiles without a stack and without holding its
 * rows' values in registers through the update. No GPU: the CUDA aggregate suites run them
 * (CudaHashAggregateDifferentialTest's fused pipeline and program-made string keys are such
 * kernels).
 */
class KeptRowQueueTest {
  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType STRING = ColumnType.STRING;
  /** The queue in a kernel: its shared array, and a row taking its slot. */
  private static final String QUEUE = "(?s).*\\.shared \\.align 8 \\.b8 \\w+_kept\\[\\d+\\];"
      + ".*atom\\.shared\\.add\\.u32 %r\\d+, \\[%r\\d+\\], 1;.*";

  /**
   * SSB Q3.1's shape: probes of customer, supplier and date (a filter keeping the rows all three
   * find), GROUP BY c_nation, s_nation (strings of the join tables), d_year; SUM(revenue).
   */
  private static Program starJoin(boolean filtered) {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT, INT), false);
    int customer = b.table(new JoinTableSchema(List.of(INT), List.of(STRING)));
    int supplier = b.table(new JoinTableSchema(List.of(INT), List.of(STRING)));
    int date = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int customerRow = b.emitNew(Opcode.PROBE, customer, b.constant(b.loadColumn(0)), 1);
    int supplierRow = b.emitNew(Opcode.PROBE, supplier, b.constant(b.loadColumn(1)), 1);
    int dateRow = b.emitNew(Opcode.PROBE, date, b.constant(b.loadColumn(2)), 1);
    int keep = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, customerRow, 0, 0),
        b.emitNew(Opcode.IS_NOT_NULL, supplierRow, 0, 0), 0);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, dateRow, 0, 0), 0);
    List<Program.Output> outputs = List.of(
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, customer, customerRow, 0), STRING),
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, supplier, supplierRow, 0), STRING),
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, date, dateRow, 0), INT),
        new Program.Output(b.loadColumn(3), INT));
    return b.build(filtered ? keep : -1, outputs);
  }

  private static final AggregateSpec STAR_JOIN_SPEC = new AggregateSpec(
      List.of(STRING, STRING, INT, INT), 3,
      List.of(new AggregateFunction(Kind.SUM, 3, ColumnType.LONG)), false);

  private static GeneratedKernel kernel(Program program, AggregateSpec spec, Encoding encoding)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = program.inputTypes().stream()
        .map(t -> new InputSpec(t, encoding, false)).toList();
    return AggregateUpdateGenerator.generate(program, inputs, spec, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aFilteredAggregationWhoseGroupsAreFoundGloballyQueuesItsKeptRows() throws Exception {
    for (Encoding encoding : List.of(Encoding.PLAIN, Encoding.FOR)) {
      GeneratedKernel k = kernel(starJoin(true), STAR_JOIN_SPEC, encoding);
      assertTrue(k.ptx().matches(QUEUE), encoding.toString());
    }
  }

  @Test
  void nothingIsQueuedWithoutAFilterOrKeysOrWithGpuDforInputs() throws Exception {
    assertFalse(kernel(starJoin(false), STAR_JOIN_SPEC, Encoding.PLAIN).ptx().matches(QUEUE));
    // No keys: no lookup (one fixed-width key, which the per-block table holds: see below).
    AggregateSpec global = new AggregateSpec(List.of(STRING, STRING, INT, INT), 0,
        List.of(new AggregateFunction(Kind.SUM, 3, ColumnType.LONG)), false);
    assertFalse(kernel(starJoin(true), global, Encoding.PLAIN).ptx().matches(QUEUE),
        "a global aggregate");
    // GPU-DFOR inputs: the items' code is there once per item, the update with it.
    assertFalse(kernel(starJoin(true), STAR_JOIN_SPEC, Encoding.DFOR).ptx().matches(QUEUE));
  }

  @Test
  void theQueuesTakeSixtyFourSlotsAWarpAndAtMostSixteenKiBABlock() {
    // 4 warps x 64 slots x (2 string values of 8 bytes, 2 INT values of 4, 2 lengths, the null
    // flags).
    assertEquals(4 * 64 * (2 * 8 + 2 * 4 + 2 * 4 + 4),
        KeptRowQueue.blockBytes(STAR_JOIN_SPEC, 128));
    assertTrue(KeptRowQueue.admits(STAR_JOIN_SPEC, 128));
    assertFalse(KeptRowQueue.admits(LocalKeyTableTest.spec(List.of(ColumnType.LONG)), 128),
        "the table holds the key");
    List<ColumnType> wide = new ArrayList<>(Collections.nCopies(8, ColumnType.LONG));
    AggregateSpec eightColumns = new AggregateSpec(wide, 2, List.of(
        new AggregateFunction(Kind.SUM, 2, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 3, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 4, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 5, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 6, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 7, ColumnType.LONG)), false);
    assertEquals(4 * 64 * (8 * 8 + 4), KeptRowQueue.blockBytes(eightColumns, 128));
    assertFalse(KeptRowQueue.admits(eightColumns, 128), "17 KiB of queues");
  }

  /**
   * The queued rows' values are stored where the program defined them: stored after the lanes
   * meet, they lived from one item to the next through the update (83 registers, against 66
   * without the queue and 72 with it stored early). 72 is the most that leaves 7 blocks of 128
   * threads a multiprocessor (registers go to a warp 256 at a time).
   */
  @Test
  void theStarJoinKernelCompilesWithoutStackAndHoldsNoRowThroughTheUpdate() throws Exception {
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    GeneratedKernel k = kernel(starJoin(true), STAR_JOIN_SPEC, Encoding.FOR);
    CompileReport report = GeneratedModule.compile(k, "sm_90").report(k.entry());
    assertEquals(0, report.stackFrameBytes(), report.infoLog());
    assertEquals(0, report.spillStoreBytes(), report.infoLog());
    // 60 since every register a push reads is written where its item is skipped (72 before):
    // 64 is the most that leaves 8 blocks of 128 threads a multiprocessor.
    assertTrue(report.registers() <= 64, report.infoLog());
  }
}
