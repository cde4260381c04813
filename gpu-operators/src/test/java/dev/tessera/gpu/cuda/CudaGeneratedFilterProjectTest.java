package dev.tessera.gpu.cuda;

import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;

/**
 * Every test of {@link CudaFilterProjectTest} with generated kernels on: the same random
 * programs and batches against the host reference, phase 1 running as each program's generated
 * kernel wherever the generator covers it (the interpreter otherwise). Checks that generated
 * kernels did run, that none was left to the interpreter for an opcode or a failed compile, and
 * that few were for their registers (the wide projections' kernels run in their last form).
 */
@RequiresCuda
class CudaGeneratedFilterProjectTest extends CudaFilterProjectTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @AfterAll
  void generatedKernelsRan() {
    GeneratedKernelChecks.ranGeneratedWhereCovered(cuda, "program");
    GeneratedKernelChecks.fewLeftForRegisters(cuda);
  }
}
