package dev.tessera.ssb.cli;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.KernelFeatures;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import dev.tessera.spark.expr.ProbeOrder;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Prints, for each GPU pipeline of an executed plan, the kernel the generator writes for its
 * program ({@link FilterProjectGenerator}) and what the in-jar PTX compiler makes of it
 * (registers, stack, spills, compile time, whether the runtime would take it), or why the
 * pipeline has none; with a folder, also writes each kernel's PTX module there. Generating and
 * compiling need no GPU, so this works on any backend.
 *
 * <p>The inputs are taken as plain columns with validity bitmaps: the layout of uploaded and
 * device batches. A cached table's encoded columns make other variants at run time ({@link
 * Layout}).
 */
public final class KernelReport {
  /** The layout of a pipeline's input columns that its kernels are generated for. */
  public enum Layout {
    /** Uploaded and device batches: plain columns with validity bitmaps. */
    UPLOADED(null, "uploaded", "plain columns with validity bitmaps (uploaded batches; a cached"
        + " table's encoded columns compile their own variants at run time: --layout)"),
    /**
     * A cached table's batches where the codec stored every column it can as GPU-FOR (strings as
     * dictionary codes), without nulls: the layout of SSB's cached columns that are not sorted.
     */
    CACHED_FOR(Encoding.FOR, "cached-for", "GPU-FOR columns, strings as dictionary codes, without"
        + " nulls (a cached table's batches; the cache picks each column's encoding per batch)"),
    /** The same with GPU-DFOR, whose tiles the kernel decodes block-wide (sorted columns). */
    CACHED_DFOR(Encoding.DFOR, "cached-dfor", "GPU-DFOR columns, strings as dictionary codes,"
        + " without nulls (a cached table's batches; the cache picks each column's encoding per"
        + " batch)");

    private final Encoding packed;
    private final String option;
    private final String description;

    Layout(Encoding packed, String option, String description) {
      this.packed = packed;
      this.option = option;
      this.description = description;
    }

    /** The layout {@code bin/tessera sql --layout} names {@code option}, if any. */
    public static Optional<Layout> ofOption(String option) {
      for (Layout layout : values()) {
        if (layout.option.equals(option)) {
          return Optional.of(layout);
        }
      }
      return Optional.empty();
    }

    /** The inputs of columns of {@code types} in this layout. */
    public List<InputSpec> inputs(List<ColumnType> types) {
      List<InputSpec> inputs = new ArrayList<>();
      for (ColumnType type : types) {
        if (packed == null) {
          inputs.add(new InputSpec(type, Encoding.PLAIN, true));
        } else {
          inputs.add(new InputSpec(type,
              EncodedColumn.packable(type) ? packed : Encoding.PLAIN, false));
        }
      }
      return inputs;
    }
  }

  /** The architecture compiled for: the GPU Tessera is tested on (Hopper). */
  static final String ARCH = "sm_90";
  private static final int MAX_NODE_TEXT = 200;
  /**
   * Kernels compiled so far in this process, by key (a CompiledKernel, or the compiler's
   * message): pipelines of the same kernel compile once, as the runtime's cache does.
   */
  private static final Map<String, Object> COMPILED = new ConcurrentHashMap<>();

  private final PrintStream out;
  private final Path ptxDir;
  private final Set<Path> written = new HashSet<>();

  private KernelReport(PrintStream out, Path ptxDir) {
    this.out = out;
    this.ptxDir = ptxDir;
  }

