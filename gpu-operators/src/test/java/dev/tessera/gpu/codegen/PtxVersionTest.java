package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PtxVersionTest {

  @Test
  void parsesAndComparesAsNumbers() {
    assertEquals(new PtxVersion(8, 10), PtxVersion.parse("8.10"));
    assertTrue(PtxVersion.parse("8.10").isNewerThan(PtxVersion.parse("8.9")));
    assertTrue(PtxVersion.parse("9.0").isNewerThan(PtxVersion.parse("8.8")));
    assertFalse(PtxVersion.parse("8.0").isNewerThan(PtxVersion.parse("8.0")));
    assertEquals("8.0", new PtxVersion(8, 0).toString());
  }

  @Test
  void refusesWhatIsNotMajorDotMinor() {
    assertThrows(IllegalArgumentException.class, () -> PtxVersion.parse("8"));
    assertThrows(IllegalArgumentException.class, () -> PtxVersion.parse("v8.0"));
  }
}
