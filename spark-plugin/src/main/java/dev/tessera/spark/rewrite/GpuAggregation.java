package dev.tessera.spark.rewrite;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.exec.OrderDependentSum;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
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
  /** Helper sums the order checks read; they follow the functions and are not output. */
  private final List<AggregateFunction> helpers = new ArrayList<>();
  private final List<PendingCheck> checks = new ArrayList<>();
  private Boolean sumAnsi;

  /** An order check whose helper columns are numbered once every function is known. */
  private record PendingCheck(OrderDependentSum.Mode mode, int function, int helper,
      long maxMagnitude, Expression sparkAdd) {}

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
   * Marks the SUM whose result is {@code result} as order dependent in Spark ({@link
   * OrderDependentSum}): where its input's type bounds the values (BYTE, SHORT, INT) the row count
   * shows it exact; otherwise two helper sums, of the positive and of the negative values, do.
   *
   * @param sparkAdd for ANSI_LONG, Spark's addition of a running sum and a value (raising its
   *     own error), over bound references 0 and 1
   */
  void orderDependent(Attribute result, OrderDependentSum.Mode mode, Expression sparkAdd)
      throws Unsupported {
    int function = results.indexOf(result);
    // A function's input is never a key column (see column(e)).
    Expression value = ((Alias) columns.get(functions.get(function).input())).child();
    DataType type = value.dataType();
    long maxMagnitude = maxMagnitude(type);
    int helper = -1;
    if (maxMagnitude == 0) {
      helper = helpers.size();
      Literal zero = zero(type);
      helpers.add(new AggregateFunction(Kind.SUM,
          column(new If(new GreaterThan(value, zero), value, zero)), ColumnType.DOUBLE, true));
      helpers.add(new AggregateFunction(Kind.SUM,
          column(new If(new LessThan(value, zero), value, zero)), ColumnType.DOUBLE, true));
    }
    checks.add(new PendingCheck(mode, function, helper, maxMagnitude, sparkAdd));
  }

  /** 0 of a LONG or DOUBLE (the SUM inputs whose type does not bound them). */
  private static Literal zero(DataType type) throws Unsupported {
    if (type instanceof LongType) {
      return Literal$.MODULE$.apply(0L);
    } else if (type instanceof DoubleType) {
      return Literal$.MODULE$.apply(0.0);
    }
    throw new Unsupported("an order check of a sum of " + type.sql());
  }

  /** The largest magnitude of a value of an integral type; 0 when the type does not bound it. */
  private static long maxMagnitude(DataType type) {
    if (type instanceof ByteType) {
      return 1L << 7;
    } else if (type instanceof ShortType) {
      return 1L << 15;
    } else if (type instanceof IntegerType) {
      return 1L << 31;
    }
    return 0;
  }

  /** The order checks, with the columns of the GPU output they read. */
  List<OrderDependentSum> orderChecks() {
    List<OrderDependentSum> out = new ArrayList<>();
    int firstHelper = keys.size() + functions.size();
    for (PendingCheck c : checks) {
      AggregateFunction f = functions.get(c.function());
      out.add(new OrderDependentSum(c.mode(), keys.size() + c.function(), f.input(),
          c.helper() < 0 ? -1 : firstHelper + c.helper(),
          c.helper() < 0 ? -1 : firstHelper + c.helper() + 1, c.maxMagnitude(), c.sparkAdd()));
    }
    return out;
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

  /** The aggregation: the functions, then the order checks' helper sums. */
  AggregateSpec spec(boolean queryAnsi) {
    List<AggregateFunction> all = new ArrayList<>(functions);
    all.addAll(helpers);
    return new AggregateSpec(types, keys.size(), all, sumAnsi != null ? sumAnsi : queryAnsi);
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
