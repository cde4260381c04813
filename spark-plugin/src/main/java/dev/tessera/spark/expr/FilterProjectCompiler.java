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
 * Compiles a chain of consecutive FilterExec and ProjectExec nodes into one program, so the whole
 * chain is one kernel launch per batch (DESIGN.md §3, fusion).
 *
 * <p>Spark evaluates each node only on the rows the filters below it kept. In one program every
 * row runs every instruction, so a later filter is combined as SELECT(earlier, later, false): the
 * later condition's errors count only where the earlier filter kept the row. Errors of projected
 * values count only in rows the filters keep (the operator checks that).
 */
public final class FilterProjectCompiler {
  private FilterProjectCompiler() {}

  /**
   * The compiled chain.
   *
   * @param program the program; its input column i is the chain input's column inputOrdinals[i]
   * @param inputOrdinals the chain input's columns the program reads
   * @param output the chain's output attributes (those of its top node)
   */
  public record Compiled(Program program, List<Integer> inputOrdinals, List<Attribute> output) {}

  /**
   * @param chain the filters and projections, bottom (first evaluated) first
   * @param input the attributes the bottom step reads
   */
  public static Compiled compile(List<FilterProjectStep> chain, List<Attribute> input,
      boolean ansi, Predicate<String> expressionEnabled) throws Unsupported {
    return compile(chain, input, ansi, expressionEnabled, false);
  }

  /**
   * As {@link #compile(List, List, boolean, Predicate)}; with {@code readAllInputs} the program
   * reads every input column, in order (inputOrdinals is then 0 .. n-1), so it can run on a GPU
   * node's batches as they are, without an upload that picks columns.
   */
  public static Compiled compile(List<FilterProjectStep> chain, List<Attribute> input,
      boolean ansi, Predicate<String> expressionEnabled, boolean readAllInputs)
      throws Unsupported {
    ProgramBuilder builder = new ProgramBuilder(ansi);
    ExpressionCompiler compiler = new ExpressionCompiler(builder, input, ansi, expressionEnabled);
    if (readAllInputs) {
      for (Attribute a : input) {
        compiler.compile(a);
      }
    }
    int keep = -1;
    List<Attribute> output = input;
    for (FilterProjectStep step : chain) {
      if (step.isFilter()) {
        ExpressionCompiler.Value condition = compiler.compile(step.condition());
        if (keep < 0) {
          keep = condition.register();
        } else {
          int no = builder.loadConstant(0);
          keep = builder.emitNew(Opcode.SELECT, keep, condition.register(), no);
        }
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
    return new Compiled(builder.build(keep, outputs), compiler.usedInputs(), output);
  }
}
