package dev.tessera.spark.rewrite;

import dev.tessera.spark.TesseraConf;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * The plan rewrite: replaces the parts of a physical plan Tessera supports with GPU nodes and
 * leaves the rest to Spark's CPU operators.
 *
 * <p><b>This is the hand-over point between activation and the rewrite.</b>
 * {@link TesseraColumnarRule} calls {@link #rewrite} only once it has checked that Tessera is
 * enabled for the session and that the device runtime is usable, so an implementation needs to
 * check neither. {@link #standard()} names the rewrite sessions use. An implementation:
 * <ul>
 *   <li>consults {@link TesseraConf#isExecEnabled} and {@link TesseraConf#isExpressionEnabled}
 *       (the switches of the rules in {@link GpuRules});
 *   <li>reports what it did with {@link dev.tessera.spark.ExplainLog#log} at
 *       {@link TesseraConf#explain()};
 *   <li>returns a plan with the same output and meaning, falling back to the CPU node, with a
 *       reason, whenever it cannot match Spark's result exactly; its GPU nodes sit directly
 *       over their children (Spark, then {@link Transitions}, put the transitions in).
 * </ul>
 */
@FunctionalInterface
public interface PlanRewriter {
  /**
   * Rewrites {@code plan} (a physical plan, before Spark inserts row/columnar transitions).
   *
   * @param conf the session's settings, validated, as of this query
   */
  SparkPlan rewrite(SparkPlan plan, TesseraConf conf);

  /** The rewrite every session uses. */
  static PlanRewriter standard() {
    return new GpuRewrite(GpuRules.standard());
  }
}
