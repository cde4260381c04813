package dev.tessera.gpu.codegen;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

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
  /** A {@code .maxnreg} directive of a kernel's text, with its count. */
  private static final Pattern MAX_REGISTERS_DIRECTIVE =
      Pattern.compile("(?m)^\\.maxnreg (\\d+)$");

  /**
   * Further option sets to compile a rejected kernel with ({@link #compileAgain}), in order: the
   * in-jar compiler (CUDA 12.0) at -O3 sometimes leaves a kernel a few bytes of spills at 48-56
   * registers that -O1 does not, and a kernel without {@code .maxnreg} may take more registers
   * than the launch allows.
   */
  private static final List<List<String>> AGAIN = List.of(List.of("-O1"),
      List.of("--maxrregcount=" + MAX_REGISTERS),
      List.of("-O1", "--maxrregcount=" + MAX_REGISTERS));

  /**
   * The option every compile of a kernel that decodes GPU-DFOR tiles takes: ptxas without the
   * optimizer's constant bank. By default (with that bank) ptxas crashes (SIGSEGV) on some of
   * those kernels, the in-jar compiler (CUDA 12.0) taking the whole JVM with it, and CUDA 13.0's
   * ptxas alike at -O1 and above: a projection of five GPU-DFOR INT columns, a filter-project of
   * SSB's over eight. With this option both compile them.
   */
  static final String DFOR_OPTION = "--disable-optimizer-constants";

  /** The prelude's {@code .target} directive (PtxPrelude: the oldest supported device's). */
  private static final Pattern PRELUDE_TARGET = Pattern.compile("(?m)^\\.target sm_\\d+a?$");

  private static volatile PreludeFunctions prelude;

  private GeneratedModule() {}

  /**
   * The module text of {@code kernel}: the prelude's header (its {@code .target} the kernel's, if
   * it names one) and the prelude functions the kernel calls ({@link PreludeFunctions}), then the
   * kernel.
   */
  public static String text(GeneratedKernel kernel) {
    String prelude = prelude().forKernel(kernel.ptx());
    if (kernel.target() != null) {
      prelude = PRELUDE_TARGET.matcher(prelude).replaceFirst(".target " + kernel.target());
    }
    return prelude + "\n" + kernel.ptx();
  }

  /**
   * The prelude, ready to precede kernels: its {@code .version} one the in-jar compiler reads,
   * and its functions internal ({@code .func} without {@code .visible}), so that ptxas compiles
   * only those a kernel calls.
   */
  static PreludeFunctions prelude() {
    PreludeFunctions functions = prelude;
    if (functions == null) {
      functions = PreludeFunctions.of(preludeText());
      prelude = functions;
    }
    return functions;
  }

  /**
   * The whole prelude, every function of it, as {@link #prelude()} splits it; a kernel's module
   * ({@link #text}) carries only the part the kernel calls.
   */
  public static String preludeText() {
    return PtxPrelude.retarget(read()).replace(".visible .func", ".func");
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

  /**
   * Compiles {@code kernel} with the in-jar compiler for {@code arch} ("sm_90"), or takes it from
   * the process's {@link KernelDiskCache}. Where it needs more registers than it asks for (a
   * stack frame or spills), its first {@link GeneratedKernel#leaner} form that does not instead,
   * where it has leaner forms (else the last of them), else the kernel again with its ask lifted
   * ({@link #withMaxRegisters}).
   *
   * <p>Once the first form is rejected, its leaner forms are compiled side by side ({@link
   * CompileThreads}) rather than each after the one before it is rejected; where the generator
   * expects the rejection ({@link GeneratedKernel#leanerAtOnce}), beside the first form's own
   * compile. The result's {@link CompiledKernel#compileNanos} is the time until the form used
   * was there (0 where every compile it waited for came from the disk cache).
   */
  public static CompiledKernel compile(GeneratedKernel kernel, String arch) {
    return compileForms(kernel, arch, false).used();
  }

  /**
   * What the runtime (GeneratedKernels) starts from: {@link #compile}'s result, whether the
   * driver's compiler may do better, and {@link #compileAgain} started beside the leaner forms'
   * compiles, where there are any.
   *
   * @param used the form {@link #compile} takes, compiled at its register ask
   * @param firstFormFits whether the kernel's first form, the one the driver's compiler is
   *     given, took at most {@link #MAX_REGISTERS} registers from the in-jar compiler. Where it
   *     took more, the driver's compiler does no better (WideProjectionBench's first form: 160
   *     registers in-jar, 162 from the driver on an H100), and its JIT would only delay the
   *     kernel: it is for the in-jar compiler's stack frames and spills.
   * @param againAhead where the kernel's leaner forms were compiled: {@link #compileAgain},
   *     started with them, so that it runs while the first form, the slowest, still compiles
   *     (WideProjectionBench's last form spills 8 B at -O3, the in-jar compiler's quirk, and is
   *     clean at -O1). Its result is null where the last form was not rejected. Null where the
   *     leaner forms were not compiled; {@link #compiledAgain} waits for it.
   */
  public record Compilation(CompiledKernel used, boolean firstFormFits,
      CompletableFuture<CompiledKernel> againAhead) {}

  /** {@link #compile}, as a {@link Compilation}. */
  public static Compilation compilation(GeneratedKernel kernel, String arch) {
    Forms forms = compileForms(kernel, arch, true);
    return new Compilation(forms.used(), forms.first().registers() <= MAX_REGISTERS,
        forms.leaner() == null ? null : forms.leaner().again());
  }

  /**
   * The form {@link #compile} takes, compiled; what the in-jar compiler made of the first form;
   * the leaner forms' compiles, or null where none started.
   */
  private record Forms(CompiledKernel used, CompileReport first, LeanerCompiles leaner) {}

  /**
   * The compiles of a kernel's leaner forms, in order, and where asked, {@link #compileAgain}
   * started beside them (its result null where the last of them is not rejected).
   */
  private record LeanerCompiles(List<CompletableFuture<CompiledKernel>> forms,
      CompletableFuture<CompiledKernel> again) {}

  /** {@link #compile}; where {@code againEarly}, with {@link LeanerCompiles#again}. */
  private static Forms compileForms(GeneratedKernel kernel, String arch, boolean againEarly) {
    long started = System.nanoTime();
    LeanerCompiles leaner =
        kernel.leanerAtOnce() ? startLeaner(kernel, arch, againEarly) : null;
    CompiledKernel first = compileForm(kernel, arch);
    CompileReport firstForm = first.report(kernel.entry());
    if (kernel.leaner() == null || rejection(firstForm) == null) {
      // Any leaner compiles started run to their end unused (and fill the cache).
      return new Forms(first, firstForm, null);
    }
    if (leaner == null) {
      leaner = startLeaner(kernel, arch, againEarly);
    }
    long compiling = first.compileNanos();
    // The leaner forms in order, each at its ask before any with more registers (fewer threads
    // a block): what compiling them one after another would have taken.
    GeneratedKernel form = kernel.leaner();
    for (CompletableFuture<CompiledKernel> compile : leaner.forms()) {
      CompiledKernel compiled = CompileThreads.join(compile);
      compiling += compiled.compileNanos();
      if (form.leaner() == null || rejection(compiled.report(form.entry())) == null) {
        return new Forms(
            compiled.withCompileNanos(compiling == 0 ? 0 : System.nanoTime() - started),
            firstForm, leaner);
      }
      form = form.leaner();
    }
    throw new IllegalStateException("the last form returns above");
  }

  /**
   * The compiles of {@code kernel}'s leaner forms, started on compile threads; where {@code
   * againEarly}, {@link #compileAgain} beside them, its result kept where the last form is
   * rejected (null where not). Started with them, not once the last form comes back rejected:
   * WideProjectionBench's first compile took 152-175 ms so against 268-269 ms chained (the
   * last form's -O3 compile, then its -O1 one, one after the other), four runs each on one H100
   * host; where the last form is clean (39 of 40 random wide projections) the -O1 compile is a
   * compile thread's work spent for nothing.
   */
  private static LeanerCompiles startLeaner(GeneratedKernel kernel, String arch,
      boolean againEarly) {
    List<CompletableFuture<CompiledKernel>> compiles = new ArrayList<>();
    for (GeneratedKernel form = kernel.leaner(); form != null; form = form.leaner()) {
      GeneratedKernel thisForm = form;
      compiles.add(CompileThreads.start(() -> compileForm(thisForm, arch)));
    }
    CompletableFuture<CompiledKernel> again = null;
    if (againEarly) {
      CompletableFuture<CompiledKernel> started = compileAgainAhead(kernel, arch);
      // Every form has the kernel's entry. Where the last form is clean, what the -O1 compile
      // gave (or threw) is not wanted.
      again = compiles.get(compiles.size() - 1).thenCompose(compiled ->
          rejection(compiled.report(kernel.entry())) == null
              ? CompletableFuture.completedFuture(null) : started);
    }
    return new LeanerCompiles(compiles, again);
  }

  /**
   * One form of a kernel compiled at its register ask; where that is rejected and the form has no
   * leaner one, again with its ask lifted ({@link #withMaxRegisters}), where that changes it.
   */
  private static CompiledKernel compileForm(GeneratedKernel form, String arch) {
    String text = text(form);
    List<String> options = options(form, List.of());
    CompiledKernel compiled = KernelDiskCache.current().compile(text, arch, options);
    if (form.leaner() != null || rejection(compiled.report(form.entry())) == null) {
      return compiled;
    }
    String lifted = withMaxRegisters(text);
    if (lifted.equals(text)) {
      return compiled;
    }
    CompiledKernel again = KernelDiskCache.current().compile(lifted, arch, options);
    return again.withCompileNanos(compiled.compileNanos() + again.compileNanos());
  }

  /**
   * {@code text} with every {@code .maxnreg} below {@link #MAX_REGISTERS} raised to it. A kernel
   * may ask for fewer registers than that (one whose launch takes as many threads as its
   * registers allow asks for a block of 1,024 threads' worth); where ptxas needs more for it
   * (stack or spills), {@link #compile} compiles it again with these, as do {@link
   * #compileAgain} and the driver's compiler after them.
   */
  public static String withMaxRegisters(String text) {
    return MAX_REGISTERS_DIRECTIVE.matcher(text).replaceAll(m ->
        Integer.parseInt(m.group(1)) < MAX_REGISTERS ? ".maxnreg " + MAX_REGISTERS : m.group());
  }

  /** Whether {@code kernel} decodes GPU-DFOR tiles (TilePrimitives.dforTile). */
  public static boolean decodesDforTiles(GeneratedKernel kernel) {
    return kernel.ptx().contains(".shared .align 8 .b64 " + TilePrimitives.DFOR_TOTALS + "[");
  }

  /** {@code options}, and {@link #DFOR_OPTION} where {@code kernel} decodes GPU-DFOR tiles. */
  static List<String> options(GeneratedKernel kernel, List<String> options) {
    if (!decodesDforTiles(kernel)) {
      return options;
    }
    List<String> all = new ArrayList<>(options);
    all.add(DFOR_OPTION);
    return all;
  }

  /**
   * For a kernel {@link #compile} gave a {@link #rejection}: the first compile with other
   * options (-O1, a register cap of {@link #MAX_REGISTERS}, both) that has none, or null. Its
   * {@link CompiledKernel#compileNanos} counts only itself.
   */
  public static CompiledKernel compileAgain(GeneratedKernel kernel, String arch) {
    if (kernel.leaner() != null) {
      return compileAgain(kernel.leaner(), arch); // what compile() fell back to
    }
    String text = withMaxRegisters(text(kernel));
    for (List<String> options : AGAIN) {
      CompiledKernel again = KernelDiskCache.current().compile(text, arch,
          options(kernel, options));
      if (rejection(again.report(kernel.entry())) == null) {
        return again;
      }
    }
    return null;
  }

  /**
   * {@link #compileAgain} started on a compile thread, for a caller that has something else to
   * try first (the driver's compiler: GeneratedKernels) and wants these compiles done by then.
   * {@link #compiledAgain} waits for it.
   */
  public static CompletableFuture<CompiledKernel> compileAgainAhead(GeneratedKernel kernel,
      String arch) {
    return CompileThreads.start(() -> compileAgain(kernel, arch));
  }

  /** What {@link #compileAgainAhead} started: {@link #compileAgain}'s result, or what it threw. */
  public static CompiledKernel compiledAgain(CompletableFuture<CompiledKernel> ahead) {
    return CompileThreads.join(ahead);
  }

  /**
   * {@link #compileAgain} of {@code kernel}: what {@code ahead} gives, where it was started
   * ({@link #compileAgainAhead}, {@link Compilation#againAhead}), else compiled now.
   */
  public static CompiledKernel compiledAgain(CompletableFuture<CompiledKernel> ahead,
      GeneratedKernel kernel, String arch) {
    return ahead != null ? compiledAgain(ahead) : compileAgain(kernel, arch);
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
