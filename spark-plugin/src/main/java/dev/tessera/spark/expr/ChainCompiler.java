package dev.tessera.spark.expr;

import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;

/**
 * Compiles a chain of consecutive FilterExec and ProjectExec nodes, and the probes of the
 * broadcast hash joins among them, into one program, so the whole chain is one kernel launch per
 * batch (DESIGN.md §3, fusion).
 *
 * <p>Spark evaluates each node only on the rows the filters below it kept. In one program every
 * row runs every instruction, so a later filter is combined as SELECT(earlier, later, false): the
 * later condition's errors count only where the earlier filter kept the row. Errors of projected
 * values count only in rows the filters keep (the operator checks that).
 *
 * <p>A probe (PROBE) finds one build row per stream row and loads the join table's payload into
 * registers, so it is exact only where no build key repeats, or for semi and anti joins, which
 * need only whether a match exists; {@link PipelineCompiler} also compiles the chain with the 1:N
 * expansions between programs, for tables whose keys repeat.
 */
public final class ChainCompiler {
  private ChainCompiler() {}

  /**
   * The compiled chain.
   *
   * @param program the program; its input column i is the chain input's column inputOrdinals[i]
   * @param inputOrdinals the chain input's columns the program reads
   * @param output the chain's output attributes (those of its top node)
   * @param tables the join tables the program probes, in its order, as the chain's probes
   *     number them ({@link JoinProbe#table})
   */
  public record Compiled(Program program, List<Integer> inputOrdinals, List<Attribute> output,
      List<Integer> tables) {}

  /**
   * @param chain the filters and projections, bottom (first evaluated) first
   * @param input the attributes the bottom step reads
   */
  public static Compiled compile(List<PipelineStep> chain, List<Attribute> input,
      boolean ansi, Predicate<String> expressionEnabled) throws Unsupported {
    return compile(chain, input, ansi, expressionEnabled, false);
  }

  /**
   * As {@link #compile(List, List, boolean, Predicate)}; with {@code readAllInputs} the program
   * reads every input column, in order (inputOrdinals is then 0 .. n-1), so it can run on a GPU
   * node's batches as they are, without an upload that picks columns.
   */
  public static Compiled compile(List<PipelineStep> chain, List<Attribute> input,
      boolean ansi, Predicate<String> expressionEnabled, boolean readAllInputs)
      throws Unsupported {
    ProgramBuilder builder = new ProgramBuilder(ansi);
    ExpressionCompiler compiler = new ExpressionCompiler(builder, input, ansi, expressionEnabled);
    if (readAllInputs) {
      for (int i = 0; i < input.size(); i++) {
        compiler.loadInput(i);
      }
    }
    int keep = -1;
    List<Attribute> output = input;
    List<Integer> tables = new ArrayList<>();
    for (PipelineStep step : chain) {
      if (step.isFilter()) {
        keep = and(builder, keep, compiler.compile(step.condition()).register());
      } else if (step.isProbe()) {
        JoinProbe probe = step.probe();
        tables.add(probe.table());
        keep = probe(builder, compiler, probe, keep);
        output = probe.output();
      } else {
        List<NamedExpression> list = step.projectList();
        List<ExpressionCompiler.Value> values = new ArrayList<>(list.size());
        for (NamedExpression e : list) {
          values.add(compiler.compile((Expression) e));
        }
        // Bind after compiling the whole list: a projection sees its input, not its siblings.
        List<Attribute> projected = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
          compiler.bind(list.get(i).exprId(), values.get(i));
          projected.add(list.get(i).toAttribute());
        }
        output = projected;
      }
    }
    List<Program.Output> outputs = new ArrayList<>(output.size());
    for (Attribute a : output) {
      ExpressionCompiler.Value v = compiler.compile(a);
      outputs.add(new Program.Output(v.register(), SparkTypes.columnType(a.dataType())));
    }
    if (builder.registerCount() > Program.MAX_REGISTERS) {
      throw new Unsupported("the expressions need " + builder.registerCount()
          + " registers, more than the " + Program.MAX_REGISTERS + " the GPU interpreter has");
    }
    return new Compiled(builder.build(keep, outputs), compiler.usedInputs(), output, tables);
  }

  /** {@code keep AND condition}, the condition's errors counting only where keep is true. */
  private static int and(ProgramBuilder builder, int keep, int condition) {
    if (keep < 0) {
      return condition;
    }
    return builder.emitNew(Opcode.SELECT, keep, condition, builder.loadConstant(0));
  }

  /** TRUE in every row, carrying the errors of {@code register}. */
  private static int carryingErrorsOf(ProgramBuilder builder, int register) {
    int isTrue = builder.loadConstant(1);
    return builder.emitNew(Opcode.SELECT, builder.emitNew(Opcode.IS_NULL, register, 0, 0), isTrue,
        isTrue);
  }

  /**
   * Probes the join table with the stream keys, binds the build side's payload attributes to its
   * columns at the build row found, and returns the filter after the join.
   */
  private static int probe(ProgramBuilder builder, ExpressionCompiler compiler, JoinProbe probe,
      int keep) throws Unsupported {
    int[] keys = new int[probe.streamKeys().size()];
    for (int k = 0; k < keys.length; k++) {
      keys[k] = compiler.compile(probe.streamKeys().get(k)).register();
    }
    int table = builder.table(probe.schema());
    int first = builder.constant(keys[0]);
    for (int k = 1; k < keys.length; k++) {
      builder.constant(keys[k]);
    }
    int row = builder.emitNew(Opcode.PROBE, table, first, keys.length);
    List<Attribute> payload = probe.payloadAttributes();
    for (int p = 0; p < payload.size(); p++) {
      Attribute a = payload.get(p);
      compiler.bind(a.exprId(), new ExpressionCompiler.Value(
          builder.emitNew(Opcode.LOAD_BUILD, table, row, p), a.dataType()));
    }
    return switch (probe.kind()) {
      // A row without a match keeps NULL payload values; its keys' errors count even where no
      // payload value is used (Spark evaluates the keys of every row it keeps to that point).
      case LEFT_OUTER -> and(builder, keep, carryingErrorsOf(builder, row));
      case LEFT_ANTI -> and(builder, keep, builder.emitNew(Opcode.IS_NULL, row, 0, 0));
      case INNER, LEFT_SEMI -> {
        int matched = and(builder, keep, builder.emitNew(Opcode.IS_NOT_NULL, row, 0, 0));
        // The condition counts (and may raise errors) only where the keys matched.
        yield probe.condition() == null ? matched
            : and(builder, matched, compiler.compile(probe.condition()).register());
      }
    };
  }
}
