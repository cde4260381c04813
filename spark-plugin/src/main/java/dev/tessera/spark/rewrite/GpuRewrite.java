package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.TesseraConf;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The plan rewrite, driven by the table of {@link GpuRules}: a {@link PlanMeta} tree mirrors the
 * Spark plan; every node is tagged with the reasons it cannot run on the GPU (all of them), then
 * the nodes without any are converted bottom up, each fusing with the GPU pipeline below it where
 * it can, and explain reports the outcome. The host/device transitions are not put in here: Spark
 * inserts its row/columnar transitions around the GPU nodes, and {@link Transitions} turns them
 * into Tessera's afterwards.
 */
public final class GpuRewrite implements PlanRewriter {
  /**
   * The reasons a node stays on the CPU (each a sentence, expressions' included), on the Spark
   * node itself, where adaptive re-planning, tools and tests see them.
   */
  public static final TreeNodeTag<List<String>> CPU_REASONS =
      new TreeNodeTag<>("tessera.cpuReasons");
  /** On a CPU node a conversion put in on purpose: why. */
  public static final TreeNodeTag<String> BY_DESIGN = new TreeNodeTag<>("tessera.byDesign");
  /**
   * On the plan that replaced a Spark node: that node, with its original subtree (what
   * {@link CpuFallback} keeps for executors without a usable GPU).
   */
  static final TreeNodeTag<SparkPlan> REPLACES = new TreeNodeTag<>("tessera.replaces");
  /** On an exchange the rewrite copied (its subtree changed): the exchange it copied. */
  static final TreeNodeTag<SparkPlan> COPIES = new TreeNodeTag<>("tessera.copies");

  private final GpuRules rules;

  public GpuRewrite(GpuRules rules) {
    this.rules = rules;
  }

  @Override
  public SparkPlan rewrite(SparkPlan plan, TesseraConf conf) {
    Rewritten rewritten = rewriteWithReport(plan, conf);
    ExplainLog.log(rewritten.report(), conf.explain(), scope(plan));
    return rewritten.plan();
  }

  /** A rewritten plan and explain's lines for it. */
  record Rewritten(SparkPlan plan, List<ExplainLog.Node> report) {}

  Rewritten rewriteWithReport(SparkPlan plan, TesseraConf conf) {
    RewriteContext context = new RewriteContext(conf, SQLConf.get().ansiEnabled());
    PlanMeta meta = new PlanMeta(plan, rules);
    meta.tag(context);
    SparkPlan result = meta.convert(context);
    List<ExplainLog.Node> lines = new ArrayList<>();
    meta.report(0, rules, lines);
    return new Rewritten(result, lines);
  }

  /**
   * Which part of a query {@code plan} is, for the header of its explain: under adaptive
   * execution Spark plans each query stage on its own, and each gets a report.
   */
  static String scope(SparkPlan plan) {
    boolean adaptive = SQLConf.get().adaptiveExecutionEnabled();
    if (adaptive && plan instanceof Exchange exchange) {
      return "the query stage that ends in " + exchange.getClass().getSimpleName() + " of "
          + attributes(plan);
    }
    if (adaptive && readsQueryStage(plan)) {
      return "the final query stage, which outputs " + attributes(plan);
    }
    return "the query, which outputs " + attributes(plan);
  }

  private static boolean readsQueryStage(SparkPlan plan) {
    return plan instanceof QueryStageExec || CollectionConverters.asJava(plan.children()).stream()
        .anyMatch(GpuRewrite::readsQueryStage);
  }

  private static String attributes(SparkPlan plan) {
    List<String> names = CollectionConverters.asJava(plan.output()).stream()
        .map(a -> a.name()).toList();
    return names.size() <= 6 ? String.join(", ", names)
        : String.join(", ", names.subList(0, 6)) + " and " + (names.size() - 6) + " more";
  }
}
