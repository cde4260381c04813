package dev.tessera.spark.rewrite;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.JoinKind;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BindReferences;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.optimizer.BuildLeft$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftAnti$;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.RightOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.ResolvedHint;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec;
import org.apache.spark.sql.execution.joins.HashJoin$;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A BroadcastHashJoinExec becomes a probe step of a GPU pipeline over its stream side, with
 * Spark's own broadcast of its build side as the pipeline node's other child:
 *
 * <pre>
 *   BroadcastHashJoinExec                  TesseraFusedExec [..., Probe, ...]
 *     stream                   ==>           stream (its upload, or its GPU pipeline)
 *     BroadcastExchangeExec build            BroadcastExchangeExec build (unchanged)
 * </pre>
 *
 * The probe fuses with the GPU filters, projections and joins below it and with those and the
 * aggregate above it ({@link Converter#fused}), so a star join (a fact table
 * probing several dimension tables) and its aggregate run as one kernel per fact batch.
 *
 * <p>Why Spark's broadcast: under adaptive execution the build side is a broadcast query stage
 * that has already run (with Spark's HashedRelation mode) before the join is planned, so a GPU
 * exchange could not replace it there; keeping Spark's exchange also keeps exchange reuse and
 * dynamic partition pruning as they are. Each executor converts the relation's rows to columns
 * once per broadcast (as compact as a columnar broadcast would be once on the device).
 */
final class JoinRule {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(JoinRule.class);

  static final ExecRule<BroadcastHashJoinExec> RULE = new ExecRule<>(BroadcastHashJoinExec.class,
      "joins with a broadcast side: inner, left/right outer, left semi and anti, on integral,"
          + " date, decimal and string keys",
      JoinRule::check, JoinRule::convert, List.of(TesseraFusedExec.class));

  private JoinRule() {}

  /** Records every reason {@code join} cannot be a GPU probe: its size, kind, keys, columns. */
  private static void check(BroadcastHashJoinExec join, PlanMeta meta, RewriteContext context) {
    boolean buildLeft = join.buildSide() == BuildLeft$.MODULE$;
    SparkPlan stream = buildLeft ? join.right() : join.left();
    SparkPlan build = buildLeft ? join.left() : join.right();
    String tooLarge = buildTooLarge(build, context.conf());
    if (tooLarge != null) {
      LOG.warn("Tessera: a broadcast hash join stays on the CPU: {}", tooLarge);
      meta.cannotRunOnGpu(tooLarge);
    }
    JoinKind kind = null;
    try {
      kind = kind(join.joinType(), buildLeft, join.isNullAwareAntiJoin());
    } catch (Unsupported e) {
      meta.cannotRunOnGpu(e.getMessage());
    }
    if (join.condition().isDefined() && kind != null && kind != JoinKind.INNER) {
      meta.cannotRunOnGpu(CONDITION);
    }
    for (Expression key : asJava(buildLeft ? join.leftKeys() : join.rightKeys())) {
      try {
        keyType(key);
      } catch (Unsupported e) {
        meta.cannotRunOnGpu(e.getMessage());
      }
    }
    for (Attribute a : asJava(stream.output())) {
      try {
        SparkTypes.columnType(a.dataType());
      } catch (Unsupported e) {
        meta.cannotRunOnGpu("its stream side's column " + a.sql() + ": " + e.getMessage());
      }
    }
    if (kind == null || !kind.matchOnly()) {
      for (Attribute a : asJava(build.output())) {
        try {
          SparkTypes.columnType(a.dataType());
        } catch (Unsupported e) {
          meta.cannotRunOnGpu("its build side's column " + a.sql() + ": " + e.getMessage());
        }
      }
    }
    meta.cannotRunOnGpu(context.blockersOf(
        asJava(buildLeft ? join.rightKeys() : join.leftKeys()), stream));
    meta.cannotRunOnGpu(context.blockersOf(
        asJava(buildLeft ? join.leftKeys() : join.rightKeys()), build));
    if (join.condition().isDefined()) {
      meta.cannotRunOnGpu(context.blockersOf(List.of(join.condition().get()), join));
    }
  }

  /** PROBE finds one build row; see {@link #probe}. */
  private static final String CONDITION = "a join condition besides the keys is supported on the"
      + " GPU for inner joins only";

  private static SparkPlan convert(BroadcastHashJoinExec join, Converter converter)
      throws Unsupported {
    boolean buildLeft = join.buildSide() == BuildLeft$.MODULE$;
    String tooLarge = buildTooLarge(buildLeft ? join.left() : join.right(),
        converter.context().conf());
    if (tooLarge != null) {
      throw new Unsupported(tooLarge);
    }
    JoinProbe probe = probe(join, buildLeft);
    SparkPlan stream = buildLeft ? join.right() : join.left();
    SparkPlan build = buildLeft ? join.left() : join.right();
    return converter.fused(stream, PipelineStep.probe(probe), build);
  }

  /**
   * Why the build side is too large for the device, or null. Its table needs on the device the
   * build side's columns and the table built from them: a build side estimated at more than half
   * of the device cap would fail every task (or, with tasks sharing the pool, some of them), so
   * the join runs on Spark's CPU operator, which is exact. Under adaptive execution the estimate
   * is the broadcast's real size. (Its staging needs no pinned memory: staging beyond the pinned
   * cap is pageable, see StagingAllocators.)
   */
  static String buildTooLarge(SparkPlan build, TesseraConf conf) {
    long size = sizeEstimate(build);
    if (size <= 0) {
      return null;
    }
    long deviceCap = conf.deviceCapBytes();
    if (deviceCap == 0 && TesseraRuntime.isUsable()) {
      deviceCap = TesseraRuntime.backend().deviceMemory().capBytes(); // the automatic cap
    }
    String why = "its build side (about %,d bytes) needs more than half of %s (%,d bytes) for"
        + " its table; raise it to run this join on the GPU";
    if (deviceCap > 0 && size > deviceCap / 2) {
      return String.format(why, size, TesseraConf.DEVICE_CAP_BYTES.key(), deviceCap);
    }
    return null;
  }

  /** The build side's size in bytes as Spark estimates it (measured under AQE), or -1. */
  private static long sizeEstimate(SparkPlan build) {
    try {
      if (build instanceof QueryStageExec stage) {
        scala.Option<Statistics> stats = stage.computeStats();
        if (stats.isDefined()) {
          return clamp(stats.get().sizeInBytes());
        }
      }
      scala.Option<LogicalPlan> logical = build.logicalLink();
      if (logical.isDefined()) {
        return clamp(logical.get().stats().sizeInBytes());
      }
    } catch (RuntimeException e) {
      // No estimate: the runtime handles a table that does not fit.
    }
    return -1;
  }

  private static long clamp(scala.math.BigInt size) {
    return size.isValidLong() ? size.toLong() : Long.MAX_VALUE;
  }

  private static JoinProbe probe(BroadcastHashJoinExec join, boolean buildLeft)
      throws Unsupported {
    JoinKind kind = kind(join.joinType(), buildLeft, join.isNullAwareAntiJoin());
    SparkPlan streamPlan = buildLeft ? join.right() : join.left();
    SparkPlan buildPlan = buildLeft ? join.left() : join.right();
    scala.collection.immutable.Seq<Expression> streamKeySeq =
        buildLeft ? join.rightKeys() : join.leftKeys();
    List<Expression> streamKeys = asJava(streamKeySeq);
    List<Expression> buildKeys = asJava(buildLeft ? join.leftKeys() : join.rightKeys());
    List<ColumnType> keyTypes = new ArrayList<>();
    for (Expression k : buildKeys) {
      keyTypes.add(keyType(k));
    }
    Expression condition = join.condition().isDefined() ? join.condition().get() : null;
    if (condition != null && kind != JoinKind.INNER) {
      // PROBE finds one build row; with repeated keys the condition must see every one, and a
      // left outer row must know that none passed: neither fits the fused program yet.
      throw new Unsupported(CONDITION);
    }
    List<Attribute> streamAttrs = asJava(streamPlan.output());
    List<Attribute> buildAttrs = asJava(buildPlan.output());
    int[] payload = kind.matchOnly() ? new int[0]
        : IntStream.range(0, buildAttrs.size()).toArray();
    List<ColumnType> payloadTypes = new ArrayList<>();
    for (int p : payload) {
      payloadTypes.add(SparkTypes.columnType(buildAttrs.get(p).dataType()));
    }
    for (Attribute a : streamAttrs) {
      SparkTypes.columnType(a.dataType());
    }
    List<Expression> boundBuildKeys = new ArrayList<>();
    for (Expression k : buildKeys) {
      boundBuildKeys.add(BindReferences.bindReference(k,
          org.apache.spark.sql.catalyst.expressions.package$.MODULE$.AttributeSeq(
              buildPlan.output()), false));
    }
    String description = join.joinType() + " " + join.leftKeys().mkString(", ") + " = "
        + join.rightKeys().mkString(", ") + (condition == null ? "" : " AND " + condition.sql())
        + (buildLeft ? " (build left)" : "");
    return new JoinProbe(0, kind, streamKeys, asJava(HashJoin$.MODULE$.rewriteKeyExpr(
        streamKeySeq)), boundBuildKeys, buildAttrs, payload,
        new JoinTableSchema(keyTypes, payloadTypes), condition, asJava(join.output()),
        description, wholeBuildTable(join, buildLeft), keptShare(join, buildLeft));
  }

  /**
   * Whether the join's build side is a whole table ({@link JoinProbe#wholeBuildTable}), as the
   * logical plan it was planned from says: a relation under nothing but projections, aliases,
   * hints and filters of null checks (Spark infers those from the join's keys). False where the
   * plan does not say. A source that filters inside its scan (a V2 source's pushed filters)
   * looks whole: the probe order is then less good, never wrong.
   */
  static boolean wholeBuildTable(BroadcastHashJoinExec join, boolean buildLeft) {
    scala.Option<LogicalPlan> link = join.logicalLink();
    if (link.isEmpty() || !(link.get() instanceof Join logical)) {
      return false;
    }
    return wholeTable(buildLeft ? logical.left() : logical.right());
  }

  /**
   * The share of its table's rows the join's build side keeps ({@link JoinProbe#keptShare}): the
   * build side's rows over those of the one relation it reads (through projections and filters).
   * Under AQE the broadcast stage has run: its rows as it counted them, over the relation's rows
   * as Spark's statistics give them (a cached table's once it is loaded, a table's analyzed
   * statistics) or else as the stage's scan counted them (a file source). NaN where neither
   * says (no AQE, a build side that joins or aggregates, a scan without a row count).
   */
  static double keptShare(BroadcastHashJoinExec join, boolean buildLeft) {
    try {
      scala.Option<LogicalPlan> link = join.logicalLink();
      if (link.isEmpty() || !(link.get() instanceof Join logical)) {
        return Double.NaN;
      }
      LogicalPlan build = buildLeft ? logical.left() : logical.right();
      LogicalPlan relation = relationBelow(build);
      if (relation == null) {
        return Double.NaN;
      }
      double kept = rows(build.stats());
      double all = rows(relation.stats());
      if ((buildLeft ? join.left() : join.right()) instanceof QueryStageExec stage) {
        // The plan may be older than the stage: its logical link then carries no measure.
        scala.Option<Statistics> measured = stage.computeStats();
        if (measured.isDefined()) {
          kept = rows(measured.get());
        }
        if (Double.isNaN(all)) {
          all = rowsScanned(stage);
        }
      }
      return kept >= 0 && all > 0 ? Math.min(1.0, kept / all) : Double.NaN;
    } catch (RuntimeException e) {
      return Double.NaN; // no statistics: the probes keep their order
    }
  }

  private static double rows(Statistics stats) {
    return stats.rowCount().isDefined() ? stats.rowCount().get().doubleValue() : Double.NaN;
  }

  /**
   * The rows the stage's one scan read, as its {@code numOutputRows} metric counted them (a
   * file source's scan counts the rows it read, before any filter above it), or NaN where the
   * stage reads more than one input or its scan keeps no such count. A Parquet scan that skips
   * row groups by their statistics counts fewer rows than its table has: that table's share then
   * looks larger than it is, and its probe may come later than it should (never a wrong row).
   */
  private static double rowsScanned(QueryStageExec stage) {
    SparkPlan plan = stage.plan();
    while (plan.children().size() == 1) {
      plan = plan.children().head();
    }
    if (!plan.children().isEmpty()) {
      return Double.NaN;
    }
    scala.Option<SQLMetric> scanned = plan.metrics().get("numOutputRows");
    return scanned.isDefined() ? scanned.get().value() : Double.NaN;
  }

  /**
   * The relation {@code plan} reads under nothing but projections, aliases, hints and filters
   * (any filter), or null.
   */
  private static LogicalPlan relationBelow(LogicalPlan plan) {
    while (true) {
      if (plan instanceof LogicalQueryStage stage) {
        plan = stage.logicalPlan();
      } else if (plan instanceof Project || plan instanceof SubqueryAlias
          || plan instanceof ResolvedHint || plan instanceof Filter) {
        plan = plan.children().head();
      } else {
        return plan.children().isEmpty() ? plan : null;
      }
    }
  }

  private static boolean wholeTable(LogicalPlan plan) {
    while (true) {
      if (plan instanceof LogicalQueryStage stage) {
        plan = stage.logicalPlan();
      } else if (plan instanceof Project
          || plan instanceof SubqueryAlias || plan instanceof ResolvedHint) {
        plan = plan.children().head();
      } else if (plan instanceof Filter filter && onlyNullChecks(filter.condition())) {
        plan = filter.child();
      } else {
        return plan.children().isEmpty();
      }
    }
  }

  private static boolean onlyNullChecks(Expression condition) {
    if (condition instanceof And and) {
      return onlyNullChecks(and.left()) && onlyNullChecks(and.right());
    }
    return condition instanceof IsNotNull;
  }

  private static JoinKind kind(JoinType type, boolean buildLeft, boolean nullAware)
      throws Unsupported {
    if (type == Inner$.MODULE$) {
      return JoinKind.INNER;
    } else if (type == LeftOuter$.MODULE$ && !buildLeft) {
      return JoinKind.LEFT_OUTER;
    } else if (type == RightOuter$.MODULE$ && buildLeft) {
      return JoinKind.LEFT_OUTER; // seen from the stream side, the right one
    } else if (type == LeftSemi$.MODULE$ && !buildLeft) {
      return JoinKind.LEFT_SEMI;
    } else if (type == LeftAnti$.MODULE$ && !buildLeft) {
      if (nullAware) {
        throw new Unsupported("the null-aware anti join of NOT IN (a NULL on either side"
            + " changes every row's result) is not supported on the GPU");
      }
      return JoinKind.LEFT_ANTI;
    }
    throw new Unsupported("join type " + type + " with the build side on the "
        + (buildLeft ? "left" : "right") + " is not supported on the GPU");
  }

  private static ColumnType keyType(Expression key) throws Unsupported {
    ColumnType t = SparkTypes.columnType(key.dataType());
    return switch (t.id()) {
      case BYTE, SHORT, INT, LONG, DATE, DECIMAL, STRING -> t;
      default -> throw new Unsupported("join keys of type " + key.dataType().sql()
          + " are not supported on the GPU");
    };
  }

  private static <T> List<T> asJava(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }
}
