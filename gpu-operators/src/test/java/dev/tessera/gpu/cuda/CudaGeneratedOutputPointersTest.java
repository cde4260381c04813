package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link CudaGeneratedFilterProjectTest} with the kernels' POINTERS_PER_USE form
 * on (-Dtessera.codegen.outputPointersPerUse=true, FilterProjectGenerator.Form, which this class
 * sets): the wide projections' kernels, which need more than 128 registers in their first forms,
 * run in that form where without the switch they run on the interpreter. Checks, beyond the
 * parent's, that at most one kernel in ten was left to the interpreter for its registers. Until
 * this passes on a GPU, the switch stays off by default.
 */
@RequiresCuda
class CudaGeneratedOutputPointersTest extends CudaGeneratedFilterProjectTest {
  private static final String PROPERTY = "tessera.codegen.outputPointersPerUse";

  @BeforeAll
  void pointersPerUseOn() {
    System.setProperty(PROPERTY, "true");
  }

  @AfterAll
  void wideKernelsRanGenerated() {
    try {
      GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
      List<String> reasons = generated.reasons();
      long overRegisters = reasons.stream().filter(r -> r.contains("registers, more than"))
          .count();
      assertTrue(overRegisters <= generated.loadedCount() / 10, overRegisters
          + " kernels left to the interpreter for their registers: " + reasons);
    } finally {
      System.clearProperty(PROPERTY);
    }
  }
}
