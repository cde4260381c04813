package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Which generated aggregate kernels run one block a multiprocessor of the launch's size (no
 * {@code .maxntid}, the block's size read from {@code %ntid.x}), and which ask L2 for their
 * tiles. No GPU (the CUDA differential suites run them).
 */
class AggregateBlockShapeTest {
  private static final String FIXED_BLOCK = ".maxntid 128, 1, 1";
  /** The read of the block's count of claimed entries (LocalKeyTable.hasRoom). */
  private static final Pattern READS_CLAIMS =
      Pattern.compile("ld\\.relaxed\\.cta\\.shared\\.u32 %r\\d+, \\[\\w+_claims\\]");
  /** A load of a row's word ahead of its item (LookaheadColumns.load: where in the batch). */
  private static final Pattern AHEAD = Pattern.compile("@%p\\d+ ld\\.global\\.nc\\.u64");
  /** A load of a row's validity byte ahead of its item (LookaheadColumns.load). */
  private static final Pattern AHEAD_BYTE = Pattern.compile("@%p\\d+ ld\\.global\\.nc\\.u8");
  /** The register a kernel of the launch's block reads its block's threads into. */
  private static final Pattern NTID = Pattern.compile("mov\\.u32 (%r\\d+), %ntid\\.x;");

  private static AggregateSpec spec(List<ColumnType> keys) {
    return LocalKeyTableTest.spec(keys);
  }

