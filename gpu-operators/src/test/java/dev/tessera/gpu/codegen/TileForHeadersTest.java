package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A grouped aggregate of 128-thread blocks over GPU-FOR columns (SSB Q2.1's shape: a probe of the
 * part table, then one of the supplier table, grouped by the part's STRING payload) reads the
 * block headers of its items' columns once a tile, four lanes of each warp one tile's block each,
 * into the warp's shared memory; each item of the loop takes its block's from there and reads
 * only its value's words. The rows popped after the first probe lie anywhere and read their own.
 * No GPU: the CUDA encoded-input suite checks the values (EncodedInputContractTest's probed
 * grouped aggregates over batches of several rounds).
 */
class TileForHeadersTest {
  private static final String TILE_HEADERS = "// the tile's GPU-FOR headers (TileForHeaders)";
  private static final String POP = "off the warp's stack";
  /**
   * A header's bit-widths word (after a 32-lane reference): read where a value's decode reads its
   * block's header.
   */
  private static final String WIDTHS = "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+4\\];";

  private static GeneratedKernel kernel(Encoding encoding) throws CodegenUnsupportedException {
    ColumnType i = ColumnType.INT;
    ProgramBuilder b = new ProgramBuilder(List.of(i, i, i), true);
    int parts = b.table(new JoinTableSchema(List.of(i), List.of(ColumnType.STRING, i)));
    int suppliers = b.table(new JoinTableSchema(List.of(i), List.of(i)));
    int part = b.emitNew(Opcode.PROBE, parts, b.constant(b.loadColumn(0)), 1);
    int keep = b.emitNew(Opcode.IS_NOT_NULL, part, 0, 0);
    int supplier = b.emitNew(Opcode.PROBE, suppliers, b.constant(b.loadColumn(1)), 1);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, supplier, 0, 0), 0);
    Program program = b.build(keep, List.of(
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, parts, part, 0), ColumnType.STRING),
        new Program.Output(b.loadColumn(2), i)));
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.STRING, i), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)), true);
    InputSpec column = new InputSpec(i, encoding, false);
    return AggregateUpdateGenerator.generate(program, List.of(column, column, column), spec,
        KernelFeatures.forArch("sm_90"));
  }

  @Test
  void theItemsTakeTheirHeadersFromTheWarpsCopy() throws Exception {
    String ptx = kernel(Encoding.FOR).ptx();
    assertEquals(1, hits(ptx, Pattern.quote(TILE_HEADERS)), "read once, at the tile's start");
    int pop = ptx.indexOf(POP);
    String tile = ptx.substring(ptx.indexOf(TILE_HEADERS), pop);
    // The items' first part loads the part's key (column 0) only: its header is read at the
    // tile's start, one block start, reference and widths word a lane, and stored for the warp;
    // each of the loop's two paired items takes it with one vector load.
    assertEquals(1, hits(tile, WIDTHS), "headers read before the pop");
    assertEquals(1, hits(tile, "st\\.shared\\.v4\\.b32 "), "headers stored");
    assertEquals(2, hits(tile, "ld\\.shared\\.v4\\.b32 "), "headers taken, one an item");
    String header = tile.substring(0, tile.indexOf("item_loop"));
    assertEquals(2, hits(header, "bar\\.warp\\.sync -1;"), "the copy written between syncs");
    assertEquals(1, hits(header, "st\\.shared\\.v4\\.b32 "), "stored before the items");
    // After the pop the rows decode the supplier's key and the value with their own headers.
    assertEquals(2, hits(ptx.substring(pop), WIDTHS), "headers read after the pop");
    assertTrue(ptx.contains(".shared .align 16 .b8 "), "the warps' copies");
  }

  /**
   * A lane that reads no header (past the tile's items, or in the pass after the last tile)
   * still stores its words, predicated off: each is written first, or ptxas keeps it live from
   * the kernel's start through every loop (it might hold the last tile's), registers SSB's
   * grouped kernels need elsewhere.
   */
  @Test
  void everyHeaderWordIsWrittenBeforeItsPredicatedLoad() throws Exception {
    String ptx = kernel(Encoding.FOR).ptx();
    String tile = ptx.substring(ptx.indexOf(TILE_HEADERS), ptx.indexOf("item_loop"));
    Matcher load = Pattern.compile("@%p\\d+ ld\\.global\\.nc\\.[us]32 (%r\\d+),").matcher(tile);
    int loads = 0;
    while (load.find()) {
      loads++;
      String before = tile.substring(0, load.start());
      assertTrue(before.contains("mov.u32 " + load.group(1) + ", 0;"),
          load.group(1) + " is loaded under a predicate without being written first");
    }
    assertEquals(3, loads, "the block start, the reference and the widths word");
  }

  @Test
  void plainColumnsHaveNoHeaders() throws Exception {
    String ptx = kernel(Encoding.PLAIN).ptx();
    assertFalse(ptx.contains(TILE_HEADERS));
    assertEquals(0, hits(ptx, "ld\\.shared\\.v4\\.b32 "));
  }

  @Test
  void aTilesItemsAreReadByAWarpsLanes() {
    assertThrows(IllegalArgumentException.class, () -> new TileForHeaders(new PtxBuilder(),
        null, List.of(), new TreeSet<>(), 64, "headers", 128));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelCompilesClean() throws Exception {
    GeneratedKernel kernel = kernel(Encoding.FOR);
    TestPtx.assertCompilesClean(kernel, "sm_90");
  }
}
