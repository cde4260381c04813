package dev.tessera.spark.rewrite;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKSpec;
import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.exec.TesseraTopKExec;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.TakeOrderedAndProjectExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * TakeOrderedAndProjectExec ({@code ORDER BY ... LIMIT k}, with {@code OFFSET}): each partition's
 * first k rows are found on the GPU, by a running top-k fused with the filters, projections and
 * probes below it; Spark's own node above merges those (at most k per partition, wherever Spark
 * runs it: collected to the driver or as a stage) and projects the result:
 *
 * <pre>
 *   TakeOrderedAndProjectExec          TakeOrderedAndProjectExec      (CPU, over k rows per partition)
 *     [FilterExec/ProjectExec]   ==>     DeviceToHostExec
 *       child                              TesseraTopKExec fused [filter, columns, sort keys]
 *                                            HostToDeviceExec ... child
 * </pre>
 *
 * Sort keys that are not columns of the child are computed by the pipeline as extra columns.
 */
final class TopKRule {
  /** The largest k the GPU keeps per task (the rows held on the device). */
  static final int MAX_LIMIT = 1 << 20;

  static final ExecRule<TakeOrderedAndProjectExec> RULE = new ExecRule<>(
      TakeOrderedAndProjectExec.class,
      "ORDER BY ... LIMIT k: each partition's first k rows; Spark merges the partitions' rows and"
          + " projects them",
      TopKRule::check, TopKRule::convert, List.of(TesseraTopKExec.class));

  private TopKRule() {}

  private static void check(TakeOrderedAndProjectExec node, PlanMeta meta,
      RewriteContext context) {
    if (node.sortOrder().size() > TopKSpec.MAX_KEYS) {
      meta.cannotRunOnGpu("ORDER BY has " + node.sortOrder().size() + " keys; the GPU top-k"
          + " takes at most " + TopKSpec.MAX_KEYS);
    }
    if (node.limit() > MAX_LIMIT) {
      meta.cannotRunOnGpu("LIMIT " + node.limit() + " is above the " + MAX_LIMIT
          + " rows the GPU top-k keeps per task");
    }
    meta.cannotRunOnGpu(context.blockersOf(columns(node), node.child()));
  }

  /** The child's columns, then the sort keys that are not among them. */
  private static List<Expression> columns(TakeOrderedAndProjectExec node) {
    List<Expression> columns = new ArrayList<>(CollectionConverters.asJava(node.child().output()));
    for (SortOrder order : CollectionConverters.asJava(node.sortOrder())) {
      columns.add(order.child());
    }
    return columns;
  }

  private static SparkPlan convert(TakeOrderedAndProjectExec node, Converter converter)
      throws Unsupported {
    if (node.limit() > MAX_LIMIT || node.limit() < 1) {
      throw new Unsupported("LIMIT " + node.limit() + " is outside the GPU top-k's 1 to "
          + MAX_LIMIT + " rows");
    }
    List<Attribute> inputs = CollectionConverters.asJava(node.child().output());
    List<NamedExpression> columns = new ArrayList<>(inputs);
    List<SortKey> keys = new ArrayList<>();
    for (SortOrder order : CollectionConverters.asJava(node.sortOrder())) {
      int column = indexOf(inputs, order.child());
      if (column < 0) {
        columns.add(GpuAggregation.alias(order.child(), "sort_key_" + keys.size(),
            NamedExpression$.MODULE$.newExprId()));
        column = columns.size() - 1;
      }
      keys.add(new SortKey(column, !order.isAscending(),
          order.nullOrdering() == NullsFirst$.MODULE$));
    }
    TesseraFusedExec fused = converter.fused(node.child(), PipelineStep.project(columns), null);
    List<Attribute> output = CollectionConverters.asJava(fused.output());
    List<ColumnType> types = new ArrayList<>(output.size());
    for (Attribute a : output) {
      types.add(SparkTypes.columnType(a.dataType()));
    }
    SparkPlan topK = new TesseraTopKExec(fused.child(), fused.builds(), fused.pipeline(),
        new TopKSpec(types, keys, node.limit()), output, orderString(node));
    return converter.onCpuByDesign(new TakeOrderedAndProjectExec(node.limit(), node.sortOrder(),
        node.projectList(), topK, node.offset()), "it merges the partitions' first "
        + node.limit() + " rows, found on the GPU, and projects the result (at most "
        + node.limit() + " rows per partition)");
  }

  /** The position of {@code e} among {@code inputs} when it is one of them, else -1. */
  private static int indexOf(List<Attribute> inputs, Expression e) {
    if (e instanceof Attribute a) {
      for (int i = 0; i < inputs.size(); i++) {
        if (inputs.get(i).exprId().equals(a.exprId())) {
          return i;
        }
      }
    }
    return -1;
  }

  private static String orderString(TakeOrderedAndProjectExec node) {
    return String.join(", ", CollectionConverters.asJava(node.sortOrder()).stream()
        .map(o -> ((Expression) o).sql()).toList());
  }
}
