package dev.tessera.spark.rewrite;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.expr.Unsupported;
import java.util.List;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * How one kind of Spark node runs on the GPU: a row of the {@link GpuRules} table, as spark-rapids'
 * {@code GpuOverrides.exec[...]} and DataFusion Comet's {@code CometExecRule} rows are. A rule holds
 * everything about its operator: what it does (for the settings page and explain), its enable
 * switch ({@code spark.tessera.exec.<Name>.enabled}), a check that records every reason the node
 * cannot run on the GPU, the conversion to GPU nodes, and the GPU node classes it produces.
 *
 * @param sparkClass the Spark node class the rule converts (matched exactly)
 * @param description what the node does in a query, e.g. "WHERE and HAVING conditions"
 * @param check records every reason a node cannot run on the GPU (it may record none); the
 *     conversion is tried as well, standalone, before the rewrite decides
 * @param conversion the node on the GPU, over children already converted; throws
 *     {@link Unsupported} when it cannot be
 * @param gpuNodes the classes of the GPU nodes the conversion produces
 */
public record ExecRule<P extends SparkPlan>(Class<P> sparkClass, String description,
    Check<P> check, Conversion<P> conversion, List<Class<? extends SparkPlan>> gpuNodes) {

  /**
   * Records why a node cannot run on the GPU (nothing when it can); a blocker that stops the
   * check from looking further may be thrown instead.
   */
  @FunctionalInterface
  public interface Check<P extends SparkPlan> {
    void check(P node, PlanMeta meta, RewriteContext context) throws Unsupported;
  }

  /** Converts a node whose check recorded nothing. */
  @FunctionalInterface
  public interface Conversion<P extends SparkPlan> {
    SparkPlan convert(P node, Converter converter) throws Unsupported;
  }

  public ExecRule {
    gpuNodes = List.copyOf(gpuNodes);
  }

  /** The operator's name in settings and explain: the Spark class's simple name. */
  public String name() {
    return sparkClass.getSimpleName();
  }

  /** The key of the rule's enable switch. */
  public String enableKey() {
    return TesseraConf.execEnabledKey(name());
  }

  void checkNode(SparkPlan node, PlanMeta meta, RewriteContext context) throws Unsupported {
    check.check(sparkClass.cast(node), meta, context);
  }

  SparkPlan convertNode(SparkPlan node, Converter converter) throws Unsupported {
    return conversion.convert(sparkClass.cast(node), converter);
  }

  /** Whether {@code node} is one of the GPU nodes this rule produces. */
  boolean produced(SparkPlan node) {
    return gpuNodes.stream().anyMatch(c -> c.isInstance(node));
  }
}
