package dev.tessera.spark.rewrite;

import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.execution.ApplyColumnarRulesAndInsertTransitions;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark inserts row/columnar transitions top down and stops at a ColumnarToRowTransition, which
 * DeviceToHostExec is; so the plan below each GPU segment gets its transitions here, after
 * Spark's pass: the input of a HostToDeviceExec must be columnar (Spark adds its RowToColumnarExec
 * under a row-based child), the build sides of a GPU pipeline's joins are Spark's row-based broadcasts, and
 * everything deeper gets Spark's usual treatment.
 */
final class TransitionFixer {
  private TransitionFixer() {}

  static SparkPlan apply(SparkPlan node) {
    List<SparkPlan> children = CollectionConverters.asJava(node.children());
    List<SparkPlan> fixed = new ArrayList<>(children.size());
    boolean changed = false;
    for (SparkPlan child : children) {
      SparkPlan f = apply(child);
      if (node instanceof HostToDeviceExec) {
        f = new ApplyColumnarRulesAndInsertTransitions(
            CollectionConverters.asScala(List.<ColumnarRule>of()).toSeq(), true).apply(f);
      } else if (node instanceof TesseraPipelineExec p && p.builds().contains(child)) {
        // The build side is Spark's broadcast, read as rows: Spark's usual transitions there.
        f = new ApplyColumnarRulesAndInsertTransitions(
            CollectionConverters.asScala(List.<ColumnarRule>of()).toSeq(), false).apply(f);
      }
      changed |= f != child;
      fixed.add(f);
    }
    return changed ? node.withNewChildren(CollectionConverters.asScala(fixed).toSeq()) : node;
  }
}
