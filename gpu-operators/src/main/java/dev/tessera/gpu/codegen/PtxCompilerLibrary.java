package dev.tessera.gpu.codegen;

import jcuda.nvptxcompiler.JNvPTXCompiler;
import jcuda.nvptxcompiler.nvPTXCompileResult;

/**
 * NVIDIA's PTX compiler library as JCuda ships it, loaded once per process, and if it cannot be
 * loaded, why — in a sentence rather than JCuda's stack traces.
 *
 * <p>jcuda-natives-12.6.0-linux-x86_64.jar carries {@code
 * lib/libJNvPTXCompiler-12.6.0-linux-x86_64.so} (24 MB: the JNI binding with NVIDIA's static
 * nvPTXCompiler linked in; it needs only libc, libstdc++ and libm — no libcuda, no GPU). The
 * static initializer of {@link JNvPTXCompiler} loads it through {@code jcuda.LibUtils}: first
 * {@code System.loadLibrary} from java.library.path, then
 * the jar resource {@code /lib/...} copied to {@code java.io.tmpdir}. On failure that initializer
 * throws {@link UnsatisfiedLinkError} (on macOS a {@code CudaException} wrapped in {@link
 * ExceptionInInitializerError}), and every later use of the class {@link NoClassDefFoundError}:
 * all {@link LinkageError}s, caught here once so that none escapes to a caller.
 */
final class PtxCompilerLibrary {
  private static volatile PtxCompilerLibrary loaded;

  private final String version;
  private final String unavailableReason;

  private PtxCompilerLibrary(String version, String unavailableReason) {
    this.version = version;
    this.unavailableReason = unavailableReason;
  }

  /** The library, loaded (or found missing) on first use. */
  static PtxCompilerLibrary get() {
    PtxCompilerLibrary result = loaded;
    if (result == null) {
      synchronized (PtxCompilerLibrary.class) {
        if (loaded == null) {
          loaded = load();
        }
        result = loaded;
      }
    }
    return result;
  }

  boolean isAvailable() {
    return unavailableReason == null;
  }

  /** Why the library cannot be used, or null when it can. */
  String unavailableReason() {
    return unavailableReason;
  }

  /** The compiler's own version, "12.0" (JCuda 12.6.0 bundles the CUDA 12.0 nvPTXCompiler). */
  String version() {
    return version;
  }

  private static PtxCompilerLibrary load() {
    int[] major = new int[1];
    int[] minor = new int[1];
    int result;
    try {
      // Exceptions off: PtxCompilerRun reads every result code itself, and the flag is global.
      JNvPTXCompiler.setExceptionsEnabled(false);
      result = JNvPTXCompiler.nvPTXCompilerGetVersion(major, minor);
    } catch (LinkageError e) {
      return new PtxCompilerLibrary(null, whyNotLoaded(e));
    }
    if (result != nvPTXCompileResult.NVPTXCOMPILE_SUCCESS) {
      return new PtxCompilerLibrary(null, "the PTX compiler library loaded but"
          + " nvPTXCompilerGetVersion failed: " + nvPTXCompileResult.stringFor(result));
    }
    return new PtxCompilerLibrary(major[0] + "." + minor[0], null);
  }

  /** One sentence from JCuda's load failure, whose message carries whole stack traces. */
  static String whyNotLoaded(LinkageError e) {
    Throwable cause = e.getMessage() == null && e.getCause() != null ? e.getCause() : e;
    String first = String.valueOf(cause.getMessage()).lines().findFirst().orElse("").strip();
    return "the PTX compiler library JNvPTXCompiler (in the jcuda-natives jar; Tessera builds"
        + " with the linux-x86_64 one) could not be loaded on " + System.getProperty("os.name")
        + "/" + System.getProperty("os.arch") + ": " + cause.getClass().getSimpleName() + ": "
        + first;
  }
}
