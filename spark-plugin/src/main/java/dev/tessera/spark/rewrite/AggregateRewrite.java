package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.TesseraFusedExec;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateMode;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.DeclarativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.Final$;
import org.apache.spark.sql.catalyst.expressions.aggregate.PartialMerge$;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.aggregate.HashAggregateExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A HashAggregateExec whose functions all have GPU buffers ({@link AggregateBuffers}) becomes a
 * GPU aggregation fused with the filters and projections below it:
 *
 * <pre>
 *   HashAggregateExec            ProjectExec resultExpressions            (Final/Complete)
 *     [FilterExec/ProjectExec]     ProjectExec evaluateExpressions          (Final/Complete)
 *       child          ==>           ProjectExec buffers from GPU helpers   (only if needed)
 *                                      DeviceToHostExec
 *                                        TesseraHashAggregateExec fused [filter, keys, inputs]
 *                                          HostToDeviceExec ... child
 * </pre>
 *
 * Every function has its own mode. Partial and PartialMerge functions (a node may mix them, as
 * Spark's DISTINCT plans do) output Spark's exact buffer layout, so the other side of a shuffle
 * may run on the CPU or the GPU. For Final and Complete the GPU outputs the merged buffers and
 * the CPU evaluates each function's result and the result expressions, over one row per group.
 */
final class AggregateRewrite {
  private static final String NAME = "HashAggregateExec";

  private AggregateRewrite() {}

  static SparkPlan toGpu(HashAggregateExec agg, FilterProjectRewriter.Pass pass) {
    if (!pass.conf.isExecEnabled(NAME)) {
      return pass.stayOnCpu(agg, NAME + " is disabled by " + TesseraConf.execEnabledKey(NAME));
    }
    try {
      return plan(agg, pass);
    } catch (Unsupported e) {
      return pass.stayOnCpu(agg, e.getMessage());
    }
  }

  private static SparkPlan plan(HashAggregateExec agg, FilterProjectRewriter.Pass pass)
      throws Unsupported {
    List<AggregateExpression> aggregates = CollectionConverters.asJava(agg.aggregateExpressions());
    boolean results = false;
    boolean buffers = false;
    for (AggregateExpression a : aggregates) {
      AggregateMode mode = a.mode();
      boolean result = mode == Final$.MODULE$ || mode == Complete$.MODULE$;
      results |= result;
      buffers |= !result;
      if (a.filter().isDefined()) {
        throw new Unsupported("aggregates with FILTER are not supported on the GPU yet");
      }
    }
    if (results && buffers) {
      throw new Unsupported("an aggregate that outputs both buffers and results");
    }
    List<NamedExpression> keys = CollectionConverters.asJava(agg.groupingExpressions());
    List<Attribute> keyAttributes = keys.stream().map(NamedExpression::toAttribute).toList();
    GpuAggregation gpu = new GpuAggregation(keys);
    // Spark's buffers, named as the next step reads them: the input buffer attributes of the
    // node above (Partial, PartialMerge) or the attributes evaluateExpression reads.
    List<NamedExpression> bufferProjection = new ArrayList<>(keyAttributes);
    List<NamedExpression> evaluation = new ArrayList<>(keyAttributes);
    List<Attribute> aggregateAttributes = CollectionConverters.asJava(agg.aggregateAttributes());
    boolean projectBuffers = false;
    for (int i = 0; i < aggregates.size(); i++) {
      AggregateExpression a = aggregates.get(i);
      // DISTINCT needs nothing here: Spark plans the distinct values as grouping keys below.
      if (!(a.aggregateFunction() instanceof DeclarativeAggregate function)) {
        throw new Unsupported("aggregate " + a.aggregateFunction().prettyName()
            + " is not supported on the GPU");
      }
      boolean merge = a.mode() == PartialMerge$.MODULE$ || a.mode() == Final$.MODULE$;
      List<Expression> values = AggregateBuffers.of(function, merge, gpu, pass.ansi,
          pass.conf.get(TesseraConf.INCOMPATIBLE_OPS));
      List<Attribute> names = new ArrayList<>();
      if (results) {
        names.addAll(CollectionConverters.asJava(function.aggBufferAttributes()));
      } else {
        names.addAll(CollectionConverters.asJava(function.inputAggBufferAttributes()));
      }
      for (int b = 0; b < values.size(); b++) {
        Attribute name = names.get(b);
        if (gpu.isResult(values.get(b))) {
          gpu.rename((Attribute) values.get(b), name);
          bufferProjection.add(name);
        } else {
          bufferProjection.add(GpuAggregation.alias(values.get(b), name.name(), name.exprId()));
          projectBuffers = true;
        }
      }
      if (results) {
        Attribute result = aggregateAttributes.get(i);
        evaluation.add(GpuAggregation.alias(function.evaluateExpression(), result.name(),
            result.exprId()));
      }
    }
    if (!results && !sameIds(bufferProjection, CollectionConverters.asJava(agg.output()))) {
      throw new Unsupported("a partial aggregate whose output is not its keys and buffers");
    }
    TesseraFusedExec fused =
        pass.fused(agg.child(), PipelineStep.project(gpu.columns()), null);
    AggregateSpec spec = gpu.spec(pass.ansi);
    SparkPlan plan = new DeviceToHostExec(new TesseraHashAggregateExec(fused.child(),
        fused.builds(), fused.pipeline(), spec, gpu.output(), gpu.orderChecks(), !results,
        agg.simpleString(8)));
    if (projectBuffers) {
      plan = pass.stayOnCpu(new ProjectExec(seq(bufferProjection), plan), "Spark's aggregation"
          + " buffers from the GPU's helper aggregates, over one row per group");
    }
    if (!results) {
      return plan;
    }
    plan = pass.stayOnCpu(new ProjectExec(seq(evaluation), plan),
        "the aggregate functions' results from their buffers, over one row per group");
    return pass.stayOnCpu(new ProjectExec(agg.resultExpressions(), plan),
        "the result expressions of a GPU aggregate run on the CPU, over one row per group");
  }

  private static scala.collection.immutable.Seq<NamedExpression> seq(List<NamedExpression> l) {
    return CollectionConverters.asScala(l).toList();
  }

  private static boolean sameIds(List<NamedExpression> a, List<Attribute> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.get(i).exprId().equals(b.get(i).exprId())) {
        return false;
      }
    }
    return true;
  }
}
