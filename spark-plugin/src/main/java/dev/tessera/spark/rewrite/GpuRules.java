package dev.tessera.spark.rewrite;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraCacheScanExec;
import dev.tessera.spark.expr.ExpressionRules;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.CommandResultExec;
import org.apache.spark.sql.execution.InputAdapter;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.RDDScanExec;
import org.apache.spark.sql.execution.RangeExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.WholeStageCodegenExec;
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec;
import org.apache.spark.sql.execution.command.ExecutedCommandExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;

/**
 * The table of operator rules: for each Spark node class Tessera can put on the GPU, its
 * {@link ExecRule}; for expressions, {@link ExpressionRules}. Everything that lists operators reads
 * it: the rewrite, the enable switches and the settings page ({@link TesseraConf},
 * {@code ConfigDocs}), the supported-operators list, explain and the tests' notion of a Tessera
 * node. Adding an operator is adding a rule here.
 *
 * <p>It also knows the Spark nodes that are not operators to explain (wrappers of adaptive
 * execution and code generation) and those that stay on the CPU by design, with why.
 */
public final class GpuRules {
  private static final GpuRules STANDARD = new GpuRules(List.of(
      FilterProjectRules.FILTER,
      FilterProjectRules.PROJECT,
      AggregateRule.RULE,
      JoinRule.RULE,
      TopKRule.RULE));

  private static final String READS =
      "Spark reads the rows; Tessera copies the columns a GPU node reads to the device";
  /** Spark nodes that stay on the CPU by design, and why: a sentence for explain. */
  private static final String COMMAND = "a command, which Spark runs itself";
  private static final String TESSERA_CACHE = "a table cached in Tessera's format: a GPU node"
      + " above it reads the device copies of the columns it needs, still compressed"
      + " (TesseraCacheScanExec); a CPU node reads them decoded on the host";
  private static final String SPARK_CACHE = "a table cached in Spark's format (by"
      + " spark.tessera.cache.enabled=false, another spark.sql.cache.serializer, or a column type"
      + " Tessera does not store): " + READS;
  private static final Map<Class<?>, String> BY_DESIGN = Map.ofEntries(
      Map.entry(FileSourceScanExec.class, READS),
      Map.entry(BatchScanExec.class, READS),
      Map.entry(InMemoryTableScanExec.class, SPARK_CACHE),
      Map.entry(LocalTableScanExec.class, READS),
      Map.entry(RDDScanExec.class, READS),
      Map.entry(RangeExec.class, READS),
      Map.entry(ShuffleExchangeExec.class, "Spark's shuffle moves the rows between stages on the"
          + " host; the GPU nodes on either side copy their batches to and from the device"),
      Map.entry(BroadcastExchangeExec.class, "Spark's broadcast sends a join's build side to"
          + " every executor, where a GPU join builds its hash table on the device"),
      Map.entry(ExecutedCommandExec.class, COMMAND),
      Map.entry(CommandResultExec.class, COMMAND));

  /** Spark nodes that wrap others (adaptive execution, code generation): not explained. */
  private static final List<Class<?>> WRAPPERS = List.of(AdaptiveSparkPlanExec.class,
      QueryStageExec.class, AQEShuffleReadExec.class, WholeStageCodegenExec.class,
      InputAdapter.class, ReusedExchangeExec.class);

  private final Map<Class<?>, ExecRule<?>> rules;

  private GpuRules(List<ExecRule<?>> rules) {
    Map<Class<?>, ExecRule<?>> bySparkClass = new LinkedHashMap<>();
    for (ExecRule<?> rule : rules) {
      if (bySparkClass.put(rule.sparkClass(), rule) != null) {
        throw new IllegalArgumentException("two rules for " + rule.name());
      }
    }
    this.rules = Collections.unmodifiableMap(bySparkClass);
  }

  /** The rules every session uses. */
  public static GpuRules standard() {
    return STANDARD;
  }

  /** These rules and {@code rule}, whose enable switch is registered as a setting. */
  public GpuRules with(ExecRule<?> rule) {
    TesseraConf.registerExec(rule.name(), rule.description());
    List<ExecRule<?>> all = new ArrayList<>(rules.values());
    all.add(rule);
    return new GpuRules(all);
  }

  /** Every operator rule, in the order of the settings page. */
  public List<ExecRule<?>> execRules() {
    return List.copyOf(rules.values());
  }

  /** Every expression rule, in the order of the settings page. */
  public List<ExpressionRules.Rule<?>> expressionRules() {
    return ExpressionRules.all();
  }

  /** The rule for {@code node}'s class, or null. */
  ExecRule<?> ruleFor(SparkPlan node) {
    return rules.get(node.getClass());
  }

  /**
   * Whether {@code node} is a Tessera GPU node: one a rule produces, or a transition between
   * host and device.
   */
  public boolean isGpuNode(SparkPlan node) {
    return node instanceof HostToDeviceExec || node instanceof DeviceToHostExec
        || node instanceof TesseraCacheScanExec || isGpuOperator(node);
  }

  /** Whether {@code node} is a GPU node a rule produces (an operator, not a transition). */
  public boolean isGpuOperator(SparkPlan node) {
    return rules.values().stream().anyMatch(rule -> rule.produced(node));
  }

  /** Why {@code node} stays on the CPU by design, or null when it does not. */
  public String byDesign(SparkPlan node) {
    scala.Option<String> added = node.getTagValue(GpuRewrite.BY_DESIGN); // a conversion's
    if (added.isDefined()) {
      return added.get();
    }
    if (node instanceof InMemoryTableScanExec
        && TesseraCacheScanExec.tesseraCacheScan(node) != null) {
      return TESSERA_CACHE;
    }
    return BY_DESIGN.get(node.getClass());
  }

  /** Whether {@code node} only wraps others, for adaptive execution or code generation. */
  public boolean isWrapper(SparkPlan node) {
    return WRAPPERS.stream().anyMatch(c -> c.isInstance(node));
  }
}
