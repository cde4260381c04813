package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.TesseraFilterProjectExec;
import dev.tessera.spark.exec.TesseraHashAggregateExec;
import dev.tessera.spark.expr.FilterProjectStep;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateMode;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Final$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Partial$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.aggregate.HashAggregateExec;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.StringType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * HashAggregateExec in Partial, Final or Complete mode with count, sum of integers, min and max
 * becomes a GPU aggregation:
 *
 * <pre>
 *   HashAggregateExec           (ProjectExec resultExpressions, Final/Complete only)
 *     child          ==>          DeviceToHostExec
 *                                   TesseraHashAggregateExec
 *                                     TesseraFilterProjectExec [keys, function inputs]
 *                                       HostToDeviceExec ... child
 * </pre>
 *
 * The filter/project below brings the grouping keys first and the function inputs after them;
 * it fuses with a GPU filter/project already below the aggregate. Partial output has exactly
 * Spark's aggregation buffer layout, so the Final step may run on either side of a shuffle.
 */
final class AggregateRewrite {
  private AggregateRewrite() {}

  static SparkPlan toGpu(HashAggregateExec agg, FilterProjectRewriter.Pass pass) {
    String name = "HashAggregateExec";
    if (!pass.conf.isExecEnabled(name)) {
      return pass.stayOnCpu(agg, name + " is disabled by " + TesseraConf.execEnabledKey(name));
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
    AggregateMode mode = aggregates.isEmpty() ? Complete$.MODULE$ : aggregates.get(0).mode();
    boolean merge = mode == Final$.MODULE$;
    if (mode != Partial$.MODULE$ && mode != Final$.MODULE$ && mode != Complete$.MODULE$) {
      throw new Unsupported("aggregation mode " + mode + " is not supported on the GPU");
    }
    List<NamedExpression> keys = CollectionConverters.asJava(agg.groupingExpressions());
    List<NamedExpression> columns = new ArrayList<>(keys);
    List<ColumnType> types = new ArrayList<>();
    for (NamedExpression key : keys) {
      ColumnType t = SparkTypes.columnType(((Expression) key).dataType());
      if (t.isString()) {
        throw new Unsupported("grouping by strings is not supported on the GPU yet");
      }
      types.add(t);
    }
    List<AggregateFunction> functions = new ArrayList<>();
    List<Attribute> functionOutputs = new ArrayList<>();
    boolean ansi = pass.ansi;
    for (AggregateExpression a : aggregates) {
      if (a.mode() != mode) {
        throw new Unsupported("aggregates in different modes in one node");
      }
      if (a.isDistinct() || a.filter().isDefined()) {
        throw new Unsupported("DISTINCT and FILTER aggregates are not supported on the GPU yet");
      }
      var f = a.aggregateFunction();
      // What the function reads: its input (Partial/Complete) or its buffer (Final).
      List<Expression> reads = merge
          ? new ArrayList<>(CollectionConverters.asJava(f.inputAggBufferAttributes()))
          : new ArrayList<>(CollectionConverters.asJava(f.children()));
      Kind kind;
      if (f instanceof Count) {
        if (reads.size() != 1) {
          throw new Unsupported("count of several columns is not supported on the GPU");
        }
        kind = merge ? Kind.SUM_INT
            : reads.get(0) instanceof Literal l && l.value() != null ? Kind.COUNT_ROWS : Kind.COUNT;
      } else if (f instanceof Sum sum) {
        if (!LongType$.MODULE$.equals(sum.dataType())) {
          throw new Unsupported("sum of " + sum.child().dataType().sql() + " is not supported on"
              + " the GPU (only sums of integers: a floating point sum depends on the order)");
        }
        if (sum.evalContext().evalMode() == EvalMode.TRY()) {
          throw new Unsupported("try_sum is not supported on the GPU");
        }
        ansi = sum.evalContext().evalMode() == EvalMode.ANSI();
        kind = Kind.SUM_INT;
      } else if (f instanceof Min || f instanceof Max) {
        if (f.dataType() instanceof StringType) {
          throw new Unsupported("min and max of strings are not supported on the GPU yet");
        }
        kind = f instanceof Min ? Kind.MIN : Kind.MAX;
      } else {
        throw new Unsupported("aggregate " + f.prettyName() + " is not supported on the GPU");
      }
      int input = -1;
      if (kind != Kind.COUNT_ROWS) {
        if (!(reads.get(0) instanceof NamedExpression named)) {
          throw new Unsupported("aggregate input " + reads.get(0).sql() + " is not a column"
              + " (computed inputs are not supported on the GPU yet)");
        }
        input = columns.size();
        columns.add(named);
        types.add(SparkTypes.columnType(reads.get(0).dataType()));
      }
      ColumnType result = SparkTypes.columnType(f.dataType());
      functions.add(new AggregateFunction(kind, input, result));
    }
    // Output: keys, then per function its buffer (Partial) or its result (Final, Complete).
    List<Attribute> output = new ArrayList<>();
    for (NamedExpression key : keys) {
      output.add(key.toAttribute());
    }
    if (mode == Partial$.MODULE$) {
      for (AggregateExpression a : aggregates) {
        // Spark names a partial aggregate's output after the functions' input buffer attributes.
        List<Attribute> buffer = CollectionConverters.asJava(
            a.aggregateFunction().inputAggBufferAttributes()).stream().map(x -> (Attribute) x)
            .toList();
        if (buffer.size() != 1) {
          throw new Unsupported("aggregate " + a.aggregateFunction().prettyName() + " has a"
              + " buffer of " + buffer.size() + " values");
        }
        output.addAll(buffer);
      }
      List<Attribute> expected = CollectionConverters.asJava(agg.output());
      if (!sameIds(output, expected)) {
        throw new Unsupported("a partial aggregate whose output is not its keys and buffers");
      }
    } else {
      output.addAll(CollectionConverters.asJava(agg.aggregateAttributes()));
    }
    TesseraFilterProjectExec inputs = pass.fused(agg.child(), FilterProjectStep.project(columns));
    AggregateSpec spec = new AggregateSpec(types, keys.size(), functions, ansi);
    SparkPlan gpu = new DeviceToHostExec(new TesseraHashAggregateExec(inputs, spec, output,
        agg.simpleString(8)));
    if (mode == Partial$.MODULE$) {
      return gpu;
    }
    return pass.stayOnCpu(new ProjectExec(agg.resultExpressions(), gpu),
        "the result expressions of a GPU aggregate run on the CPU, over one row per group");
  }

  private static boolean sameIds(List<Attribute> a, List<Attribute> b) {
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
