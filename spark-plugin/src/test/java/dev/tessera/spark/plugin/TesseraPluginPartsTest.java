package dev.tessera.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.spark.resource.ResourceInformation;
import org.junit.jupiter.api.Test;

class TesseraPluginPartsTest {
  private static final String EXT = "dev.tessera.TesseraExtensions";

  @Test
  void extensionIsAppendedOnce() {
    assertEquals(EXT, TesseraDriverPlugin.withExtension("", EXT));
    assertEquals("a.B," + EXT, TesseraDriverPlugin.withExtension("a.B", EXT));
    assertEquals("a.B," + EXT, TesseraDriverPlugin.withExtension(" a.B , " + EXT + " ", EXT));
    assertEquals(EXT + ",a.B", TesseraDriverPlugin.withExtension(EXT + ",a.B", EXT));
  }

  @Test
  void deviceOrdinalIsTheFirstAssignedGpuElseZero() {
    assertEquals(0, TesseraExecutorPlugin.deviceOrdinal(Map.of()));
    assertEquals(0, TesseraExecutorPlugin.deviceOrdinal(null));
    assertEquals(3, TesseraExecutorPlugin.deviceOrdinal(
        Map.of("gpu", new ResourceInformation("gpu", new String[] {"3", "4"}))));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TesseraExecutorPlugin.deviceOrdinal(
            Map.of("gpu", new ResourceInformation("gpu", new String[] {"GPU-1a2b"}))));
    assertTrue(e.getMessage().contains("'GPU-1a2b'"), e.getMessage());
  }
}
