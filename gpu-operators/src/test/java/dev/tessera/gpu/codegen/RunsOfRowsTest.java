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
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A global aggregate over GPU-FOR columns takes a thread's rows as one run of eight consecutive
 * rows in 1,024-row tiles, and reads each column's block header (and computes its values' mask)
 * once for the run, each row only its packed words. No GPU (the CUDA encoded-input and aggregate
 * suites check the values).
 */
class RunsOfRowsTest {
  private static final int RUN_ROWS = 8;
  /** A 1,024-row tile's first row: the block's index, or the grid, times 1,024 (32-bit). */
  private static final String TILE_ROWS = "(mul|mad)\\.lo\\.u32 %r\\d+, %r\\d+, 1024[;,]";
  private static final List<ColumnType> TYPES = List.of(ColumnType.INT, ColumnType.INT);
  /** COUNT(*), SUM of column 0, MIN of column 1: accumulated in registers. */
  private static final AggregateSpec SPEC = new AggregateSpec(TYPES, 0,
      List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
          new AggregateFunction(Kind.SUM, 0, ColumnType.INT),
          new AggregateFunction(Kind.MIN, 1, ColumnType.INT)), false);

  private static GeneratedKernel kernel(Encoding encoding) throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(TYPES, false),
        List.of(new InputSpec(ColumnType.INT, encoding, false),
            new InputSpec(ColumnType.INT, encoding, false)),
        SPEC, KernelFeatures.forArch("sm_90"));
  }

  @Test
  void aThreadsEightRowsShareTheirHeaders() throws Exception {
    String ptx = kernel(Encoding.FOR).ptx();
    assertTrue(ptx.contains(AggregateUpdateGenerator.RUN_MARK), "not one run of rows");
    // Tiles of 128 threads x 8 rows (the block's first tile, then a grid of them further); a
    // thread's first row is 8 x its index.
    assertEquals(2, hits(ptx, TILE_ROWS), "the tile's rows");
    assertEquals(1, hits(ptx, "mul\\.lo\\.u32 %r\\d+, %r\\d+, " + RUN_ROWS + ";"),
        "the run's first row");
    // Per column: one block start and one widths word a run (a 32-lane reference is one word,
    // so the widths are at +4 and the packed words from +8); per row, its first packed word.
    int columns = TYPES.size();
    assertEquals(columns, hits(ptx, "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+4\\];"),
        "widths words read");
    assertEquals(columns * RUN_ROWS, hits(ptx, "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+8\\];"),
        "first packed words read");
    assertEquals(columns * RUN_ROWS,
        hits(ptx, "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+12\\];"),
        "second packed words read");
    // The mask of a value's bits, (1 << width) - 1: once a run per column, not once a row (the
    // rows' items lie in blocks of their own, across which the compiler computed it again).
    assertEquals(columns, hits(ptx, "shl\\.b32 %r\\d+, 1, %r\\d+;"), "masks");
  }

  @Test
  void plainAndGpuDforColumnsAreNotRuns() throws Exception {
    for (Encoding encoding : new Encoding[] {Encoding.PLAIN, Encoding.DFOR}) {
      String ptx = kernel(encoding).ptx();
      assertFalse(ptx.contains(AggregateUpdateGenerator.RUN_MARK), encoding.toString());
      assertEquals(0, hits(ptx, TILE_ROWS), encoding + ": 512-row tiles");
    }
  }

  @Test
  @RequiresPtxCompiler
  void theRunKernelCompilesClean() throws Exception {
    GeneratedKernel kernel = kernel(Encoding.FOR);
    TestPtx.assertCompilesClean(kernel, "sm_90");
  }
}
