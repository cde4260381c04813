package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class BackendKindTest {
  @Test
  void parsesTheConfigValuesCaseInsensitively() {
    assertEquals(BackendKind.CUDA, BackendKind.fromConfigValue("s", "cuda"));
    assertEquals(BackendKind.HOST_REFERENCE, BackendKind.fromConfigValue("s", " Host-Reference "));
  }

  @Test
  void rejectsUnknownValuesNamingTheSettingAndTheChoices() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> BackendKind.fromConfigValue("spark.tessera.backend", "opencl"));
    assertTrue(e.getMessage().contains("spark.tessera.backend"), e.getMessage());
    assertTrue(e.getMessage().contains("'opencl'"), e.getMessage());
    assertTrue(e.getMessage().contains("cuda, host-reference"), e.getMessage());
  }
}
