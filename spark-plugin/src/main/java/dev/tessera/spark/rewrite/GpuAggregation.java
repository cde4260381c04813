package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The GPU aggregation of one Spark aggregate node, as it is built: the input columns the fused
 * projection computes (the grouping keys, then each distinct function input, Alias'd), and the
 * GPU functions over them, each with an attribute for its result column.
 */
final class GpuAggregation {
  private final List<NamedExpression> keys;
  private final List<NamedExpression> columns = new ArrayList<>();
  private final List<ColumnType> types = new ArrayList<>();
  private final List<AggregateFunction> functions = new ArrayList<>();
  private final List<Attribute> results = new ArrayList<>();
  private Boolean sumAnsi;

  GpuAggregation(List<NamedExpression> keys) throws Unsupported {
    this.keys = List.copyOf(keys);
    for (NamedExpression key : keys) {
      columns.add(key);
      types.add(SparkTypes.columnType(((Expression) key).dataType()));
    }
  }

  /**
   * The result of a GPU function over {@code input} (null for COUNT_ROWS), as an attribute of
   * the GPU node's output.
   */
  Attribute function(Kind kind, Expression input, DataType resultType, boolean zeroWhenEmpty)
      throws Unsupported {
    int column = input == null ? -1 : column(input);
    functions.add(new AggregateFunction(kind, column, SparkTypes.columnType(resultType),
        zeroWhenEmpty));
    Attribute result = attribute(kind.name().toLowerCase() + "_" + results.size(), resultType,
        NamedExpression$.MODULE$.newExprId());
    results.add(result);
    return result;
  }

  /**
   * Records the ANSI mode of a long sum: the GPU raises on overflow for all of a node's sums or
   * for none.
   */
  void sumAnsi(boolean ansi) throws Unsupported {
    if (sumAnsi != null && sumAnsi != ansi) {
      throw new Unsupported("sums planned in different ANSI modes in one aggregate");
    }
    sumAnsi = ansi;
  }

  /**
   * Gives a function's result column the name and id of a Spark buffer attribute: a buffer value
   * that is exactly one GPU result needs no CPU projection.
   */
  void rename(Attribute result, Attribute as) {
    results.set(results.indexOf(result), as);
  }

  boolean isResult(Expression e) {
    return e instanceof Attribute a && results.contains(a);
  }

  /** What the fused projection computes: the keys, then the functions' inputs. */
  List<NamedExpression> columns() {
    return columns;
  }

  /** The GPU node's output: the keys' attributes, then one attribute per function. */
  List<Attribute> output() {
    List<Attribute> out = new ArrayList<>();
    for (NamedExpression key : keys) {
      out.add(key.toAttribute());
    }
    out.addAll(results);
    return out;
  }

  AggregateSpec spec(boolean queryAnsi) {
    return new AggregateSpec(types, keys.size(), functions, sumAnsi != null ? sumAnsi : queryAnsi);
  }

  /** The column of {@code e} among the inputs, the same column for semantically equal ones. */
  private int column(Expression e) throws Unsupported {
    for (int i = keys.size(); i < columns.size(); i++) {
      if (((Alias) columns.get(i)).child().semanticEquals(e)) {
        return i;
      }
    }
    types.add(SparkTypes.columnType(e.dataType()));
    columns.add(alias(e, "agg_input_" + (columns.size() - keys.size()),
        NamedExpression$.MODULE$.newExprId()));
    return columns.size() - 1;
  }

  static Alias alias(Expression e, String name, ExprId id) {
    return new Alias(e, name, id, emptySeq(), Option.empty(), emptySeq());
  }

  static AttributeReference attribute(String name, DataType type, ExprId id) {
    return new AttributeReference(name, type, true, Metadata.empty(), id, emptySeq());
  }

  private static <T> Seq<T> emptySeq() {
    return scala.collection.immutable.List$.MODULE$.empty();
  }
}
