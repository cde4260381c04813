package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.spark.TesseraConf;
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
 * GPU aggregation fused with the filters, projections and join probes below it:
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
final class AggregateRule {
  static final ExecRule<HashAggregateExec> RULE = new ExecRule<>(HashAggregateExec.class,
      "GROUP BY and global aggregates: count, count(DISTINCT), sum and avg of integers and"
          + " decimals, min, max",
      AggregateRule::check, AggregateRule::convert, List.of(TesseraHashAggregateExec.class));

  private AggregateRule() {}

  /** Records every function, mode and expression of {@code agg} the GPU cannot compute. */
  private static void check(HashAggregateExec agg, PlanMeta meta, RewriteContext context)
      throws Unsupported {
    boolean results = false;
    boolean buffers = false;
    GpuAggregation gpu = new GpuAggregation(
        CollectionConverters.asJava(agg.groupingExpressions()));
    for (AggregateExpression a : CollectionConverters.asJava(agg.aggregateExpressions())) {
      boolean result = a.mode() == Final$.MODULE$ || a.mode() == Complete$.MODULE$;
      results |= result;
      buffers |= !result;
      if (a.filter().isDefined()) {
        meta.cannotRunOnGpu(FILTERED);
      }
      if (!(a.aggregateFunction() instanceof DeclarativeAggregate function)) {
        meta.cannotRunOnGpu(notDeclarative(a));
        continue;
      }
      boolean merge = a.mode() == PartialMerge$.MODULE$ || a.mode() == Final$.MODULE$;
      try {
        AggregateBuffers.of(function, merge, gpu, context.ansi(),
            context.conf().get(TesseraConf.INCOMPATIBLE_OPS));
      } catch (Unsupported e) {
        meta.cannotRunOnGpu(e.getMessage());
      }
    }
    if (results && buffers) {
      meta.cannotRunOnGpu(MIXED);
    }
    meta.cannotRunOnGpu(context.blockersOf(gpu.columns(), agg.child()));
  }

  private static final String FILTERED =
      "aggregates with FILTER (WHERE ...) are not supported on the GPU yet";
  private static final String MIXED = "an aggregate that outputs both buffers and results is not"
      + " supported on the GPU";

  private static String notDeclarative(AggregateExpression a) {
    return "the aggregate function " + a.aggregateFunction().prettyName()
        + " is not supported on the GPU";
  }

  private static SparkPlan convert(HashAggregateExec agg, Converter converter)
      throws Unsupported {
    RewriteContext context = converter.context();
    List<AggregateExpression> aggregates = CollectionConverters.asJava(agg.aggregateExpressions());
    boolean results = false;
    boolean buffers = false;
    for (AggregateExpression a : aggregates) {
      AggregateMode mode = a.mode();
      boolean result = mode == Final$.MODULE$ || mode == Complete$.MODULE$;
      results |= result;
      buffers |= !result;
      if (a.filter().isDefined()) {
        throw new Unsupported(FILTERED);
      }
    }
    if (results && buffers) {
      throw new Unsupported(MIXED);
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
        throw new Unsupported(notDeclarative(a));
      }
      boolean merge = a.mode() == PartialMerge$.MODULE$ || a.mode() == Final$.MODULE$;
      List<Expression> values = AggregateBuffers.of(function, merge, gpu, context.ansi(),
          context.conf().get(TesseraConf.INCOMPATIBLE_OPS));
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
        converter.fused(agg.child(), PipelineStep.project(gpu.columns()), null);
    AggregateSpec spec = gpu.spec(context.ansi());
    SparkPlan plan = new TesseraHashAggregateExec(fused.child(), fused.builds(),
        fused.pipeline(), spec, gpu.output(), gpu.orderChecks(), !results, agg.simpleString(8));
    if (projectBuffers) {
      plan = converter.onCpuByDesign(new ProjectExec(seq(bufferProjection), plan), "it computes"
          + " Spark's aggregation buffers from the GPU's helper aggregates, over one row per"
          + " group");
    }
    if (!results) {
      return plan;
    }
    plan = converter.onCpuByDesign(new ProjectExec(seq(evaluation), plan), "it computes the"
        + " aggregate functions' results from their buffers, over one row per group");
    return converter.onCpuByDesign(new ProjectExec(agg.resultExpressions(), plan), "it computes"
        + " the aggregate's result expressions, over one row per group");
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