  /**
   * What became of one program of a GPU pipeline: the kernel the generator wrote for it and what
   * the compiler made of it, or why it has none. Exactly one of {@code declined} and {@code
   * kernel} is null; with a kernel, at most one of {@code report} and {@code compileFailure} is
   * non-null (both are null where the compiler cannot be used).
   *
   * @param node the pipeline node the program belongs to
   * @param stage 0 for the node's fused program, 1 to n for the stages of its staged form
   * @param probeFiltered whether the kernel is the one for join tables with probe filters (the
   *     runtime builds one for a table without a direct map whose distinct keys are few enough;
   *     an aggregate's kernel then splits its rows at the first probe's filter), listed where it
   *     differs from the kernel for tables without them
   * @param program the program
   * @param aggregate whether the program feeds the node's hash aggregate (the fused program, and
   *     the staged form's last stage, of a {@link TesseraHashAggregateExec})
   * @param declined why the generator writes no kernel for it ({@link #notGenerated}, or the
   *     generator's own refusal), or null
   * @param kernel the generated kernel, or null
   * @param report what ptxas reported of the kernel's entry, compiled for {@link #ARCH}, or null
   * @param compileNanos how long compiling the kernel's module took (the first time its key was
   *     compiled: pipelines of the same kernel share one compile); 0 without a report
   * @param compileFailure the compiler's message where it refused or failed the module, or null
   */
  public record ProgramKernel(TesseraPipelineExec node, int stage, boolean probeFiltered,
      Program program, boolean aggregate, String declined, GeneratedKernel kernel,
      CompileReport report, long compileNanos, String compileFailure) {

    /** Why the runtime would not use the compiled kernel ({@link GeneratedModule#rejection}). */
    public String rejection() {
      return report == null ? null : GeneratedModule.rejection(report);
    }

    /**
     * What is wrong with this outcome, or null. Right are: a kernel the runtime would use; one
     * rejected for a stack frame or spills around a per-row prelude call (strings, the calendar,
     * an aggregate's update: the call convention keeps few registers across a call); a program
     * not generated for a reason the generator is allowed to give ({@link #notGenerated}: opcodes
     * it does not cover, join tables of more keys than a probe compares, aggregations wider than
     * it takes). Wrong are the generator refusing a program it claims to cover, a kernel for
     * uncovered opcodes, a module the compiler refuses, and any other rejection (spills without a
     * helper call, after {@link GeneratedModule#compileAgain}; more than {@link
     * GeneratedModule#MAX_REGISTERS} registers, which the wide projections' kernels needed before
     * their last form, FilterProjectGenerator.Form.POINTERS_PER_USE).
     */
    public String unexpected() {
      AggregateSpec spec = aggregate ? ((TesseraHashAggregateExec) node).spec() : null;
      if (declined != null) {
        String allowed = notGenerated(program, spec);
        if (allowed == null) {
          return "the generator declined a program of covered opcodes: " + declined;
        }
        return allowed.equals(declined) ? null
            : "declined for '" + declined + "' where the checks give '" + allowed + "'";
      }
      if (!FilterProjectGenerator.uncoveredOpcodes(program).isEmpty()) {
        return "a kernel for uncovered opcodes " + FilterProjectGenerator.uncoveredOpcodes(program);
      }
      if (compileFailure != null) {
        return "the compiler refused " + kernel.entry() + ": " + compileFailure;
      }
      String rejected = rejection();
      if (rejected == null) {
        return null;
      }
      boolean helper = kernel.ptx().contains("tessera_utf8_")
          || kernel.ptx().contains("tessera_civil_part");
      if (helper && !report.clean() && report.registers() <= GeneratedModule.MAX_REGISTERS) {
        return null;
      }
      return "the runtime would reject " + kernel.entry() + ": " + rejected;
    }
  }

  /**
   * @param executed the statement's executed plan (after it ran, so that adaptive execution's
   *     final plan is the one walked)
   * @param layout the layout of the pipelines' input columns the kernels are generated for
   * @param codegen the session's spark.tessera.codegen.enabled
   * @param ptxDir where to write each kernel's module as {@code <entry>.ptx}, or null
   */
  static void print(SparkPlan executed, Layout layout, boolean codegen, Path ptxDir,
      PrintStream out) throws IOException {
    new KernelReport(out, ptxDir).print(kernels(executed, layout), layout, codegen);
  }

  /**
   * Every program of every GPU pipeline of {@code executed} ({@link #pipelines}), in plan order
   * and each node's fused program before its staged form's stages: generated as for inputs of
   * plain columns with validity bitmaps and, where {@link PtxCompiler#available()}, compiled for
   * {@link #ARCH}.
   */
  public static List<ProgramKernel> kernels(SparkPlan executed) {
    return kernels(executed, Layout.UPLOADED);
  }

