package dev.tessera.spark.rewrite;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.expr.ExpressionBlocker;
import dev.tessera.spark.expr.ExpressionCompiler;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the rules of one rewrite share: the session's settings as of this query and its ANSI
 * mode.
 */
public final class RewriteContext {
  /** The most rows of one batch of a join's 1:N expansion (a larger one is split). */
  static final int MAX_EXPANDED_ROWS = 1 << 20;

  private final TesseraConf conf;
  private final boolean ansi;

  RewriteContext(TesseraConf conf, boolean ansi) {
    this.conf = conf;
    this.ansi = ansi;
  }

  public TesseraConf conf() {
    return conf;
  }

  public boolean ansi() {
    return ansi;
  }

  /** Whether the session lets the expression class {@code name} run on the GPU. */
  public boolean expressionEnabled(String name) {
    return conf.isExpressionEnabled(name);
  }

  /** Every expression among {@code expressions} that cannot run on the GPU over {@code input}. */
  public List<ExpressionBlocker> blockersOf(List<?> expressions,
      SparkPlan input) {
    return ExpressionCompiler.blockersOf(expressions, CollectionConverters.asJava(input.output()),
        ansi, this::expressionEnabled);
  }
}
