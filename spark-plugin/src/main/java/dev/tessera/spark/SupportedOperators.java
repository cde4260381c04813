package dev.tessera.spark;

import dev.tessera.spark.expr.ExpressionRules;
import dev.tessera.spark.rewrite.ExecRule;
import dev.tessera.spark.rewrite.GpuRules;

/**
 * The operators and expressions Tessera may put on the GPU, as the settings page lists them:
 * generated from a table of rules ({@link GpuRules}), so it names exactly what the rewrite
 * dispatches on, each with what it does and the switch that turns it off.
 */
public final class SupportedOperators {
  private SupportedOperators() {}

  /** The supported operators and expressions of {@code rules}, as Markdown tables. */
  public static String markdown(GpuRules rules) {
    StringBuilder md = new StringBuilder()
        .append("## Supported operators\n\n")
        .append("Spark plan nodes that run on the GPU (each fused with the GPU nodes next to it"
            + " where it can); the others run on Spark's CPU operators, and"
            + " `spark.tessera.explain` says why.\n\n")
        .append("| Spark node | What it runs | Switch |\n")
        .append("| --- | --- | --- |\n");
    for (ExecRule<?> rule : rules.execRules()) {
      md.append("| `").append(rule.name()).append("` | ").append(cell(rule.description()))
          .append(" | `").append(rule.enableKey()).append("` |\n");
    }
    md.append("\n## Supported expressions\n\n")
        .append("Catalyst expressions a GPU node can compute; a node holding any other stays on"
            + " the CPU.\n\n")
        .append("| Expression | What it computes | Switch |\n")
        .append("| --- | --- | --- |\n");
    for (ExpressionRules.Rule<?> rule : rules.expressionRules()) {
      md.append("| `").append(rule.name()).append("` | `").append(cell(rule.description()))
          .append("` | `").append(TesseraConf.expressionEnabledKey(rule.name())).append("` |\n");
    }
    return md.toString();
  }

  /** A '|' inside a cell would end it. */
  static String cell(String text) {
    return text.replace("|", "\\|");
  }
}
