package dev.tessera.spark.expr;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;

/**
 * One Spark node of a fused chain, kept as Catalyst expressions: for explain, and to replay a
 * batch on the CPU when the GPU reports an ANSI error, so the user gets Spark's own error.
 * Exactly one of the three is set.
 *
 * @param condition the filter condition
 * @param projectList the projection
 * @param probe the probe of a broadcast hash join (the stream side flows through the chain)
 */
public record PipelineStep(Expression condition, List<NamedExpression> projectList,
    JoinProbe probe) implements Serializable {

  public static PipelineStep filter(Expression condition) {
    return new PipelineStep(condition, null, null);
  }

  public static PipelineStep project(List<NamedExpression> projectList) {
    return new PipelineStep(null, List.copyOf(projectList), null);
  }

  public static PipelineStep probe(JoinProbe probe) {
    return new PipelineStep(null, null, probe);
  }

  public boolean isFilter() {
    return condition != null;
  }

  public boolean isProbe() {
    return probe != null;
  }

  @Override
  public String toString() {
    if (isProbe()) {
      return probe.toString();
    }
    return isFilter() ? "Filter " + condition.sql() : "Project " + projectList.stream()
        .map(e -> ((Expression) e).sql()).toList();
  }
}