  /** The aggregation's columns as they are, or WHERE value > 0 (ShortStringTableTest's too). */
  static Program program(AggregateSpec spec, boolean filtered) {
    List<ColumnType> types = spec.inputTypes();
    if (!filtered) {
      return ProgramBuilder.identity(types, false);
    }
    ProgramBuilder b = new ProgramBuilder(types, false);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
    }
    int value = outputs.get(types.size() - 1).register();
    int keep = b.emitNew(Opcode.CMP_INT, value, b.loadConstant(0), Comparison.GT.code());
    return b.build(keep, outputs);
  }

  private static List<InputSpec> inputs(AggregateSpec spec, Encoding encoding) {
    return spec.inputTypes().stream().map(t -> new InputSpec(t, encoding, false)).toList();
  }

  private static String ptx(AggregateSpec spec, boolean filtered, Encoding encoding)
      throws CodegenUnsupportedException {
    return AggregateUpdateGenerator.generate(program(spec, filtered), inputs(spec, encoding),
        spec, KernelFeatures.forArch("sm_90")).ptx();
  }

  @Test
  void aKernelWhoseTableIsFoundByKeyTakesTheLaunchsBlock() throws Exception {
    // One fixed-width key, or two where the kernel probes no join table (LocalKeyTableTest).
    for (List<ColumnType> keys : List.of(List.of(ColumnType.LONG),
        List.of(ColumnType.INT, ColumnType.INT))) {
      AggregateSpec keyed = spec(keys);
      for (boolean filtered : new boolean[] {false, true}) {
        assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(program(keyed, filtered), keyed,
            inputs(keyed, Encoding.PLAIN)), keys.toString());
        String ptx = ptx(keyed, filtered, Encoding.PLAIN);
        assertFalse(ptx.contains(".maxntid"));
        assertTrue(ptx.contains("%ntid.x"));
      }
    }

    // Found by group (three keys) behind a filter, or GPU-DFOR tiles decoded by 128 threads: a
    // fixed block.
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    AggregateSpec threeKeys = spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT));
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(program(threeKeys, true),
        threeKeys, inputs(threeKeys, Encoding.PLAIN)));
    assertTrue(ptx(threeKeys, true, Encoding.PLAIN).contains(FIXED_BLOCK));
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(program(keyed, false), keyed,
        inputs(keyed, Encoding.DFOR)));
    assertTrue(ptx(keyed, false, Encoding.DFOR).contains(FIXED_BLOCK));
  }

  @Test
  void anUnfilteredKernelOfKeysFoundByGroupTakesTheLaunchsBlock() throws Exception {
    // Its table is found by group; without a filter or a probe it fills the multiprocessor (its
    // 2,048 entries a constant), with a filter its warps queue their kept rows in blocks of 128.
    // (One string key's kernel fills it with a filter too: ShortStringTableTest.)
    for (List<ColumnType> keys : List.of(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT),
        List.of(ColumnType.LONG, ColumnType.STRING))) {
      AggregateSpec spec = spec(keys);
      assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(program(spec, false), spec,
          inputs(spec, Encoding.PLAIN)), keys.toString());
      String all = ptx(spec, false, Encoding.PLAIN);
      assertFalse(all.contains(".maxntid"));
      assertTrue(all.contains("%ntid.x"));
      assertTrue(Pattern.compile("mov\\.u64 %rd\\d+, 2048;").matcher(all).find());
      assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(program(spec, true), spec,
          inputs(spec, Encoding.PLAIN)));
      assertTrue(ptx(spec, true, Encoding.PLAIN).contains(FIXED_BLOCK));
      GeneratedKernel kernel = AggregateUpdateGenerator.generate(program(spec, false),
          inputs(spec, Encoding.PLAIN), spec, KernelFeatures.forArch("sm_90"));
      CompileReport report = TestPtx.assertCompilesClean(kernel, "sm_90");
      assertTrue(report.registers() <= AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS,
          keys + ": " + report.summary());
    }
  }

  @Test
  void onlyAKernelOfTheLaunchsBlockAsksL2ForTiles() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    // One request a thread for each of the key and the value: a tile is 4 rows a thread. With
    // a filter for the tile itself, without one for the block's next tile.
    // The next tile's only while the block's table has room: its count of claimed entries is
    // read first.
    String filtered = ptx(keyed, true, Encoding.PLAIN);
    assertEquals(2, count(filtered, "prefetch.global.L2"));
    assertFalse(READS_CLAIMS.matcher(filtered).find(), "the next tile's in a filtered kernel");
    String all = ptx(keyed, false, Encoding.PLAIN);
    assertEquals(2, count(all, "prefetch.global.L2"));
    Matcher read = READS_CLAIMS.matcher(all);
    assertTrue(read.find() && read.start() < all.indexOf("prefetch.global.L2"));
    AggregateSpec threeKeys = spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT));
    assertEquals(0, count(ptx(threeKeys, true, Encoding.PLAIN), "prefetch.global.L2"));
  }

  @Test
  void aKernelOfTheLaunchsBlockLoadsItsNextRowAhead() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    for (boolean filtered : new boolean[] {false, true}) {
      String ptx = ptx(keyed, filtered, Encoding.PLAIN);
      // The key's and the value's words: the thread's first row before the tile loop, then in
      // the item loop, before the item's own code, the next row's, where it is in the batch.
      int loop = ptx.indexOf("$L_item_loop");
      String before = ptx.substring(0, loop);
      String inLoop = ptx.substring(loop);
      assertEquals(2, count(before, "ld.global.nc.u64"), "filtered " + filtered);
      assertEquals(2, AHEAD.matcher(before).results().count(), "filtered " + filtered);
      assertEquals(2, AHEAD.matcher(inLoop).results().count(), "filtered " + filtered);
      assertEquals(2, count(inLoop, "ld.global.nc.u64"), "no load of them in the item");
      assertTrue(inLoop.indexOf("ld.global.nc.u64") < inLoop.indexOf("the row's group"));
      // The next row and the next item are the launch's block on, not a fixed block's.
      Matcher block = NTID.matcher(ptx);
      assertTrue(block.find());
      assertEquals(2, count(inLoop, ", " + block.group(1) + ";"), "filtered " + filtered);
    }
    // A column that can be NULL, alone: its value and its validity bitmap's byte likewise (the
    // first row's and the next row's), and the item reads no byte of a bitmap itself.
    List<InputSpec> nullableKey = List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, true),
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
    String ptx = AggregateUpdateGenerator.generate(program(keyed, false), nullableKey, keyed,
        KernelFeatures.forArch("sm_90")).ptx();
    assertEquals(2 + 2, AHEAD.matcher(ptx).results().count());
    assertEquals(1 + 1, AHEAD_BYTE.matcher(ptx).results().count());
    assertEquals(0, count(ptx, "\tld.global.nc.u8"), "an item's own read of a bitmap");
    // Two that can be NULL: their item loads them (the bytes held too cost registers).
    List<InputSpec> nullable = keyed.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, true)).toList();
    String both = AggregateUpdateGenerator.generate(program(keyed, false), nullable, keyed,
        KernelFeatures.forArch("sm_90")).ptx();
    assertEquals(0, AHEAD.matcher(both).results().count());
    // It asks for a block of 1,024 threads' registers (GeneratedModule lifts them where they
    // spill); a kernel of a fixed block, for the most a generated kernel may take.
    assertTrue(ptx.contains(".maxnreg " + AggregateUpdateGenerator.WHOLE_BLOCK_REGISTERS + "\n"));
    AggregateSpec threeKeys = spec(List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT));
    assertTrue(ptx(threeKeys, true, Encoding.PLAIN)
        .contains(".maxnreg " + GeneratedModule.MAX_REGISTERS + "\n"));
  }

  @Test
  void aKernelOfTheLaunchsBlockLoadsItsFirstGpuForColumnsHeaderAhead() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    GeneratedKernel kernel = AggregateUpdateGenerator.generate(program(keyed, false),
        inputs(keyed, Encoding.FOR), keyed, KernelFeatures.forArch("sm_90"));
    String ptx = kernel.ptx();
    int loop = ptx.indexOf("$L_item_loop");
    String inLoop = ptx.substring(loop);
    // The key's block start with the row (predicated: where it is in the batch), then at the
    // end of the item before, its block's reference and widths; the value's column is read by
    // its item (one column ahead: two took the kernels of two keys to 90 registers).
    Pattern start = Pattern.compile("@%p\\d+ ld\\.global\\.nc\\.s32");
    Pattern header =
        Pattern.compile("@%p\\d+ ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+(\\+[48])?\\];");
    assertEquals(1, start.matcher(ptx.substring(0, loop)).results().count());
    assertEquals(2 + 1, header.matcher(ptx.substring(0, loop)).results().count());
    assertEquals(1, start.matcher(inLoop).results().count());
    assertEquals(2 + 1, header.matcher(inLoop).results().count());
    Matcher headers = header.matcher(inLoop);
    assertTrue(headers.find() && headers.start() > inLoop.indexOf("the row's group"),
        "the header after the item");
    // The leaner form (the compiler's second choice) reads it in its item.
    assertEquals(0, start.matcher(kernel.leaner().ptx()).results().count());
  }

  @Test
  @RequiresPtxCompiler
  void aKernelOfTheLaunchsBlockCompilesClean() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    GeneratedKernel kernel = AggregateUpdateGenerator.generate(program(keyed, true),
        inputs(keyed, Encoding.PLAIN), keyed, KernelFeatures.forArch("sm_90"));
    TestPtx.assertCompilesClean(kernel, "sm_90");
  }

  @Test
  void theTileLoopTakesThePerBlockTablesAddressFromBeforeIt() throws Exception {
    // Taken per item, the table's address was a read of the cluster's CTA id and a shared-window
    // add in every item (ptxas does not hoist them out of the loop at 64 registers).
    for (List<ColumnType> keys : List.of(List.of(ColumnType.LONG),
        List.of(ColumnType.INT, ColumnType.INT))) {
      for (boolean filtered : new boolean[] {false, true}) {
        String ptx = ptx(spec(keys), filtered, Encoding.PLAIN);
        String loop = ptx.substring(ptx.indexOf("\n$L_tile_"), ptx.indexOf("\n$L_tiles_done_"));
        assertTrue(loop.contains("atom.shared") || loop.contains("red.shared"),
            "the loop updates the table");
        assertFalse(Pattern.compile("mov\\.u64 %rd\\d+, \\w+_local;").matcher(loop).find(),
            keys + (filtered ? ", filtered" : ""));
      }
    }
  }

  /** How many times {@code what} occurs in {@code text} (a kernel's PTX). */
  static int count(String text, String what) {
    int n = 0;
    for (int at = text.indexOf(what); at >= 0; at = text.indexOf(what, at + 1)) {
      n++;
    }
    return n;
  }
}
