package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.RuntimeOptions;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link CudaHashJoinDifferentialTest} with generated kernels on and the generated
 * probes of string keys too (-Dtessera.codegen.stringProbes=true, ProgramEmitter.stringProbes,
 * which this class sets): the same data against the host reference, the pipelines that probe
 * tables of STRING keys (alone, and beside an INT key) running as generated kernels where
 * without the switch they run on the interpreter. Checks that no pipeline was left to the
 * interpreter for a string key, or because its kernel did not compile or load. Until this passes on a GPU, the switch stays off by default.
 */
@RequiresCuda
class CudaGeneratedStringProbesTest extends CudaHashJoinDifferentialTest {
  private static final String PROPERTY = "tessera.codegen.stringProbes";

  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @BeforeAll
  void stringProbesOn() {
    System.setProperty(PROPERTY, "true");
  }

  @AfterAll
  void stringKeysRanGenerated() {
    try {
      GeneratedKernels generated = ((CudaBackend) cuda).device().generated();
      assertTrue(generated.loadedCount() > 0, "no pipeline ran as a generated kernel");
      List<String> reasons = generated.reasons();
      assertTrue(reasons.stream().noneMatch(r -> r.contains("string key")
          || r.startsWith("compiling the generated kernel failed")),
          "pipelines left to the interpreter: " + reasons);
    } finally {
      System.clearProperty(PROPERTY);
    }
  }
}
