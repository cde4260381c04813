package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** The sentence a user gets when the library cannot be loaded. */
class PtxCompilerLibraryTest {

  @Test
  void jcudasLoadErrorBecomesOneSentence() {
    String jcudaMessage =
        "Error while loading native library \"JNvPTXCompiler-12.6.0-linux-x86_64\"\n"
        + "Operating system name: Linux\n---(start of nested stack traces)---\n\tat jcuda.LibUtils";

    String reason = PtxCompilerLibrary.whyNotLoaded(new UnsatisfiedLinkError(jcudaMessage));

    assertTrue(reason.startsWith("the PTX compiler library JNvPTXCompiler"), reason);
    assertTrue(reason.endsWith("UnsatisfiedLinkError: Error while loading native library"
        + " \"JNvPTXCompiler-12.6.0-linux-x86_64\""), reason);
    assertFalse(reason.contains("\n"), reason);
  }

  @Test
  void anInitializerFailureGivesItsCause() {
    ExceptionInInitializerError error = new ExceptionInInitializerError(
        new RuntimeException("This CUDA version is not available on MacOS"));

    String reason = PtxCompilerLibrary.whyNotLoaded(error);

    assertTrue(reason.endsWith("RuntimeException: This CUDA version is not available on MacOS"),
        reason);
  }

  @Test
  void loadsHere() {
    // Tessera builds with jcuda-natives for linux-x86_64, which has the library.
    assumeTrue(System.getProperty("os.name").equals("Linux")
        && System.getProperty("os.arch").equals("amd64"));
    assertTrue(PtxCompiler.available(), String.valueOf(PtxCompiler.unavailableReason()));
  }
}
