package dev.tessera.gpu.diagnose;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.cuda.CudaAvailability;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The diagnostic's report with a GPU, and its plain refusal without one. */
class DiagnoseTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return Diagnose.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private String output() {
    return out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
  }

  @Test
  void reportsTheDeviceOrSaysPlainlyThatThereIsNone() {
    int code = run();
    String text = output();
    assertFalse(text.contains("Exception"), "no stack trace in the report:\n" + text);
    if (CudaAvailability.get().isAvailable()) {
      assertEquals(Diagnose.OK, code, text);
      assertTrue(text.contains("smoke kernel:") && text.contains("OK"), text);
      assertTrue(text.contains("device->device:") && text.contains("GB/s"), text);
      assertTrue(text.contains("pinned host->device:"), text);
    } else {
      assertEquals(Diagnose.NO_DEVICE, code, text);
      assertTrue(text.contains("No usable CUDA device"), text);
    }
  }

  @Test
  void rejectsUnknownArguments() {
    assertEquals(Diagnose.NO_DEVICE, run("--frobnicate"));
    assertTrue(output().contains("unknown argument '--frobnicate'"), output());
  }

  @Test
  void rejectsADeviceThatIsNotANumber() {
    assertEquals(Diagnose.NO_DEVICE, run("--device", "first"));
    assertTrue(output().contains("--device takes a device number"), output());
  }
}
