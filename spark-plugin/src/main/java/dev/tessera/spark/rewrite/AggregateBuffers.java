package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.OrderDependentSum;
import dev.tessera.spark.expr.Unsupported;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.DeclarativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType$;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.StringType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's aggregation buffers (Sum.scala, Average.scala, Count.scala, Min/Max.scala) from GPU
 * functions. For each Spark function this gives the expressions, over the GPU node's result
 * columns, whose values are exactly the buffer Spark would hold after its update (Partial,
 * Complete: from the function's input rows) or merge (PartialMerge, Final: from buffer rows)
 * steps, starting from the initial values. The GPU computes what is a plain aggregate; the rest
 * (a flag to NULL, isEmpty = count == 0) is a CPU projection over one row per group.
 */
final class AggregateBuffers {
  private AggregateBuffers() {}

  /**
   * The buffer values of {@code function}, in the order of its aggBufferAttributes.
   *
   * @param merge whether the rows are buffers (PartialMerge, Final) rather than inputs
   * @param ansi the query's ANSI mode (for casts the fused projection evaluates)
   * @param incompatibleOps whether operations with a known difference from Spark may run
   *     ({@link TesseraConf#INCOMPATIBLE_OPS})
   */
  static List<Expression> of(DeclarativeAggregate function, boolean merge, GpuAggregation gpu,
      boolean ansi, boolean incompatibleOps) throws Unsupported {
    List<Expression> reads = merge
        ? List.copyOf(CollectionConverters.asJava(function.inputAggBufferAttributes()))
        : List.copyOf(CollectionConverters.asJava(function.children()));
    if (function instanceof Count) {
      return count(reads, merge, gpu);
    } else if (function instanceof Sum sum) {
      if (sum.evalContext().evalMode() == EvalMode.TRY()) {
        throw new Unsupported("try_sum is not supported on the GPU");
      }
      return sum(sum, reads, merge, gpu);
    } else if (function instanceof Average avg) {
      if (avg.evalMode() == EvalMode.TRY()) {
        throw new Unsupported("try_avg is not supported on the GPU");
      }
      return average(avg, reads, merge, gpu, ansi);
    } else if (function instanceof Min || function instanceof Max) {
      if (function.dataType() instanceof StringType) {
        throw new Unsupported("min and max of strings are not supported on the GPU yet");
      }
      boolean floating = function.dataType() instanceof FloatType
          || function.dataType() instanceof DoubleType;
      if (floating && !incompatibleOps) {
        throw new Unsupported(function.prettyName() + " of " + function.dataType().sql()
            + " stays on the CPU: where a group holds both -0.0 and 0.0, Spark returns whichever"
            + " it met first and the GPU may return the other; set "
            + TesseraConf.INCOMPATIBLE_OPS.key() + "=true to run it on the GPU anyway");
      }
      Kind kind = function instanceof Min ? Kind.MIN : Kind.MAX;
      return List.of(gpu.function(kind, reads.get(0), function.dataType(), false));
    }
    throw new Unsupported("aggregate " + function.prettyName() + " is not supported on the GPU");
  }

  /** count: buffer [count]; merged as a sum of counts, 0 for an empty global aggregate. */
  private static List<Expression> count(List<Expression> reads, boolean merge,
      GpuAggregation gpu) throws Unsupported {
    if (merge) {
      return List.of(gpu.function(Kind.SUM, reads.get(0), LongType$.MODULE$, true));
    }
    if (reads.size() != 1) {
      throw new Unsupported("count of several columns is not supported on the GPU");
    }
    Expression child = reads.get(0);
    if (!child.nullable()) {
      return List.of(gpu.function(Kind.COUNT_ROWS, null, LongType$.MODULE$, false));
    }
    // The GPU counts fixed-width values; a string's nullness is all count needs.
    Expression counted = child.dataType() instanceof StringType
        ? new If(new IsNull(child), Literal$.MODULE$.create(null, BooleanType$.MODULE$),
            Literal$.MODULE$.apply(true))
        : child;
    return List.of(gpu.function(Kind.COUNT, counted, LongType$.MODULE$, false));
  }

  private static List<Expression> sum(Sum sum, List<Expression> reads, boolean merge,
      GpuAggregation gpu) throws Unsupported {
    DataType in = sum.child().dataType();
    DataType result = sum.dataType();
    if (in instanceof IntegralType) {
      // Buffer [sum], NULL until a non-null input: the same for update and merge.
      boolean ansi = sum.evalContext().evalMode() == EvalMode.ANSI();
      gpu.sumAnsi(ansi);
      Attribute s = gpu.function(Kind.SUM, reads.get(0), LongType$.MODULE$, false);
      if (ansi) {
        // Spark raises when a running sum overflows, with its Add's own error.
        gpu.orderDependent(s, OrderDependentSum.Mode.ANSI_LONG, new Add(
            new BoundReference(0, LongType$.MODULE$, false),
            new BoundReference(1, LongType$.MODULE$, false), sum.evalContext()));
      }
      return List.of(s);
    }
    if (!(in instanceof DecimalType)) {
      throw new Unsupported("sum of " + in.sql() + " is not supported on the GPU: a floating"
          + " point sum depends on the order of the rows");
    }
    requireDecimalOnDevice((DecimalType) result, "sum");
    // Buffer [sum (0 initially, NULL = overflowed), isEmpty].
    if (!merge) {
      Attribute s = gpu.function(Kind.SUM_DECIMAL, reads.get(0), result, true);
      Attribute n = gpu.function(Kind.COUNT, reads.get(0), LongType$.MODULE$, false);
      return List.of(s, new EqualTo(n, Literal$.MODULE$.apply(0L)));
    }
    Expression partialSum = reads.get(0);
    Expression partialEmpty = reads.get(1);
    Attribute s = gpu.function(Kind.SUM_DECIMAL, partialSum, result, true);
    Attribute overflowed = gpu.function(Kind.MAX,
        new And(new IsNull(partialSum), new Not(partialEmpty)), BooleanType$.MODULE$, false);
    Attribute allEmpty = gpu.function(Kind.MIN, partialEmpty, BooleanType$.MODULE$, false);
    return List.of(nullIf(overflowed, s, result), coalesce(allEmpty, true));
  }

  private static List<Expression> average(Average avg, List<Expression> reads, boolean merge,
      GpuAggregation gpu, boolean ansi) throws Unsupported {
    DataType in = avg.child().dataType();
    DataType sumType = avg.sumDataType();
    if (!(in instanceof IntegralType) && !(in instanceof DecimalType)) {
      throw new Unsupported("avg of " + in.sql() + " is not supported on the GPU: a floating"
          + " point sum depends on the order of the rows");
    }
    // Buffer [sum (0 initially), count]. Integral inputs sum as doubles, which hold whole
    // numbers, so the GPU's exact sum rounded once is what Spark's double additions give while
    // every running sum stays within 2^53; beyond, the order of the rows decides (checked).
    if (!merge) {
      Expression child = reads.get(0);
      Attribute n = gpu.function(Kind.COUNT, child, LongType$.MODULE$, false);
      if (in instanceof IntegralType) {
        Expression asDouble = new Cast(child, DoubleType$.MODULE$, scala.Option.empty(),
            ansi ? EvalMode.ANSI() : EvalMode.LEGACY());
        Attribute s = gpu.function(Kind.SUM, asDouble, sumType, true);
        gpu.orderDependent(s, OrderDependentSum.Mode.DOUBLE, null);
        return List.of(s, n);
      }
      requireDecimalOnDevice((DecimalType) sumType, "avg");
      return List.of(gpu.function(Kind.SUM_DECIMAL, child, sumType, true), n);
    }
    Expression partialSum = reads.get(0);
    Attribute n = gpu.function(Kind.SUM, reads.get(1), LongType$.MODULE$, true);
    if (in instanceof IntegralType) {
      Attribute s = gpu.function(Kind.SUM, partialSum, sumType, true);
      gpu.orderDependent(s, OrderDependentSum.Mode.DOUBLE, null);
      return List.of(s, n);
    }
    requireDecimalOnDevice((DecimalType) sumType, "avg");
    // Spark adds decimal buffers without skipping NULLs: one overflowed partial sum makes the
    // merged sum NULL.
    Attribute s = gpu.function(Kind.SUM_DECIMAL, partialSum, sumType, true);
    Attribute overflowed = gpu.function(Kind.MAX, new IsNull(partialSum), BooleanType$.MODULE$,
        false);
    return List.of(nullIf(overflowed, s, sumType), n);
  }

  private static void requireDecimalOnDevice(DecimalType buffer, String what)
      throws Unsupported {
    if (buffer.precision() > ColumnType.MAX_DECIMAL_PRECISION) {
      throw new Unsupported(what + " with a buffer of " + buffer.sql() + " is not supported on"
          + " the GPU (decimals of at most " + ColumnType.MAX_DECIMAL_PRECISION + " digits)");
    }
  }

  /** NULL where the flag is true, else {@code value}. */
  private static Expression nullIf(Expression flag, Expression value, DataType type) {
    return new If(coalesce(flag, false), Literal$.MODULE$.create(null, type), value);
  }

  private static Expression coalesce(Expression e, boolean otherwise) {
    return new Coalesce(CollectionConverters.asScala(
        List.<Expression>of(e, Literal$.MODULE$.apply(otherwise))).toList());
  }
}
