package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.bench.FilterProjectBench;
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
 * Which generated filter-project kernels gather a tile's output rows in shared memory before the
 * look-back (OutputStage), in what order such a kernel does its steps, and that it compiles
 * without a stack. No GPU: the CUDA filter-project suites run these kernels.
 */
class OutputStageTest {
  private static final int WIDE_TILE = 1024;

  @Test
  void outputsAreStagedWhereTheirRowsFitTwentyKiB() {
    List<Program.Output> bench = FilterProjectBench.program().outputs();
    // LONG and DOUBLE, each with a validity flag: 18 bytes a row.
    assertEquals(18 * WIDE_TILE, OutputStage.blockBytes(bench, WIDE_TILE));
    assertTrue(OutputStage.fits(bench, WIDE_TILE));
    assertFalse(OutputStage.fits(threeTimes(bench), WIDE_TILE), "54 KiB");
    assertFalse(OutputStage.fits(List.of(), WIDE_TILE), "nothing to stage");
    // Four INT outputs with their flags: 20 bytes a row, 20 KiB a tile, the most that fits.
    List<Program.Output> fourInts = java.util.Collections.nCopies(4,
        new Program.Output(0, ColumnType.INT));
    assertEquals(OutputStage.MAX_BLOCK_BYTES, OutputStage.blockBytes(fourInts, WIDE_TILE));
    assertTrue(OutputStage.fits(fourInts, WIDE_TILE));
    assertFalse(OutputStage.fits(fourInts, WIDE_TILE + 1));
    // A string output stages its length and address.
    assertEquals(13 * 512, OutputStage.blockBytes(
        List.of(new Program.Output(0, ColumnType.STRING)), 512));
  }

  @Test
  void aStagedKernelComputesItsRowsBetweenPublishingItsCountAndWalkingBack() throws Exception {
    String ptx = kernel(FilterProjectBench.program(), false).ptx();
    int published = ptx.indexOf("st.relaxed.gpu.global.u64");
    int firstOutputs = ptx.indexOf("// item 0: the outputs\n");
    int lastOutputs = ptx.indexOf("// item 7: the outputs\n");
    int walk = ptx.indexOf("$L_lookback_window");
    int copy = ptx.indexOf("// copy-out 0");
    assertTrue(ptx.contains(".shared .align 8 .b8 stage_0[8192]"), ptx);
    assertTrue(published > 0 && published < firstOutputs, "the tile's count comes first");
    assertTrue(lastOutputs < walk && walk < copy, "rows staged, then the walk, then the copy");
    String phaseB = ptx.substring(firstOutputs, walk);
    assertFalse(phaseB.contains("st.global"), "phase B writes nothing to global memory");
  }

  @Test
  void outputsTooWideForTheStageAreWrittenInPlaceAfterTheLookBack() throws Exception {
    Program bench = FilterProjectBench.program();
    String ptx = kernel(new Program(bench.code(), bench.constants(), bench.strings(),
        bench.registerCount(), bench.inputTypes(), bench.filterRegister(),
        threeTimes(bench.outputs()), bench.ansi()), false).ptx();
    assertFalse(ptx.contains("stage_"));
    assertTrue(ptx.indexOf("$L_lookback_window") < ptx.indexOf("// item 0: the outputs\n"));
  }

  @Test
  @RequiresPtxCompiler
  void stagedKernelsCompileWithoutStack() throws Exception {
    List<GeneratedKernel> kernels = List.of(kernel(FilterProjectBench.program(), false),
        kernel(FilterProjectBench.program(), true), kernel(stringsAndNulls(), true));
    for (GeneratedKernel k : kernels) {
      assertTrue(k.ptx().contains("stage_"), k.entry());
      CompileReport report = GeneratedModule.compile(k, "sm_90").report(k.entry());
      assertEquals(0, report.stackFrameBytes(), report.infoLog());
      assertEquals(0, report.spillStoreBytes(), report.infoLog());
    }
  }

  /** s, i + 1 WHERE i > 0 over (STRING s, INT i): a string output and a nullable one. */
  private static Program stringsAndNulls() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.STRING, ColumnType.INT), false);
    int s = b.loadColumn(0);
    int i = b.loadColumn(1);
    int next = b.emitNew(Opcode.ADD_INT, i, b.loadConstant(1), 32);
    int keep = b.emitNew(Opcode.CMP_INT, i, b.loadConstant(0), Comparison.GT.code());
    return b.build(keep, List.of(new Program.Output(s, ColumnType.STRING),
        new Program.Output(next, ColumnType.INT)));
  }

  private static GeneratedKernel kernel(Program program, boolean nullable)
      throws CodegenUnsupportedException {
    List<InputSpec> inputs = program.inputTypes().stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, nullable)).toList();
    return FilterProjectGenerator.generate(program, inputs);
  }

  private static List<Program.Output> threeTimes(List<Program.Output> outputs) {
    List<Program.Output> all = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      all.addAll(outputs);
    }
    return all;
  }
}
