package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.ReadOnceSettings;
import dev.tessera.spark.TesseraConf;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.CommandResultExec;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.command.ExecutedCommandExec;
import org.apache.spark.sql.execution.datasources.v2.V2CommandExec;

/**
 * The rule Tessera injects into each SparkSession. Before Spark inserts row/columnar transitions
 * into a physical plan, it takes a validated snapshot of the session's settings (so a bad
 * {@code spark.tessera.*} value fails the query, naming the key), checks that Tessera is enabled
 * and its runtime usable ({@link RuntimeReadiness}), and only then hands the plan to the
 * {@link PlanRewriter}. Otherwise the plan goes on unchanged and runs on Spark's CPU operators.
 * On a cluster the GPU segments of the rewritten plan keep Spark's plan for the tasks of
 * executors without a usable runtime ({@link CpuFallback}). After Spark has inserted its
 * row/columnar transitions, {@link Transitions} turns those at the GPU's edges into Tessera's.
 *
 * <p>A command that runs no query of its own ({@code SET}, {@code RESET}, {@code SHOW ...}) is
 * never failed over a bad setting: those are how the user sees and removes the bad setting, and
 * Spark plans each of them through this rule before it runs.
 */
public final class TesseraColumnarRule extends ColumnarRule {
  /** What the rule did with the last plan it saw, for tests and debugging. */
  public enum Outcome {
    /** It has seen no plan yet. */
    NONE,
    /** spark.tessera.enabled is false for the session. */
    DISABLED,
    /** The device runtime is not usable (e.g. no CUDA device). */
    RUNTIME_NOT_USABLE,
    /** The plan went to the plan rewriter. */
    REWRITTEN
  }

  private final SparkSession session;
  private final PlanRewriter rewriter;
  private final Rule<SparkPlan> preTransitions = new PreTransitions();
  private final Rule<SparkPlan> postTransitions = new PostTransitions();
  private final AtomicLong plansSeen = new AtomicLong();
  private volatile Outcome lastOutcome = Outcome.NONE;

  public TesseraColumnarRule(SparkSession session, PlanRewriter rewriter) {
    this.session = session;
    this.rewriter = rewriter;
  }

  @Override
  public Rule<SparkPlan> preColumnarTransitions() {
    return preTransitions;
  }

  @Override
  public Rule<SparkPlan> postColumnarTransitions() {
    return postTransitions;
  }

  /** How many plans the rule has been applied to in this session. */
  public long plansSeen() {
    return plansSeen.get();
  }

  public Outcome lastOutcome() {
    return lastOutcome;
  }

  private SparkPlan applyTo(SparkPlan plan) {
    TesseraConf conf;
    try {
      conf = TesseraConf.from(session.sessionState().conf());
    } catch (IllegalArgumentException e) {
      if (isCommandWithoutQuery(plan)) {
        return plan; // nothing to rewrite; it may be the RESET that fixes the setting
      }
      throw new IllegalArgumentException(e.getMessage() + " RESET <key> (or spark.conf.unset)"
          + " removes a setting made on the session.", e);
    }
    plansSeen.incrementAndGet();
    ReadOnceSettings.warnOfChanges(conf, () -> session.sparkContext().getConf());
    if (!conf.enabled()) {
      return unchanged(plan, conf, Outcome.DISABLED,
          TesseraConf.ENABLED.key() + " is false");
    }
    RuntimeReadiness.Decision readiness = RuntimeReadiness.decide(session.sparkContext(), conf);
    if (readiness.notUsable() != null) {
      return unchanged(plan, conf, Outcome.RUNTIME_NOT_USABLE, readiness.notUsable());
    }
    lastOutcome = Outcome.REWRITTEN;
    SparkPlan rewritten = rewriter.rewrite(plan, conf);
    return readiness.perTaskFallback()
        ? CpuFallback.wrap(rewritten, readiness.unconfirmed(), conf) : rewritten;
  }

  /**
   * Whether the plan is a command with no query under it: SET and RESET (an ExecutedCommandExec),
   * a command's collected result (CommandResultExec), a leaf data source v2 command (SHOW TABLES).
   * A command that writes a query's result has the query as a child and is not one of these.
   */
  private static boolean isCommandWithoutQuery(SparkPlan plan) {
    return plan instanceof ExecutedCommandExec || plan instanceof CommandResultExec
        || (plan instanceof V2CommandExec && plan.children().isEmpty());
  }

  /** The whole plan stays on the CPU; explain says why at its root. */
  private SparkPlan unchanged(SparkPlan plan, TesseraConf conf, Outcome outcome, String reason) {
    lastOutcome = outcome;
    // Under adaptive execution the rule also sees the AdaptiveSparkPlan wrapper, whose query
    // stages it sees (and reports) one by one later; reporting the wrapper too would be noise.
    if (!(plan instanceof AdaptiveSparkPlanExec)) {
      ExplainLog.log(
          List.of(ExplainLog.Node.notOnGpu(0, "Exec <" + plan.nodeName() + ">", reason)),
          conf.explain());
    }
    return plan;
  }

  private final class PreTransitions extends Rule<SparkPlan> {
    @Override
    public SparkPlan apply(SparkPlan plan) {
      return applyTo(plan);
    }
  }

  /** Turns Spark's transitions at the GPU nodes' edges into Tessera's ({@link Transitions}). */
  private final class PostTransitions extends Rule<SparkPlan> {
    @Override
    public SparkPlan apply(SparkPlan plan) {
      return Transitions.insert(plan, () -> TesseraConf.from(session.sessionState().conf()));
    }
  }
}
