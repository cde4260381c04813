package dev.tessera.gpu.codegen;

import dev.tessera.gpu.GpuException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Compiles PTX to a cubin in this process, with the NVIDIA PTX compiler that JCuda's natives jar
 * carries (bound as {@code jcuda.nvptxcompiler.JNvPTXCompiler}): no GPU, no driver, no nvcc. The
 * cubin loads with {@code cuModuleLoadData} on a device of the architecture it was compiled for.
 *
 * <p>What that compiler is (JCuda 12.6.0's natives, measured): nvPTXCompiler 12.0. It reads PTX
 * up to {@code .version 8.0} ({@link #maxPtxVersion()}; nvcc 13 writes 9.0, which it refuses: see
 * {@link PtxPrelude#retarget}), and knows sm_50 to sm_90a but no Blackwell ({@link CubinTarget}).
 * Loading it takes about 60 ms (160 ms the first time on a machine, when JCuda copies the 24 MB
 * library to java.io.tmpdir); each compile then costs about 30 ms even for an empty module (a
 * fixed cost of the library; 50 ms for the first), so compiled kernels are worth caching.
 *
 * <p>Every compile runs on a handle of its own, created and destroyed here, and compiles run
 * concurrently without a lock: no state shared between handles has shown in these checks.
 * Measured on 2 CPUs: two threads compile 1.9 times as many modules per second as one, and 1,000
 * mutated modules compiled on 4 threads gave the same cubins and error logs as one at a time
 * ({@code PtxCompilerTest} keeps a concurrent check).
 *
 * <p>A module must begin with {@code .version} and {@code .target sm_XY} and hold no NUL
 * character; one that does not is refused here rather than handed to the compiler, which would
 * crash the process ({@link PtxInputGuard}).
 *
 * <p>Options: always {@code --gpu-name=<arch>} and {@code --verbose} (the info log is what {@link
 * CompileReport} is read from), and {@code -O3} unless the caller gives another level.
 */
public final class PtxCompiler {
  /** How an architecture is written: sm_90, sm_90a. */
  static final Pattern ARCH = Pattern.compile("sm_\\d+a?");
  /** A module of a version the compiler cannot read, so that it says which it can. */
  private static final String VERSION_PROBE = ".version 99.9\n.target sm_90\n.address_size 64\n";
  private static final Pattern CURRENT_VERSION =
      Pattern.compile("current version is '(\\d+\\.\\d+)'");

  private static volatile PtxVersion maxPtxVersion;

  private PtxCompiler() {}

  /** Whether the in-jar PTX compiler can be used in this process. */
  public static boolean available() {
    return PtxCompilerLibrary.get().isAvailable();
  }

  /** Why the in-jar PTX compiler cannot be used ("... could not be loaded on ..."), or null. */
  public static String unavailableReason() {
    return PtxCompilerLibrary.get().unavailableReason();
  }

  /**
   * The compiler library's version as it reports it ({@code nvPTXCompilerGetVersion}): "12.0".
   *
   * @throws GpuException if the library cannot be used
   */
  public static String libraryVersion() {
    return library().version();
  }

  /**
   * The newest PTX ISA the compiler reads, as it says itself when handed a newer one (asked once,
   * about 30 ms): 8.0 for the compiler JCuda 12.6.0 ships.
   *
   * @throws GpuException if the library cannot be used
   */
  public static PtxVersion maxPtxVersion() {
    PtxVersion result = maxPtxVersion;
    if (result == null) {
      library();
      PtxCompilerRun run = PtxCompilerRun.run(VERSION_PROBE, List.of());
      Matcher m = CURRENT_VERSION.matcher(run.errorLog());
      if (!m.find()) {
        throw new GpuException("the PTX compiler " + libraryVersion() + " did not say which PTX"
            + " version it reads; its log: " + run.errorLog() + run.infoLog());
      }
      result = PtxVersion.parse(m.group(1));
      maxPtxVersion = result;
    }
    return result;
  }

  /** {@link #compile(String, String, List)} with no extra options. */
  public static CompiledKernel compile(String ptx, String arch) {
    return compile(ptx, arch, List.of());
  }

  /**
   * Compiles a whole PTX module to a cubin for {@code arch}.
   *
   * @param ptx the module, {@code .version} at most {@link #maxPtxVersion()} and {@code .target}
   *     no newer than {@code arch}
   * @param arch the cubin's architecture, "sm_90" ({@link CubinTarget#forDevice} picks it)
   * @param extraOptions further ptxas options, e.g. "--maxrregcount=64" or "-O1"; not the
   *     architecture and not {@code --compile-only} (a relocatable cubin would need a device link)
   * @return the cubin and a report per entry function
   * @throws PtxCompileException if the compiler refuses the module
   * @throws GpuException if the compiler library cannot be used
   * @throws IllegalArgumentException for an architecture not written sm_XY, or a refused option
   */
  public static CompiledKernel compile(String ptx, String arch, List<String> extraOptions) {
    PtxCompilerLibrary library = library();
    List<String> options = options(arch, extraOptions);
    PtxInputGuard.check(ptx, arch);
    PtxCompilerRun run = PtxCompilerRun.run(ptx, options);
    if (!run.succeeded()) {
      throw PtxCompileException.of(run, ptx, arch, library.version());
    }
    return new CompiledKernel(arch, ptx, extraOptions, run.cubin(),
        PtxasLog.parse(run.infoLog(), run.compileNanos()), run.compileNanos(), run.infoLog());
  }

  /** The options of a compile: architecture, verbose, -O3 unless the caller set a level. */
  static List<String> options(String arch, List<String> extraOptions) {
    if (!ARCH.matcher(arch).matches()) {
      throw new IllegalArgumentException("an architecture is written sm_XY (sm_90), not '" + arch
          + "'");
    }
    List<String> options = new ArrayList<>();
    options.add("--gpu-name=" + arch);
    options.add("--verbose");
    boolean level = false;
    for (String option : extraOptions) {
      if (option.startsWith("--gpu-name") || option.startsWith("-arch")) {
        throw new IllegalArgumentException("the architecture is compile's argument, not an option: "
            + option);
      }
      if (option.equals("-c") || option.equals("--compile-only")) {
        throw new IllegalArgumentException("a relocatable cubin (" + option + ") needs a device"
            + " link step, which Tessera does not do; compile whole modules");
      }
      if (option.equals("--verbose") || option.equals("-v")) {
        continue;
      }
      level |= option.startsWith("-O") || option.startsWith("--opt-level");
      options.add(option);
    }
    if (!level) {
      options.add("-O3");
    }
    return options;
  }

  private static PtxCompilerLibrary library() {
    PtxCompilerLibrary library = PtxCompilerLibrary.get();
    if (!library.isAvailable()) {
      throw new GpuException("PTX cannot be compiled in this process: "
          + library.unavailableReason());
    }
    return library;
  }
}
