package dev.tessera.spark.rewrite;

import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.expr.PipelineStep;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.execution.FilterExec;
import org.apache.spark.sql.execution.ProjectExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * FilterExec and ProjectExec: each becomes a step of a fused GPU pipeline, merging with the GPU
 * pipeline directly below it, so consecutive filters, projections and join probes are one kernel
 * launch per batch:
 *
 * <pre>
 *   ProjectExec                      TesseraFusedExec [Filter, Project]
 *     FilterExec          ==>          child (its upload, or its device batches)
 *       child
 * </pre>
 */
final class FilterProjectRules {
  private FilterProjectRules() {}

  static final ExecRule<FilterExec> FILTER = new ExecRule<>(FilterExec.class,
      "WHERE and HAVING conditions",
      (filter, meta, context) -> meta.cannotRunOnGpu(
          context.blockersOf(List.of(filter.condition()), filter.child())),
      (filter, converter) -> converter.fused(filter.child(),
          PipelineStep.filter(filter.condition()), null),
      List.of(TesseraFusedExec.class));

  static final ExecRule<ProjectExec> PROJECT = new ExecRule<>(ProjectExec.class,
      "SELECT lists: computed columns",
      (project, meta, context) -> meta.cannotRunOnGpu(
          context.blockersOf(projectList(project), project.child())),
      (project, converter) -> converter.fused(project.child(),
          PipelineStep.project(projectList(project)), null),
      List.of(TesseraFusedExec.class));

  private static List<NamedExpression> projectList(ProjectExec project) {
    return CollectionConverters.asJava(project.projectList()).stream()
        .map(e -> (NamedExpression) e).toList();
  }
}
