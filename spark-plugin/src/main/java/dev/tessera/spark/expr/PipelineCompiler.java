package dev.tessera.spark.expr;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataTypes;
import scala.Option;

/**
 * Compiles a fused chain into a {@link Pipeline}: the whole chain as one program, and, where the
 * chain probes a table for an inner or outer join, also cut into stages at each such probe:
 *
 * <pre>
 *   stage k:   [steps since the last cut] -> Project(the attributes so far, the probe's keys)
 *   expand:    each row once per build row with its keys (1:N), the build payload appended
 *   stage k+1: [the join's condition] -> Project(the join's output) -> [next steps] ...
 * </pre>
 *
 * Both forms are compiled when the plan is made, so an expression or register limit the staged
 * form exceeds makes the chain unsupported there, not at run time.
 */
public final class PipelineCompiler {
  private PipelineCompiler() {}

  /**
   * @param chain the steps, bottom (first evaluated) first
   * @param input the attributes of the chain's input
   * @param readAllInputs whether the stages read every input column, in order (over a GPU node's
   *     batches), or only those the chain uses (over an upload of those)
   * @param maxRowsPerBatch the most rows of one expanded batch
   */
  public static Pipeline compile(List<PipelineStep> chain, List<Attribute> input,
      boolean ansi, Predicate<String> expressionEnabled, boolean readAllInputs,
      int maxRowsPerBatch) throws Unsupported {
    return compile(chain, new Options(input, ansi, readAllInputs, maxRowsPerBatch),
        expressionEnabled);
  }

  /**
   * How a pipeline was compiled: its input, whether ANSI mode was on, whether the stages read
   * every input column, and the most rows of one expanded batch.
   */
  public record Options(List<Attribute> input, boolean ansi, boolean readAllInputs,
      int maxRowsPerBatch) implements Serializable {
    public Options {
      input = List.copyOf(input);
    }
  }

  private static Pipeline compile(List<PipelineStep> chain, Options options,
      Predicate<String> expressionEnabled) throws Unsupported {
    List<Attribute> input = options.input();
    boolean ansi = options.ansi();
    int maxRowsPerBatch = options.maxRowsPerBatch();
    // The one program probes whole tables last (ProbeOrder); its steps stay Spark's.
    ChainCompiler.Compiled whole = ChainCompiler.compile(ProbeOrder.forProgram(chain), input,
        ansi, expressionEnabled, options.readAllInputs());
    List<Attribute> read = whole.inputOrdinals().stream().map(input::get).toList();
    Pipeline.Stage fused = new Pipeline.Stage(whole.program(), whole.tables(), read, chain, -1,
        new int[0], false, maxRowsPerBatch);
    boolean expands = chain.stream().anyMatch(s -> s.isProbe() && !s.probe().kind().matchOnly());
    List<Pipeline.Stage> staged = expands
        ? stages(chain, read, ansi, expressionEnabled, maxRowsPerBatch) : List.of();
    return new Pipeline(fused, staged, whole.inputOrdinals(), whole.output(), options);
  }

  /**
   * The pipeline as it must run when the build sides of {@code emptyTables} turn out to have no
   * rows (Spark's EmptyHashedRelation): Spark's HashJoin then never evaluates the stream keys of
   * an inner, semi or anti join (it outputs nothing, or every row), so neither may the GPU, where
   * a key could raise an ANSI error. Those probes' keys become {@code IF(false, key, NULL)}: no
   * row matches and no key's error counts, while the program reads the same input columns. Left
   * outer joins evaluate their keys either way. Called on the driver when the broadcasts are
   * known; returns {@code pipeline} itself when nothing changes.
   */
  public static Pipeline overEmptyBuildSides(Pipeline pipeline, Set<Integer> emptyTables) {
    List<PipelineStep> chain = new ArrayList<>(pipeline.fused().steps());
    boolean changed = false;
    for (int i = 0; i < chain.size(); i++) {
      PipelineStep step = chain.get(i);
      if (step.isProbe() && emptyTables.contains(step.probe().table())
          && step.probe().kind() != JoinKind.LEFT_OUTER) {
        List<Expression> neverEvaluated = step.probe().streamKeys().stream()
            .map(PipelineCompiler::neverEvaluated)
            .toList();
        chain.set(i, PipelineStep.probe(step.probe().withStreamKeys(neverEvaluated)));
        changed = true;
      }
    }
    if (!changed) {
      return pipeline;
    }
    Pipeline variant;
    try {
      // Every expression but the IFs passed the plan's checks already.
      variant = compile(chain, pipeline.options(), expression -> true);
    } catch (Unsupported e) {
      throw new IllegalStateException("Tessera bug: a pipeline over an empty build side does not"
          + " compile: " + e.getMessage(), e);
    }
    if (!variant.inputOrdinals().equals(pipeline.inputOrdinals())) {
      throw new IllegalStateException("Tessera bug: a pipeline over an empty build side reads"
          + " columns " + variant.inputOrdinals() + ", not " + pipeline.inputOrdinals());
    }
    return variant;
  }

