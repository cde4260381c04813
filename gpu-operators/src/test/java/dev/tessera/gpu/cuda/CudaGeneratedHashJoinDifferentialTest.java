package dev.tessera.gpu.cuda;

import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;

/**
 * Every test of {@link CudaHashJoinDifferentialTest} with generated kernels on: the same data against the
 * host reference, each update or program running as its generated kernel wherever the generator
 * covers it (the interpreter otherwise). Checks that generated kernels did run, and that none
 * was left to the interpreter for an opcode or a failed compile.
 */
@RequiresCuda
class CudaGeneratedHashJoinDifferentialTest extends CudaHashJoinDifferentialTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @AfterAll
  void generatedKernelsRan() {
    GeneratedKernelChecks.ranGeneratedWhereCovered(cuda, "pipeline");
  }
}
