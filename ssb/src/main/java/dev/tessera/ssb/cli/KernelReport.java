package dev.tessera.ssb.cli;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.CompileReport;
import dev.tessera.gpu.codegen.CompiledKernel;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.GeneratedKernel;
import dev.tessera.gpu.codegen.GeneratedModule;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.PtxCompiler;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import dev.tessera.spark.expr.Pipeline;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
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
 * device batches. A cached table's encoded columns make other variants at run time.
 */
final class KernelReport {
  /** The architecture compiled for: the GPU Tessera is tested on (Hopper). */
  static final String ARCH = "sm_90";
  private static final int MAX_NODE_TEXT = 200;

  private final PrintStream out;
  private final Path ptxDir;
  /** Kernels compiled so far by key: two pipelines of the same kernel compile once. */
  private final Map<String, Object> compiled = new HashMap<>();
  private final Set<Path> written = new HashSet<>();

  private KernelReport(PrintStream out, Path ptxDir) {
    this.out = out;
    this.ptxDir = ptxDir;
  }

  /**
   * @param executed the statement's executed plan (after it ran, so that adaptive execution's
   *     final plan is the one walked)
   * @param codegen the session's spark.tessera.codegen.enabled
   * @param ptxDir where to write each kernel's module as {@code <entry>.ptx}, or null
   */
  static void print(SparkPlan executed, boolean codegen, Path ptxDir, PrintStream out)
      throws IOException {
    new KernelReport(out, ptxDir).print(executed, codegen);
  }

  private void print(SparkPlan executed, boolean codegen) throws IOException {
    List<TesseraPipelineExec> nodes = pipelines(executed);
    out.println();
    out.printf("Generated kernels (%d GPU pipeline node(s)), as the generator writes them for"
        + " inputs of plain columns with validity bitmaps (a cached table's encoded columns"
        + " compile their own variants at run time), compiled for %s:%n", nodes.size(), ARCH);
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
    for (TesseraPipelineExec node : nodes) {
      n++;
      out.println();
      out.printf("[%d] %s%n", n, shorten(node.simpleString(25)));
      Pipeline pipeline = node.pipeline();
      boolean aggregate = node instanceof TesseraHashAggregateExec;
      report("", pipeline.fused().program(), aggregate);
      List<Pipeline.Stage> staged = pipeline.staged();
      if (!staged.isEmpty()) {
        out.printf("    staged form (runs instead when a probed build side's keys repeat):"
            + " %d stages%n", staged.size());
        for (int s = 0; s < staged.size(); s++) {
          boolean last = s == staged.size() - 1;
          report("stage " + (s + 1) + ": ", staged.get(s).program(), aggregate && last);
        }
      }
    }
    if (nodes.isEmpty()) {
      out.println("  No GPU pipeline (filter, projection, join probe or hash aggregate) in the"
          + " plan: nothing to generate.");
    }
  }

  /** One program's lines: what it is, then its kernel or why it has none. */
  private void report(String label, Program program, boolean aggregate) throws IOException {
    String indent = label.isEmpty() ? "    " : "      ";
    int columns = program.inputTypes().size();
    out.printf("%s%sprogram: %d instructions, %d registers, %d input column%s %s%s%n",
        label.isEmpty() ? indent : "    ", label, program.instructionCount(),
        program.registerCount(), columns, columns == 1 ? "" : "s", program.inputTypes(),
        program.hasFilter() ? ", with a filter" : "");
    String reason = notGenerated(program, aggregate);
    if (reason != null) {
      out.println(indent + "not generated: " + reason);
      return;
    }
    List<InputSpec> inputs = new ArrayList<>();
    for (ColumnType type : program.inputTypes()) {
      inputs.add(new InputSpec(type, Encoding.PLAIN, true));
    }
    GeneratedKernel kernel;
    try {
      kernel = FilterProjectGenerator.generate(program, inputs);
    } catch (CodegenUnsupportedException e) {
      out.println(indent + "not generated: " + e.getMessage());
      return;
    }
    if (PtxCompiler.available()) {
      Object result = compiled.computeIfAbsent(kernel.key(), key -> compile(kernel));
      if (result instanceof CompiledKernel c) {
        CompileReport report = c.report(kernel.entry());
        out.printf("%skernel %s; compiled in %.0f ms%n", indent, report.summary(),
            c.compileNanos() / 1e6);
        String rejection = GeneratedModule.rejection(report);
        out.println(indent + (rejection == null ? "the runtime would use it"
            : "the runtime would not use it (the interpreter runs instead): " + rejection));
      } else {
        out.println(indent + "kernel " + kernel.entry() + ": compiling failed (the interpreter"
            + " would run instead): " + result);
      }
    } else {
      out.println(indent + "kernel " + kernel.entry() + " (generated, not compiled)");
    }
    if (ptxDir != null) {
      Path file = ptxDir.resolve(kernel.entry() + ".ptx");
      if (written.add(file)) {
        Files.writeString(file, GeneratedModule.text(kernel), StandardCharsets.US_ASCII);
      }
      out.println(indent + "PTX: " + file);
    }
  }

  /** The compiled kernel, or the compiler's message when it refused or failed. */
  private static Object compile(GeneratedKernel kernel) {
    try {
      return GeneratedModule.compile(kernel, ARCH);
    } catch (RuntimeException e) {
      // The compiler refused the module (a generator bug) or could not run.
      return e.getMessage();
    }
  }

  /** Why the generator does not write {@code program}'s kernel, or null if it may. */
  static String notGenerated(Program program, boolean aggregate) {
    List<String> reasons = new ArrayList<>();
    if (aggregate) {
      reasons.add("hash aggregate: the generator does not write aggregate kernels yet (the"
          + " hash-aggregate kernel interprets the program)");
    }
    if (!program.tables().isEmpty()) {
      reasons.add("probes " + program.tables().size() + " join table(s): the generator does not"
          + " probe join tables yet");
    }
    Set<Opcode> uncovered = FilterProjectGenerator.uncoveredOpcodes(program);
    if (!uncovered.isEmpty()) {
      reasons.add("the generator does not cover "
          + uncovered.stream().map(Opcode::name).collect(Collectors.joining(", ")));
    }
    return reasons.isEmpty() ? null : String.join("; ", reasons);
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
