package dev.tessera.spark.rewrite;

import dev.tessera.spark.ExplainLog;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;

/** Describes a rewritten plan for explain: each node, whether it runs on the GPU, and why not. */
final class PlanReport {
  private PlanReport() {}

  static List<ExplainLog.Node> describe(SparkPlan plan, Map<SparkPlan, String> reasons) {
    List<ExplainLog.Node> nodes = new ArrayList<>();
    walk(plan, 0, reasons, nodes);
    return nodes;
  }

  private static void walk(SparkPlan node, int depth, Map<SparkPlan, String> reasons,
      List<ExplainLog.Node> out) {
    String description = "Exec <" + node.nodeName() + ">";
    if (node instanceof TesseraFusedExec g) {
      out.add(ExplainLog.Node.onGpu(depth, description + " " + g.steps()));
    } else if (node instanceof TesseraHashAggregateExec a) {
      out.add(ExplainLog.Node.onGpu(depth, description + " " + a.simpleString(8)));
    } else if (node instanceof HostToDeviceExec || node instanceof DeviceToHostExec) {
      out.add(ExplainLog.Node.onGpu(depth, description));
    } else {
      String reason = reasons.get(node);
      out.add(ExplainLog.Node.notOnGpu(depth, description, reason != null ? reason
          : "Tessera has no GPU version of " + node.getClass().getSimpleName()));
    }
    for (SparkPlan child : CollectionConverters.asJava(node.children())) {
      walk(child, depth + 1, reasons, out);
    }
  }
}