  /** {@code IF(false, key, NULL)}: the key as no row evaluates it. */
  static Expression neverEvaluated(Expression key) {
    return new If(Literal.create(false, DataTypes.BooleanType), key,
        Literal.create(null, key.dataType()));
  }

  /** Whether {@code key} is a column key ({@link ProbeOrder#column}) {@link #neverEvaluated}. */
  static boolean isNeverEvaluated(Expression key) {
    return key instanceof If i && i.predicate() instanceof Literal p
        && Boolean.FALSE.equals(p.value()) && ProbeOrder.column(i.trueValue())
        && i.falseValue() instanceof Literal n && n.value() == null;
  }

  private static List<Pipeline.Stage> stages(List<PipelineStep> chain,
      List<Attribute> input, boolean ansi, Predicate<String> enabled, int maxRows)
      throws Unsupported {
    List<Pipeline.Stage> stages = new ArrayList<>();
    List<PipelineStep> segment = new ArrayList<>();
    List<Attribute> segmentInput = input;
    List<Attribute> current = input;
    for (PipelineStep step : chain) {
      if (!step.isProbe() || step.probe().kind().matchOnly()) {
        segment.add(step);
        current = outputOf(step, current);
        continue;
      }
      JoinProbe probe = step.probe();
      List<NamedExpression> keyed = new ArrayList<>(current);
      int[] keyColumns = new int[probe.streamKeys().size()];
      for (int k = 0; k < keyColumns.length; k++) {
        keyColumns[k] = keyed.size();
        keyed.add(new Alias(probe.streamKeys().get(k), "probe_key_" + k,
            NamedExpression$.MODULE$.newExprId(), emptySeq(), Option.empty(), emptySeq()));
      }
      segment.add(PipelineStep.project(keyed));
      ChainCompiler.Compiled c = ChainCompiler.compile(segment, segmentInput, ansi,
          enabled, true);
      stages.add(new Pipeline.Stage(c.program(), c.tables(), segmentInput, segment,
          probe.table(), keyColumns, probe.kind() == JoinKind.LEFT_OUTER, maxRows));
      // The expansion's batch: the keyed columns, then the table's payload columns.
      segmentInput = new ArrayList<>(c.output());
      segmentInput.addAll(probe.payloadAttributes());
      segment = new ArrayList<>();
      if (probe.condition() != null) {
        segment.add(PipelineStep.filter(probe.condition()));
      }
      segment.add(PipelineStep.project(new ArrayList<>(probe.output())));
      current = probe.output();
    }
    ChainCompiler.Compiled last = ChainCompiler.compile(segment, segmentInput,
        ansi, enabled, true);
    stages.add(new Pipeline.Stage(last.program(), last.tables(), segmentInput, segment, -1,
        new int[0], false, maxRows));
    return stages;
  }

  private static List<Attribute> outputOf(PipelineStep step, List<Attribute> input) {
    if (step.isProbe()) {
      return step.probe().output();
    }
    if (step.isFilter()) {
      return input;
    }
    return step.projectList().stream().map(NamedExpression::toAttribute).toList();
  }

  private static <T> scala.collection.immutable.Seq<T> emptySeq() {
    return scala.collection.immutable.List$.MODULE$.empty();
  }
}