  /** {@link #kernels(SparkPlan)} generated for inputs in {@code layout}. */
  public static List<ProgramKernel> kernels(SparkPlan executed, Layout layout) {
    List<ProgramKernel> kernels = new ArrayList<>();
    for (TesseraPipelineExec node : pipelines(executed)) {
      Pipeline pipeline = node.pipeline();
      AggregateSpec spec = node instanceof TesseraHashAggregateExec a ? a.spec() : null;
      kernels.addAll(kernels(node, 0, pipeline.fused().program(), spec, layout));
      List<Pipeline.Stage> staged = pipeline.staged();
      for (int s = 0; s < staged.size(); s++) {
        boolean last = s == staged.size() - 1;
        kernels.addAll(kernels(node, s + 1, staged.get(s).program(), last ? spec : null,
            layout));
      }
    }
    return kernels;
  }

  /**
   * The program's kernel, then, for an aggregate's program that probes join tables, the kernel
   * for tables with probe filters where the generator writes another one. {@code spec}: the
   * aggregation the program feeds, or null for a filter-project program.
   */
  private static List<ProgramKernel> kernels(TesseraPipelineExec node, int stage,
      Program program, AggregateSpec spec, Layout layout) {
    boolean aggregate = spec != null;
    String reason = notGenerated(program, spec);
    if (reason != null) {
      return List.of(
          new ProgramKernel(node, stage, false, program, aggregate, reason, null, null, 0, null));
    }
    List<InputSpec> inputs = layout.inputs(program.inputTypes());
    KernelFeatures features = KernelFeatures.forArch(ARCH);
    GeneratedKernel kernel;
    GeneratedKernel filtered = null;
    try {
      if (!aggregate) {
        kernel = FilterProjectGenerator.generate(program, inputs);
      } else {
        kernel = AggregateUpdateGenerator.generate(program, inputs, spec, features);
        if (!program.tables().isEmpty()) {
          BitSet every = new BitSet();
          every.set(0, program.tables().size());
          GeneratedKernel withFilters =
              AggregateUpdateGenerator.generate(program, inputs, spec, features, every);
          if (!sameCode(kernel, withFilters)) {
            filtered = withFilters;
          }
        }
      }
    } catch (CodegenUnsupportedException e) {
      return List.of(new ProgramKernel(node, stage, false, program, aggregate, e.getMessage(),
          null, null, 0, null));
    }
    ProgramKernel plain = compiled(node, stage, false, program, aggregate, kernel);
    return filtered == null ? List.of(plain)
        : List.of(plain, compiled(node, stage, true, program, aggregate, filtered));
  }

  /** Whether two kernels are the same code under their own entry names. */
  private static boolean sameCode(GeneratedKernel a, GeneratedKernel b) {
    return a.ptx().replace(a.entry(), "").equals(b.ptx().replace(b.entry(), ""));
  }

  /** {@code kernel}'s outcome: compiled where the in-jar compiler can run. */
  private static ProgramKernel compiled(TesseraPipelineExec node, int stage,
      boolean probeFiltered, Program program, boolean aggregate, GeneratedKernel kernel) {
    if (!PtxCompiler.available()) {
      return new ProgramKernel(node, stage, probeFiltered, program, aggregate, null, kernel,
          null, 0, null);
    }
    Object result = COMPILED.computeIfAbsent(kernel.key(), key -> compile(kernel));
    if (result instanceof CompiledKernel c) {
      return new ProgramKernel(node, stage, probeFiltered, program, aggregate, null, kernel,
          c.report(kernel.entry()), c.compileNanos(), null);
    }
    return new ProgramKernel(node, stage, probeFiltered, program, aggregate, null, kernel, null,
        0, (String) result);
  }

  private void print(List<ProgramKernel> kernels, Layout layout, boolean codegen)
      throws IOException {
    long nodes = kernels.stream().filter(k -> k.stage() == 0).count();
    out.println();
    out.printf("Generated kernels (%d GPU pipeline node(s)), as the generator writes them for"
        + " inputs of %s, compiled for %s:%n", nodes, layout.description, ARCH);
    if (!PtxCompiler.available()) {
      out.println("  (the in-jar PTX compiler cannot be used here, so kernels are generated but"
          + " not compiled: " + PtxCompiler.unavailableReason() + ")");
    }
    out.println("  The runtime runs them only on the cuda backend with"
        + " spark.tessera.codegen.enabled=true (this session: " + codegen + "); otherwise, and"
        + " where one is rejected or not generated, the interpreter kernel runs the program.");
    if (ptxDir != null) {
      Files.createDirectories(ptxDir);
    }
    int n = 0;
    for (ProgramKernel k : kernels) {
      if (k.stage() == 0) {
        if (!k.probeFiltered()) {
          n++;
          out.println();
          out.printf("[%d] %s%n", n, shorten(k.node().simpleString(25)));
          probeOrder(k.node());
        }
        report("", k);
      } else {
        if (k.stage() == 1 && !k.probeFiltered()) {
          out.printf("    staged form (runs instead when a probed build side's keys repeat):"
              + " %d stages%n", k.node().pipeline().staged().size());
        }
        report("stage " + k.stage() + ": ", k);
      }
    }
    if (nodes == 0) {
      out.println("  No GPU pipeline (filter, projection, join probe or hash aggregate) in the"
          + " plan: nothing to generate.");
    }
  }

