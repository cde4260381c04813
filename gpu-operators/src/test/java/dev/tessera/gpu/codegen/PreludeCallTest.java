package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The prelude experiment (issue 14), kept as a check: generated PTX entry kernels calling
 * hand-written CUDA helpers that nvcc compiled to PTX ({@code prelude_experiment.cu}, its PTX and
 * the kernels are test resources). What it shows is written up in {@link PtxPrelude}: the calls
 * compile once nvcc's {@code .version 9.0} is lowered to 8.0; ptxas keeps every callee as an
 * out-of-line subroutine; scalar arguments and returns need no stack, a pointer to a local does.
 */
@RequiresPtxCompiler
class PreludeCallTest {
  private static final String NVCC_PRELUDE = TestPtx.resource("prelude_experiment.nvcc.ptx");
  private static final String KERNELS = TestPtx.resource("prelude_experiment_kernels.ptx");

  private static CompiledKernel module;

  @BeforeAll
  static void compileTheExperiment() {
    module = PtxCompiler.compile(PtxPrelude.retarget(NVCC_PRELUDE) + KERNELS, "sm_90");
    System.out.println("[prelude] " + module + "\n" + module.infoLog());
  }

  @Test
  void nvccsPtxNeedsItsVersionLowered() {
    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(NVCC_PRELUDE + KERNELS, "sm_90"));

    assertEquals(PtxCompileException.Kind.PTX_VERSION_TOO_NEW, e.kind());
  }

  @Test
  void scalarArgumentsAndScalarReturnsCostNoStack() {
    for (String entry : List.of("tessera_exp_packed", "tessera_exp_pair", "tessera_exp_utf8")) {
      CompileReport report = module.report(entry);
      assertEquals(0, report.stackFrameBytes(), report.summary());
      assertTrue(report.clean(), report.summary());
    }
  }

  @Test
  void aPointerToALocalPutsTheLocalOnTheStack() {
    CompileReport report = module.report("tessera_exp_pointer");

    assertTrue(report.stackFrameBytes() > 0, "if ptxas now keeps &total in a register, the advice"
        + " in PtxPrelude's Javadoc is out of date: " + report.summary());
    assertFalse(report.clean());
  }

  @Test
  void ptxasCallsTheHelpersOutOfLineRatherThanInliningThem() {
    List<String> functions = CubinSymbols.functions(module.cubin());
    String[][] calls = {
        {"tessera_exp_packed", "tessera_block_exclusive_sum_packed"},
        {"tessera_exp_pair", "tessera_block_exclusive_sum_pair"},
        {"tessera_exp_pointer", "tessera_block_exclusive_sum"},
        {"tessera_exp_utf8", "tessera_utf8_compare"}};
    for (String[] call : calls) {
      String entry = call[0];
      String callee = call[1];
      assertEquals(List.of(callee), module.report(entry).callees().stream()
          .map(FunctionFrame::function).toList(), entry);
      // A callee ptxas inlined would leave no symbol; an out-of-line one is "$entry$callee".
      assertTrue(functions.contains("$" + entry + "$" + callee), functions.toString());
    }
  }
}
