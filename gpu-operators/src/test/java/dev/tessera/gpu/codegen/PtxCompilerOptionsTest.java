package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The options PtxCompiler passes: no compiler needed. */
class PtxCompilerOptionsTest {

  @Test
  void alwaysTheArchitectureVerboseAndO3() {
    assertEquals(List.of("--gpu-name=sm_90", "--verbose", "-O3"),
        PtxCompiler.options("sm_90", List.of()));
  }

  @Test
  void theCallersLevelReplacesO3AndVerboseIsNotRepeated() {
    assertEquals(List.of("--gpu-name=sm_86", "--verbose", "--maxrregcount=64", "-O1"),
        PtxCompiler.options("sm_86", List.of("--maxrregcount=64", "-v", "-O1")));
  }

  @Test
  void refusesWhatWouldNotGiveALoadableCubinForTheArchitecture() {
    assertThrows(IllegalArgumentException.class, () -> PtxCompiler.options("90", List.of()));
    assertThrows(IllegalArgumentException.class,
        () -> PtxCompiler.options("compute_90", List.of()));
    assertThrows(IllegalArgumentException.class,
        () -> PtxCompiler.options("sm_90", List.of("--gpu-name=sm_80")));
    assertThrows(IllegalArgumentException.class,
        () -> PtxCompiler.options("sm_90", List.of("--compile-only")));
    assertThrows(IllegalArgumentException.class,
        () -> PtxCompiler.options("sm_90", List.of("-c")));
  }
}