  /**
   * Where the node's one program probes its tables in another order than the plan's joins
   * (ProbeOrder: whole tables last, the others by the share of rows they keep), that order.
   */
  private void probeOrder(TesseraPipelineExec node) {
    List<Integer> tables = node.pipeline().fused().tables();
    List<Integer> planned = node.probes().stream().map(JoinProbe::table).toList();
    if (!tables.equals(planned)) {
      List<String> order = new ArrayList<>();
      for (int t : tables) {
        JoinProbe probe = node.probes().stream().filter(p -> p.table() == t).findFirst()
            .orElseThrow();
        order.add("Probe#" + t + " (" + (probe.wholeBuildTable() ? "a whole table"
            : Double.isNaN(probe.keptShare()) ? "filtered, share unknown"
            : String.format("keeps %.1f%% of its table's rows", 100 * probe.keptShare())) + ")");
      }
      out.println("    the program probes its tables in the order " + String.join(", ", order)
          + ": whole tables last, the others fewest rows kept first where that is measured"
          + " (those within " + ProbeOrder.SHARE_TOLERANCE
          + " times the smallest share in the plan's order)");
    }
  }

  /** One program's lines: what it is, then its kernel or why it has none. */
  private void report(String label, ProgramKernel k) throws IOException {
    Program program = k.program();
    String indent = label.isEmpty() ? "    " : "      ";
    int columns = program.inputTypes().size();
    if (k.probeFiltered()) {
      out.printf("%s%swhere the join table of the filter's first probe has a probe filter (a"
          + " table without a direct map, of few enough keys), instead:%n",
          label.isEmpty() ? indent : "    ", label);
    } else {
      out.printf("%s%sprogram: %d instructions, %d registers, %d input column%s %s%s%n",
          label.isEmpty() ? indent : "    ", label, program.instructionCount(),
          program.registerCount(), columns, columns == 1 ? "" : "s", program.inputTypes(),
          program.hasFilter() ? ", with a filter" : "");
    }
    if (k.declined() != null) {
      out.println(indent + "not generated: " + k.declined());
      return;
    }
    GeneratedKernel kernel = k.kernel();
    CompiledKernel compiled =
        COMPILED.get(kernel.key()) instanceof CompiledKernel c ? c : null;
    if (k.report() != null) {
      out.printf("%skernel %s; compiled in %.0f ms%n", indent, k.report().summary(),
          k.compileNanos() / 1e6);
      String how = compiled == null ? "" : howCompiled(kernel, compiled);
      if (!how.isEmpty()) {
        out.println(indent + "compiled as " + how);
      }
      String rejection = k.rejection();
      out.println(indent + (rejection == null ? "the runtime would use it"
          : "the runtime would not use it (the interpreter runs instead): " + rejection));
    } else if (k.compileFailure() != null) {
      out.println(indent + "kernel " + kernel.entry() + ": compiling failed (the interpreter"
          + " would run instead): " + k.compileFailure());
    } else {
      out.println(indent + "kernel " + kernel.entry() + " (generated, not compiled)");
    }
    if (ptxDir != null) {
      Path file = ptxDir.resolve(kernel.entry() + ".ptx");
      if (written.add(file)) {
        // The text the cubin beside it was compiled from, where it was compiled.
        Files.writeString(file, compiled != null ? compiled.ptx() : GeneratedModule.text(kernel),
            StandardCharsets.US_ASCII);
      }
      out.println(indent + "PTX: " + file);
      // The compiled kernel's cubin beside it, for a SASS disassembler (dev/sass-waits).
      if (compiled != null) {
        Path cubin = ptxDir.resolve(kernel.entry() + ".cubin");
        if (written.add(cubin)) {
          Files.write(cubin, compiled.cubin());
        }
        out.println(indent + "cubin: " + cubin);
      }
    }
  }

