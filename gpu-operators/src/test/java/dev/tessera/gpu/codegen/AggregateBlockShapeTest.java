package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import org.junit.jupiter.api.Test;

/**
 * Which generated aggregate kernels run one block a multiprocessor of the launch's size (no
 * {@code .maxntid}, the block's size read from {@code %ntid.x}), and which ask L2 for their
 * tiles. No GPU (the CUDA differential suites run them).
 */
class AggregateBlockShapeTest {
  private static final String FIXED_BLOCK = ".maxntid 128, 1, 1";

  private static AggregateSpec spec(List<ColumnType> keys) {
    return LocalKeyTableTest.spec(keys);
  }

  /** The aggregation's columns as they are, or WHERE value > 0. */
  private static Program program(AggregateSpec spec, boolean filtered) {
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
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    assertTrue(AggregateUpdateGenerator.fillsMultiprocessor(keyed, inputs(keyed,
        Encoding.PLAIN)));
    String ptx = ptx(keyed, false, Encoding.PLAIN);
    assertFalse(ptx.contains(".maxntid"));
    assertTrue(ptx.contains("%ntid.x"));

    // Found by group (two keys), or GPU-DFOR tiles decoded by 128 threads: a fixed block.
    AggregateSpec twoKeys = spec(List.of(ColumnType.INT, ColumnType.INT));
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(twoKeys, inputs(twoKeys,
        Encoding.PLAIN)));
    assertTrue(ptx(twoKeys, false, Encoding.PLAIN).contains(FIXED_BLOCK));
    assertFalse(AggregateUpdateGenerator.fillsMultiprocessor(keyed, inputs(keyed,
        Encoding.DFOR)));
    assertTrue(ptx(keyed, false, Encoding.DFOR).contains(FIXED_BLOCK));
  }

  @Test
  void onlyAKernelOfTheLaunchsBlockAsksL2ForTiles() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    // One request a thread for each of the key and the value: a tile is 4 rows a thread. With
    // a filter for the tile itself, without one for the block's next tile.
    String filtered = ptx(keyed, true, Encoding.PLAIN);
    assertEquals(2, count(filtered, "prefetch.global.L2"));
    assertEquals(0, count(filtered, "nctaid.x") - 1, "the next tile's start in a filtered kernel");
    String all = ptx(keyed, false, Encoding.PLAIN);
    assertEquals(2, count(all, "prefetch.global.L2"));
    assertEquals(2, count(all, "nctaid.x"), "the next tile's start, then the tile loop's");
    // Only while the block's table has room: its count of claimed entries is read first.
    int read = all.indexOf("ld.relaxed.cta.shared.u32");
    assertTrue(read >= 0 && read < all.indexOf("prefetch.global.L2"));
    assertTrue(all.substring(read, all.indexOf('\n', read)).contains("_claims]"));
    AggregateSpec twoKeys = spec(List.of(ColumnType.INT, ColumnType.INT));
    assertEquals(0, count(ptx(twoKeys, true, Encoding.PLAIN), "prefetch.global.L2"));
  }

  @Test
  @RequiresPtxCompiler
  void aKernelOfTheLaunchsBlockCompilesClean() throws Exception {
    AggregateSpec keyed = spec(List.of(ColumnType.LONG));
    GeneratedKernel kernel = AggregateUpdateGenerator.generate(program(keyed, true),
        inputs(keyed, Encoding.PLAIN), keyed, KernelFeatures.forArch("sm_90"));
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    assertNull(GeneratedModule.rejection(report), report.summary());
    assertEquals(0, report.stackFrameBytes());
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
