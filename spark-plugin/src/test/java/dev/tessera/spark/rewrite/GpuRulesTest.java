package dev.tessera.spark.rewrite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.spark.ConfigDocs;
import dev.tessera.spark.ExplainLevel;
import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.SupportedOperators;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.TesseraDeviceExec;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.LocalLimitExec;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/** The table of rules: one row is all an operator needs, and a broken row fails no query. */
class GpuRulesTest {
  /** A GPU node for the test rule (never executed). */
  static final class GpuLimitExec extends TesseraDeviceExec {
    private static final long serialVersionUID = 1L;

    GpuLimitExec(SparkPlan child) {
      super(child);
    }

    @Override
    public Seq<Attribute> output() {
      return child().output();
    }

    @Override
    protected String[] metricNames() {
      return new String[0];
    }

    @Override
    public SparkPlan withNewChildInternal(SparkPlan newChild) {
      return new GpuLimitExec(newChild);
    }
  }

  private static final String DESCRIPTION = "LIMIT n within each partition (a test rule)";

  private static ExecRule<LocalLimitExec> limitRule(ExecRule.Check<LocalLimitExec> check,
      ExecRule.Conversion<LocalLimitExec> conversion) {
    return new ExecRule<>(LocalLimitExec.class, DESCRIPTION, check, conversion,
        List.of(GpuLimitExec.class));
  }

  private static final ExecRule<LocalLimitExec> LIMIT =
      limitRule((limit, meta, context) -> { }, (limit, converter) ->
          new GpuLimitExec(limit.child()));

  private static SparkPlan limitOverScan() {
    StructType schema = new StructType().add("a", DataTypes.IntegerType);
    @SuppressWarnings("unchecked") // AttributeReferences are Attributes
    Seq<Attribute> output = (Seq<Attribute>) (Seq<?>) DataTypeUtils.toAttributes(schema);
    LocalTableScanExec scan = new LocalTableScanExec(output,
        CollectionConverters.asScala(List.<InternalRow>of()).toSeq(), Option.empty());
    return new LocalLimitExec(5, scan);
  }

  private static GpuRewrite.Rewritten rewrite(GpuRules rules, Map<String, String> settings) {
    return new GpuRewrite(rules).rewriteWithReport(limitOverScan(), TesseraConf.from(settings));
  }

  @Test
  void aRuleAddedToTheTableIsAllExplainTheSettingsPageAndTheOperatorListNeed() {
    GpuRules rules = GpuRules.standard().with(LIMIT);

    GpuRewrite.Rewritten on = rewrite(rules, Map.of());
    assertInstanceOf(GpuLimitExec.class, on.plan());
    assertTrue(rules.isGpuNode(on.plan()));
    assertFalse(GpuRules.standard().isGpuNode(on.plan()));
    assertEquals(String.join("\n",
            "*Exec <LocalLimit> will run on GPU",
            "  @Exec <LocalTableScan> runs on the CPU by design: Spark reads the rows; Tessera"
                + " copies the columns a GPU node reads to the device"),
        ExplainLog.render(on.report(), ExplainLevel.ALL));

    String key = "spark.tessera.exec.LocalLimitExec.enabled";
    assertTrue(ConfigDocs.markdown(rules).contains("| `" + key + "` | `true` |"));
    assertTrue(SupportedOperators.markdown(rules).contains(
        "| `LocalLimitExec` | " + DESCRIPTION + " | `" + key + "` |"));
    assertFalse(ConfigDocs.markdown().contains("LocalLimitExec"), "the standard page");

    GpuRewrite.Rewritten off = rewrite(rules, Map.of(key, "false"));
    assertInstanceOf(LocalLimitExec.class, off.plan());
    assertEquals("!Exec <LocalLimit> cannot run on GPU because LocalLimitExec is disabled by "
        + key, ExplainLog.render(off.report(), ExplainLevel.NOT_ON_GPU));
  }

  @Test
  void aNodeReportsEveryBlockerAtOnce() {
    GpuRules rules = GpuRules.standard().with(limitRule((limit, meta, context) -> {
      meta.cannotRunOnGpu("the first reason");
      meta.cannotRunOnGpu("the second reason");
    }, (limit, converter) -> new GpuLimitExec(limit.child())));

    GpuRewrite.Rewritten rewritten =
        rewrite(rules, Map.of("spark.tessera.exec.LocalLimitExec.enabled", "false"));

    assertInstanceOf(LocalLimitExec.class, rewritten.plan());
    assertEquals(List.of(
            "LocalLimitExec is disabled by spark.tessera.exec.LocalLimitExec.enabled",
            "the first reason", "the second reason"),
        rewritten.plan().getTagValue(GpuRewrite.CPU_REASONS).get());
  }

  @Test
  void aConversionThatThrowsIsATesseraBugThatLeavesTheNodeOnTheCpu() {
    GpuRules rules = GpuRules.standard().with(limitRule((limit, meta, context) -> { },
        (limit, converter) -> {
          throw new IllegalStateException("a bug in the conversion");
        }));

    GpuRewrite.Rewritten rewritten = rewrite(rules, Map.of());

    assertInstanceOf(LocalLimitExec.class, rewritten.plan());
    String reasons = ExplainLog.render(rewritten.report(), ExplainLevel.NOT_ON_GPU);
    assertTrue(reasons.contains("a Tessera bug") && reasons.contains("a bug in the conversion"),
        reasons);
  }
}
