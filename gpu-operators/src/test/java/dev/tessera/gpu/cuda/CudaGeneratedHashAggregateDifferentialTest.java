package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.RuntimeOptions;
import org.junit.jupiter.api.AfterAll;

/**
 * Every test of {@link CudaHashAggregateDifferentialTest} with generated kernels on: the same
 * data against the host reference, each update or program running as its generated kernel
 * wherever the generator covers it (the interpreter otherwise). Checks that generated kernels did run, and among them
 * kernels whose groups were sliced among blocks ({@link GroupSlices}: the 6,000-group scenarios
 * of one key and of two keys that cannot be NULL).
 */
@RequiresCuda
class CudaGeneratedHashAggregateDifferentialTest extends CudaHashAggregateDifferentialTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return super.cudaOptions().withCodegen(true);
  }

  @AfterAll
  void generatedKernelsRan() {
    assertTrue(((CudaBackend) cuda).device().generated().loadedCount() > 0,
        "no pipeline ran as a generated kernel");
    assertTrue(((CudaBackend) cuda).device().generated().generatedKeys().stream()
        .anyMatch(key -> key.contains("slices=")), "no sliced kernel ran");
  }
}
