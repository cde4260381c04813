package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.RuntimeOptions;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link CudaFilterProjectTest} with generated kernels on and FLOAT and DOUBLE %
 * and pmod generated too (-Dtessera.codegen.floatRemainders=true, FloatRemainder.enabled, which
 * this class sets): the same random programs and batches against the host reference, those with
 * REM_F32, REM_F64, PMOD_F32 or PMOD_F64 running as generated kernels where without the switch
 * they run on the interpreter. Checks that no program was left to the interpreter for one of
 * them, or because its kernel did not compile or load. Until this passes on a GPU, the switch
 * stays off by default.
 */
@RequiresCuda
class CudaGeneratedFloatRemaindersTest extends CudaFilterProjectTest {
  private static final String PROPERTY = "tessera.codegen.floatRemainders";

  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @BeforeAll
  void floatRemaindersOn() {
    System.setProperty(PROPERTY, "true");
  }

  @AfterAll
  void remaindersRanGenerated() {
    try {
      GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
      assertTrue(generated.loadedCount() > 0, "no program ran as a generated kernel");
      List<String> reasons = generated.reasons();
      assertTrue(reasons.stream().noneMatch(r -> r.contains("REM_F") || r.contains("PMOD_F")
          || r.startsWith("compiling the generated kernel failed")),
          "programs left to the interpreter: " + reasons);
    } finally {
      System.clearProperty(PROPERTY);
    }
  }
}
