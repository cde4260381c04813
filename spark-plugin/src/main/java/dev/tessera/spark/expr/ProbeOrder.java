package dev.tessera.spark.expr;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The order in which a fused program probes its join tables. A chain's probes come in Spark's
 * join order, which (without cost-based optimization) follows the query's FROM clause: SSB's
 * Q2.1 probes the date table first, though every lineorder row finds its date, and the part
 * table, where one row in 25 finds a part, second. A generated kernel stops a row at its first
 * probe that misses (selection flags), and the kernel's work after its first probe is for the rows
 * that found a build row: a probe that keeps every row costs least last, and the probe that keeps
 * the fewest, first. SSB's Q4.3 keeps 2 date rows in 7 (its first table in Spark's order), 1
 * customer row in 5, 1 supplier row and 1 part row in 25.
 *
 * <p>Within a run of steps that are each a probe that {@link #movable can move} or a projection
 * that only passes on or renames columns, the program probes first the tables that are not
 * {@link JoinProbe#wholeBuildTable whole tables}, by their {@link JoinProbe#keptShare kept share}
 * where each one's is known ({@link #bySharesKept}: fewer rows kept first, those within
 * {@link #SHARE_TOLERANCE 1.25 times} the smallest in their order), else in their order; then the
 * whole ones, in theirs; the run's projections follow its probes, in their order, so the run ends
 * with the same columns. This changes nothing a row ends with: such a probe only drops rows (its
 * keys are columns, whose lookup raises no error) and binds its build columns, which later steps
 * read by attribute, and with one build row per key (the one-program form) a stream row gives at
 * most one row in either order. Only the program is reordered: the chain's steps, which explain
 * shows and the CPU replays, keep Spark's order, as does the staged form, whose 1:N expansions
 * give rows in the joins' order.
 */
public final class ProbeOrder {
  private ProbeOrder() {}

  /** {@code chain} with each run's probes in the order above. */
  public static List<PipelineStep> forProgram(List<PipelineStep> chain) {
    List<PipelineStep> ordered = new ArrayList<>(chain.size());
    int i = 0;
    while (i < chain.size()) {
      int end = runEnd(chain, i);
      if (end == i) {
        ordered.add(chain.get(i++));
        continue;
      }
      ordered.addAll(reordered(chain.subList(i, end)));
      i = end;
    }
    return ordered;
  }

  /**
   * Whether {@code probe} may be probed earlier or later in its run: an inner or semi join
   * without a condition (a condition may read columns and raise errors), whose stream keys are
   * {@link #column columns} (a computed key may raise an error on a row an earlier probe would
   * have dropped), or keys no row evaluates ({@link PipelineCompiler#neverEvaluated}).
   */
  static boolean movable(JoinProbe probe) {
    if (probe.condition() != null
        || probe.kind() != JoinKind.INNER && probe.kind() != JoinKind.LEFT_SEMI) {
      return false;
    }
    return probe.streamKeys().stream()
        .allMatch(k -> column(k) || PipelineCompiler.isNeverEvaluated(k));
  }

  /**
   * Whether {@code key} is a column, or a column widened to a larger integral type (Spark's
   * cast where an INT key meets a BIGINT one), which raises no error in any mode.
   */
  static boolean column(Expression key) {
    if (key instanceof Cast cast && cast.child() instanceof Attribute a) {
      return widening(a.dataType(), cast.dataType());
    }
    return key instanceof Attribute;
  }

  /** Spark's integral types, narrowest first. */
  private static final List<DataType> INTEGRAL = List.of(DataTypes.ByteType,
      DataTypes.ShortType, DataTypes.IntegerType, DataTypes.LongType);

  private static boolean widening(DataType from, DataType to) {
    int f = INTEGRAL.indexOf(from);
    return f >= 0 && INTEGRAL.indexOf(to) >= f;
  }

  /** Whether {@code step} projects only columns, each as it is or renamed. */
  static boolean passesColumns(PipelineStep step) {
    if (step.isFilter() || step.isProbe()) {
      return false;
    }
    return step.projectList().stream()
        .allMatch(e -> e instanceof Attribute || e instanceof Alias a
            && a.child() instanceof Attribute);
  }

  /**
   * The end (exclusive) of the run starting at {@code start}: steps that are movable probes whose
   * keys read no column the run itself made (a build column or a rename of an earlier step of
   * the run), or column projections. {@code start} itself when its step starts no run.
   */
  private static int runEnd(List<PipelineStep> chain, int start) {
    Set<ExprId> made = new HashSet<>();
    int end = start;
    while (end < chain.size()) {
      PipelineStep step = chain.get(end);
      if (step.isProbe() && movable(step.probe()) && readsNone(step.probe(), made)) {
        step.probe().buildOutput().forEach(a -> made.add(a.exprId()));
      } else if (passesColumns(step)) {
        step.projectList().stream().filter(e -> e instanceof Alias)
            .forEach(e -> made.add(e.exprId()));
      } else {
        break;
      }
      end++;
    }
    return end;
  }

  private static boolean readsNone(JoinProbe probe, Set<ExprId> made) {
    for (Expression key : probe.streamKeys()) {
      for (Attribute a : CollectionConverters.asJava(key.references().toSeq())) {
        if (made.contains(a.exprId())) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * How many times the smallest kept share left a probe's share may be and still go next in its
   * order. Shares are estimates, and probes that keep about as many rows cost about the same in
   * either order: on an H200 at SSB SF10, Q3.1 measured 3-5% slower with its supplier (19.1% kept)
   * before its customer (19.9%, ratio 1.04), while Q4.2 and Q4.3 measured 2.1-2.4% faster with
   * their customer (20%) before their date (28.5%, ratio 1.43) than after it.
   */
  public static final double SHARE_TOLERANCE = 1.25;

  /**
   * {@code probes} (each with a {@link JoinProbe#keptShare kept share}), each next one the first
   * in their order of those that keep at most {@link #SHARE_TOLERANCE} times the smallest share
   * left: a probe goes before an earlier one only where it keeps less than 4/5 of that one's share.
   */
  static List<PipelineStep> bySharesKept(List<PipelineStep> probes) {
    List<PipelineStep> left = new ArrayList<>(probes);
    List<PipelineStep> ordered = new ArrayList<>(probes.size());
    while (!left.isEmpty()) {
      double smallest = Double.POSITIVE_INFINITY;
      for (PipelineStep step : left) {
        smallest = Math.min(smallest, step.probe().keptShare());
      }
      int next = 0;
      while (left.get(next).probe().keptShare() > SHARE_TOLERANCE * smallest) {
        next++;
      }
      ordered.add(left.remove(next));
    }
    return ordered;
  }

  /**
   * A run's steps: probes of tables not whole ({@link #bySharesKept by the share of rows each
   * keeps} where every one's share is known, else in their order), then of whole ones, then the
   * rest. The run itself where that is its probes' order.
   */
  private static List<PipelineStep> reordered(List<PipelineStep> run) {
    List<PipelineStep> probes = new ArrayList<>();
    List<PipelineStep> filtering = new ArrayList<>();
    List<PipelineStep> whole = new ArrayList<>();
    List<PipelineStep> projections = new ArrayList<>();
    for (PipelineStep step : run) {
      if (!step.isProbe()) {
        projections.add(step);
        continue;
      }
      probes.add(step);
      (step.probe().wholeBuildTable() ? whole : filtering).add(step);
    }
    if (filtering.stream().noneMatch(step -> Double.isNaN(step.probe().keptShare()))) {
      filtering = bySharesKept(filtering);
    }
    List<PipelineStep> ordered = new ArrayList<>(filtering);
    ordered.addAll(whole);
    if (ordered.equals(probes)) {
      return run;
    }
    ordered.addAll(projections);
    PipelineStep last = run.get(run.size() - 1);
    if (last.isProbe()) {
      // The run's columns are its last probe's output: the join's, in Spark's order.
      ordered.add(PipelineStep.project(new ArrayList<NamedExpression>(last.probe().output())));
    }
    return ordered;
  }
}
