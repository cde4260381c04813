package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Lowering nvcc's .version for the in-jar compiler. */
class PtxPreludeTest {
  private static final PtxVersion V8_0 = new PtxVersion(8, 0);

  @Test
  void lowersNvcc13sVersionAndChangesNothingElse() {
    String nvcc = TestPtx.resource("prelude_experiment.nvcc.ptx");

    String retargeted = PtxPrelude.retarget(nvcc, V8_0);

    assertEquals(nvcc.replace("\n.version 9.0\n", "\n.version 8.0\n"), retargeted);
    assertEquals(nvcc.lines().count(), retargeted.lines().count());
    assertEquals(new PtxHeader(V8_0, "sm_90", 64), PtxHeader.of(retargeted).get());
  }

  @Test
  void leavesAnOlderVersionAlone() {
    String ptx = "// c\n.version 7.8\n.target sm_90\n.address_size 64\n";

    assertSame(ptx, PtxPrelude.retarget(ptx, V8_0));
  }

  @Test
  void refusesWhatIsNotSixtyFourBitPtx() {
    assertThrows(IllegalArgumentException.class,
        () -> PtxPrelude.retarget(".version 9.0\n.target sm_90\n.address_size 32\n", V8_0));
    assertThrows(IllegalArgumentException.class,
        () -> PtxPrelude.retarget(".version 9.0\n.target sm_90\n", V8_0));
    assertThrows(IllegalArgumentException.class, () -> PtxPrelude.retarget("int x;", V8_0));
  }
}
