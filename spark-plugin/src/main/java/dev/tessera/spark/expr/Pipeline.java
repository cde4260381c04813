package dev.tessera.spark.expr;

import dev.tessera.gpu.expr.Program;
import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;

/**
 * A fused chain of filters, projections and join probes, compiled for the two ways it runs
 * (which one is known only once a task has the join tables):
 *
 * <ul>
 *   <li>{@link #fused}: one program, one kernel launch per batch, exact when no probed table of an
 *       inner or outer join has a repeated key (the common case of a star join: the build sides
 *       are dimension tables keyed by their primary keys);
 *   <li>{@link #staged}: the chain cut before each such probe into programs with a 1:N expansion
 *       between them, which is exact for any keys.
 * </ul>
 *
 * @param fused the whole chain as one stage
 * @param staged the chain as stages, each but the last ending with an expansion; empty when the
 *     chain has no probe that needs one
 * @param inputOrdinals the chain input's columns the stages read (the first stage's input), in
 *     order
 * @param output the chain's output attributes
 * @param options how it was compiled (to compile a variant of it at run time)
 */
public record Pipeline(Stage fused, List<Stage> staged, List<Integer> inputOrdinals,
    List<Attribute> output, PipelineCompiler.Options options) implements Serializable {

  public Pipeline {
    staged = List.copyOf(staged);
    inputOrdinals = List.copyOf(inputOrdinals);
    output = List.copyOf(output);
  }

  /**
   * One program of a pipeline and what follows it.
   *
   * @param program the program; its input is the stage's input batch
   * @param tables the join tables the program probes, in its order, by the node's numbering
   * @param input the attributes of the stage's input batch
   * @param steps the Spark steps the program evaluates (replayed on the CPU for Spark's error)
   * @param expandTable the table whose 1:N expansion takes this stage's output, or -1 for the
   *     last stage
   * @param keyColumns the output columns holding the stream keys of that expansion
   * @param leftOuter whether the expansion keeps stream rows without a match (with NULL payload)
   * @param maxRowsPerBatch the most rows of one expanded batch (a larger one is split)
   */
  public record Stage(Program program, List<Integer> tables, List<Attribute> input,
      List<PipelineStep> steps, int expandTable, int[] keyColumns, boolean leftOuter,
      int maxRowsPerBatch) implements Serializable {

    public Stage {
      tables = List.copyOf(tables);
      input = List.copyOf(input);
      steps = List.copyOf(steps);
      keyColumns = keyColumns.clone();
    }

    public boolean expands() {
      return expandTable >= 0;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Stage s && program.equals(s.program) && tables.equals(s.tables)
          && input.equals(s.input) && expandTable == s.expandTable
          && java.util.Arrays.equals(keyColumns, s.keyColumns) && leftOuter == s.leftOuter;
    }

    @Override
    public int hashCode() {
      return program.hashCode() * 31 + expandTable;
    }
  }

  /**
   * The tables whose repeated keys make the fused program wrong: those of the inner and outer
   * joins (the ones the staged form expands).
   */
  public List<Integer> expandingTables() {
    return staged.stream().filter(Stage::expands).map(Stage::expandTable).toList();
  }
}
