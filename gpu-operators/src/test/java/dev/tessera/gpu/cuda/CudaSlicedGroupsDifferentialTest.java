package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link CudaGeneratedHashAggregateDifferentialTest} with the groups of generated
 * kernels sliced among blocks where an aggregation's first batch made a few per-block tables'
 * worth ({@link GroupSlices}, {@code -Dtessera.codegen.slicedGroups=true}): the 6,000-group
 * scenarios of one and two keys take a few slices (each block's warps queueing the rows of its
 * slice). Checks that a sliced kernel ran.
 */
@RequiresCuda
class CudaSlicedGroupsDifferentialTest extends CudaGeneratedHashAggregateDifferentialTest {
  private String before;

  @BeforeAll
  void slicesOn() {
    before = System.getProperty(GroupSlices.PROPERTY);
    System.setProperty(GroupSlices.PROPERTY, "true");
  }

  @AfterAll
  void slicedKernelsRan() {
    if (before == null) {
      System.clearProperty(GroupSlices.PROPERTY);
    } else {
      System.setProperty(GroupSlices.PROPERTY, before);
    }
    assertTrue(((CudaBackend) cuda).device().generated().generatedKeys().stream()
        .anyMatch(key -> key.contains("slices=")), "no sliced kernel ran");
  }
}
