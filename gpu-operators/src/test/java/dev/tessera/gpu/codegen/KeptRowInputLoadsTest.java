package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Where a generated aggregate kernel's item loads its columns: every plain column before the
 * filter (its loads' latencies overlap), but a GPU-FOR column that only the kept rows read (an
 * aggregation input or a group key the filter does not read) decoded after it. No GPU: the CUDA
 * aggregate suites run such kernels (SSB's fused aggregates are this shape).
 */
class KeptRowInputLoadsTest {
  private static final ColumnType INT = ColumnType.INT;
  /**
   * A GPU-FOR value's decode reads its first packed word (+8, after a 32-lane reference and the
   * widths word), once a value in the loop; its block's header the tile read (TileForHeaders).
   */
  private static final String FOR_DECODE = "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+8\\];";
  /** A plain INT value's load. */
  private static final String PLAIN_LOAD = "ld\\.global\\.nc\\.s32 %r\\d+, \\[%rd\\d+\\];";

  /**
   * A star join's shape in small: probe a table by column 0 (the filter keeps the rows it
   * finds); GROUP BY the build row's payload and column 1, SUM(column 2).
   */
  private static String kernel(Encoding encoding) throws CodegenUnsupportedException {
    ProgramBuilder b = new ProgramBuilder(List.of(INT, INT, INT), false);
    int table = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int row = b.emitNew(Opcode.PROBE, table, b.constant(b.loadColumn(0)), 1);
    int keep = b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
    Program program = b.build(keep, List.of(
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, table, row, 0), INT),
        new Program.Output(b.loadColumn(1), INT),
        new Program.Output(b.loadColumn(2), INT)));
    AggregateSpec spec = new AggregateSpec(List.of(INT, INT, INT), 2,
        List.of(new AggregateFunction(Kind.SUM, 2, ColumnType.LONG)), false);
    List<InputSpec> inputs = program.inputTypes().stream()
        .map(t -> new InputSpec(t, encoding, false)).toList();
    return AggregateUpdateGenerator.generate(program, inputs, spec,
        KernelFeatures.forArch("sm_90")).ptx();
  }

  /** The item's text before its probe, and from the probe to the kept row's queueing. */
  private static String[] beforeAndAfterTheFilter(String ptx) {
    int item = ptx.indexOf("// item 0");
    int probe = ptx.indexOf("// probe of join table 0", item);
    int queued = ptx.indexOf("// the kept row into the warp's queue", probe);
    assertTrue(item >= 0 && probe > item && queued > probe, "the item's probe and queue");
    return new String[] {ptx.substring(item, probe), ptx.substring(probe, queued)};
  }

  @Test
  void gpuForInputsTheFilterDoesNotReadAreDecodedByTheKeptRows() throws Exception {
    String[] parts = beforeAndAfterTheFilter(kernel(Encoding.FOR));
    assertEquals(1, hits(parts[0], FOR_DECODE), "decoded before the probe: its key only");
    assertEquals(2, hits(parts[1], FOR_DECODE), "decoded after it: the group key and the input");
  }

  @Test
  void plainInputsAreAllLoadedBeforeTheFilter() throws Exception {
    String[] parts = beforeAndAfterTheFilter(kernel(Encoding.PLAIN));
    assertEquals(3, hits(parts[0], PLAIN_LOAD), "loaded before the probe: every column");
    assertEquals(0, hits(parts[1], FOR_DECODE));
  }
}
