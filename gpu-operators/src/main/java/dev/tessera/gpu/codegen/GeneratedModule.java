package dev.tessera.gpu.codegen;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * A generated kernel as a whole PTX module: the prelude (native-kernels/prelude/prelude.cu as
 * nvcc wrote it, retargeted by {@link PtxPrelude}) with the kernel after it, and the checks a
 * compiled kernel must pass before it may replace the interpreter.
 */
public final class GeneratedModule {
  /** Where native-kernels puts the prelude's PTX inside its jar. */
  public static final String PRELUDE_RESOURCE = "/dev/tessera/kernels/prelude.ptx";
  /** The most registers a generated kernel may use: 128 threads x 4 blocks an SM at 65536. */
  public static final int MAX_REGISTERS = 128;

  private static volatile String prelude;

  private GeneratedModule() {}

  /** The module text of {@code kernel}: the prelude's header and functions, then the kernel. */
  public static String text(GeneratedKernel kernel) {
    return prelude() + "\n" + kernel.ptx();
  }

  /**
   * The prelude, ready to precede kernels: its {@code .version} one the in-jar compiler reads,
   * and its functions internal ({@code .func} without {@code .visible}), so that ptxas compiles
   * only those a kernel calls.
   */
  static String prelude() {
    String text = prelude;
    if (text == null) {
      text = PtxPrelude.retarget(read()).replace(".visible .func", ".func");
      prelude = text;
    }
    return text;
  }

  private static String read() {
    try (InputStream in = GeneratedModule.class.getResourceAsStream(PRELUDE_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("The generated kernels' prelude (" + PRELUDE_RESOURCE
            + ") is not on the classpath: the tessera-native-kernels jar is missing or stale");
      }
      return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalStateException("Cannot read " + PRELUDE_RESOURCE + ": " + e.getMessage(),
          e);
    }
  }

  /** Compiles {@code kernel} with the in-jar compiler for {@code arch} ("sm_90"). */
  public static CompiledKernel compile(GeneratedKernel kernel, String arch) {
    return PtxCompiler.compile(text(kernel), arch);
  }

  /**
   * Why the compiled kernel must not be used (a stack frame, spills, more than
   * {@link #MAX_REGISTERS} registers: each would make it slower than promised), or null.
   */
  public static String rejection(CompileReport report) {
    if (!report.clean()) {
      return "ptxas gave it a stack frame or spills (" + report.summary() + ")";
    }
    if (report.registers() > MAX_REGISTERS) {
      return "it needs " + report.registers() + " registers, more than " + MAX_REGISTERS;
    }
    return null;
  }
}