  /**
   * How {@code compiled} differs from {@code kernel}'s first form compiled as written: which of
   * its forms ({@link GeneratedKernel#leaner}) it is, a {@code .maxnreg} raised ({@link
   * GeneratedModule#withMaxRegisters}), the options; "" where it does not.
   */
  static String howCompiled(GeneratedKernel kernel, CompiledKernel compiled) {
    List<GeneratedKernel> forms = new ArrayList<>();
    for (GeneratedKernel form = kernel; form != null; form = form.leaner()) {
      forms.add(form);
    }
    List<String> how = new ArrayList<>();
    for (int i = 0; i < forms.size(); i++) {
      String text = GeneratedModule.text(forms.get(i));
      boolean raised = !text.equals(compiled.ptx())
          && GeneratedModule.withMaxRegisters(text).equals(compiled.ptx());
      if (text.equals(compiled.ptx()) || raised) {
        if (i > 0) {
          how.add("its form " + (i + 1) + " of " + forms.size());
        }
        if (raised) {
          how.add(".maxnreg " + GeneratedModule.MAX_REGISTERS);
        }
        break;
      }
    }
    if (!compiled.options().isEmpty()) {
      how.add(String.join(" ", compiled.options()));
    }
    return String.join(", ", how);
  }

  /** The compiled kernel, or the compiler's message when it refused or failed. */
  private static Object compile(GeneratedKernel kernel) {
    try {
      // As the runtime does on a device the driver cannot help (GeneratedKernels): a rejected
      // kernel is compiled again with other options, started beside its leaner forms
      // (GeneratedModule.Compilation); its time is until the kernel used was there.
      long started = System.nanoTime();
      GeneratedModule.Compilation compilation = GeneratedModule.compilation(kernel, ARCH);
      CompiledKernel first = compilation.used();
      if (GeneratedModule.rejection(first.report(kernel.entry())) == null) {
        return first;
      }
      CompiledKernel again =
          GeneratedModule.compiledAgain(compilation.againAhead(), kernel, ARCH);
      return again != null ? again.withCompileNanos(System.nanoTime() - started) : first;
    } catch (RuntimeException e) {
      // The compiler refused the module (a generator bug) or could not run.
      return String.valueOf(e.getMessage());
    }
  }

  /**
   * Why the generator does not write {@code program}'s kernel (feeding the aggregation
   * {@code spec}, or null for a filter-project program), or null if it does.
   */
  static String notGenerated(Program program, AggregateSpec spec) {
    return spec == null ? FilterProjectGenerator.whyNotGenerated(program)
        : AggregateUpdateGenerator.whyNotGenerated(program, spec);
  }

  /**
   * The pipeline nodes of {@code executed}, in plan order, each once: inside adaptive execution's
   * final plan and its query stages, the build sides and subqueries included.
   */
  static List<TesseraPipelineExec> pipelines(SparkPlan executed) {
    List<TesseraPipelineExec> found = new ArrayList<>();
    collect(executed, found, Collections.newSetFromMap(new IdentityHashMap<>()));
    return found;
  }

  private static void collect(SparkPlan node, List<TesseraPipelineExec> found,
      Set<SparkPlan> seen) {
    if (!seen.add(node)) {
      return;
    }
    if (node instanceof TesseraPipelineExec pipeline) {
      found.add(pipeline);
    }
    if (node instanceof AdaptiveSparkPlanExec a) {
      collect(a.executedPlan(), found, seen);
    } else if (node instanceof QueryStageExec q) {
      collect(q.plan(), found, seen);
    } else {
      CollectionConverters.asJava(node.children()).forEach(c -> collect(c, found, seen));
    }
    CollectionConverters.asJava(node.subqueries()).forEach(c -> collect(c, found, seen));
  }

  private static String shorten(String text) {
    String line = text.replace('\n', ' ');
    return line.length() <= MAX_NODE_TEXT ? line : line.substring(0, MAX_NODE_TEXT - 3) + "...";
  }
}
