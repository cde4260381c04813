package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which architectures the in-jar compiler (nvPTXCompiler 12.0) produces cubins for. */
@RequiresPtxCompiler
class CubinTargetTest {

  @Test
  void knowsTuringToHopperButNotBlackwell() {
    StringBuilder table = new StringBuilder("[ptx] nvPTXCompiler " + PtxCompiler.libraryVersion()
        + " --gpu-name:");
    for (String arch : List.of("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
        "sm_100", "sm_120")) {
      table.append(' ').append(arch).append(CubinTarget.accepts(arch) ? " yes," : " no,");
    }
    System.out.println(table);
    for (String arch : List.of("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")) {
      assertTrue(CubinTarget.accepts(arch), arch);
    }
    assertFalse(CubinTarget.accepts("sm_100"));
    assertFalse(CubinTarget.accepts("sm_120"));
    assertFalse(CubinTarget.accepts("compute_90"));
    assertFalse(CubinTarget.accepts("foo"));
  }

  @Test
  void picksTheDevicesOwnArchitectureOrAnOlderMinorOfItsMajor() {
    assertEquals(Optional.of("sm_90"), CubinTarget.forDevice(9, 0));
    assertEquals(Optional.of("sm_89"), CubinTarget.forDevice(8, 9));
    assertEquals(Optional.of("sm_80"), CubinTarget.forDevice(8, 0));
    // No sm_81..sm_85: a device 8.5 runs an sm_80 cubin.
    assertEquals(Optional.of("sm_80"), CubinTarget.forDevice(8, 5));
    assertTrue(CubinTarget.supports(9, 0));
  }

  @Test
  void blackwellGoesToTheDriverJit() {
    assertFalse(CubinTarget.supports(10, 0));
    assertFalse(CubinTarget.supports(12, 0));
    assertEquals(Optional.empty(), CubinTarget.forDevice(10, 0));
  }
}
