package dev.tessera.spark.expr;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;

/**
 * One Spark node of a fused filter/project chain, kept as Catalyst expressions: for explain, and to
 * replay a batch on the CPU when the GPU reports an ANSI error, so the user gets Spark's own error.
 *
 * @param condition the filter condition, or null for a projection
 * @param projectList the projection, or null for a filter
 */
public record FilterProjectStep(Expression condition, List<NamedExpression> projectList)
    implements Serializable {

  public static FilterProjectStep filter(Expression condition) {
    return new FilterProjectStep(condition, null);
  }

  public static FilterProjectStep project(List<NamedExpression> projectList) {
    return new FilterProjectStep(null, List.copyOf(projectList));
  }

  public boolean isFilter() {
    return condition != null;
  }

  @Override
  public String toString() {
    return isFilter() ? "Filter " + condition.sql() : "Project " + projectList.stream()
        .map(e -> ((Expression) e).sql()).toList();
  }
}
