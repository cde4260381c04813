package dev.tessera.spark.expr;

import static dev.tessera.spark.expr.SparkTypes.integerWidth;
import static dev.tessera.spark.expr.SparkTypes.isDouble;
import static dev.tessera.spark.expr.SparkTypes.isFloat;
import static dev.tessera.spark.expr.SparkTypes.isIntegral;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.spark.sql.catalyst.expressions.Abs;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.UnscaledValue;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryArithmetic;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Contains;
import org.apache.spark.sql.catalyst.expressions.DayOfMonth;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EndsWith;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.KnownFloatingPointNormalized;
import org.apache.spark.sql.catalyst.expressions.Length;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Month;
import org.apache.spark.sql.catalyst.expressions.Multiply;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.Pmod;
import org.apache.spark.sql.catalyst.expressions.Remainder;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.catalyst.expressions.Subtract;
import org.apache.spark.sql.catalyst.expressions.UnaryMinus;
import org.apache.spark.sql.catalyst.expressions.Year;
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Translates Catalyst expressions into instructions of an expression program
 * ({@link dev.tessera.gpu.expr.Opcode}), keeping Spark's semantics exactly, or says why an
 * expression cannot be translated. One compiler serves one program: it remembers which input
 * columns it loaded and which attributes earlier projections defined.
 */
public final class ExpressionCompiler {
  /** A compiled value: the register that holds it and its Spark type. */
  public record Value(int register, DataType type) {}

  /** IN lists longer than this stay on the CPU (the program grows with the list). */
  static final int MAX_IN_LIST = 64;

  private final ProgramBuilder program;
  private final List<Attribute> inputs;
  private final boolean ansi;
  private final Predicate<String> expressionEnabled;
  private final Map<ExprId, Value> bound = new HashMap<>();
  private final Map<Integer, Value> loadedColumns = new HashMap<>();
  private final List<Integer> usedInputs = new ArrayList<>();
  private List<ExpressionBlocker> blockers;

  /**
   * @param inputs the attributes of the input batch's columns, in column order
   * @param ansi Spark's ANSI mode for this query
   * @param expressionEnabled whether an expression class (simple name) may run on the GPU
   */
  public ExpressionCompiler(ProgramBuilder program, List<Attribute> inputs, boolean ansi,
      Predicate<String> expressionEnabled) {
    this.program = program;
    this.inputs = List.copyOf(inputs);
    this.ansi = ansi;
    this.expressionEnabled = expressionEnabled;
  }

  /** Makes {@code attribute} (defined by a projection) refer to {@code value}. */
  public void bind(ExprId attribute, Value value) {
    bound.put(attribute, value);
  }

  /** The input column ordinals the compiled expressions read, in first-use order. */
  public List<Integer> usedInputs() {
    return List.copyOf(usedInputs);
  }

  public ProgramBuilder program() {
    return program;
  }

  /**
   * Compiles {@code e}; throws {@link Unsupported} saying why it cannot run on the GPU. A compiler
   * that collects blockers ({@link #collectingBlockers}) records the reason instead, against the
   * innermost expression that has it, and goes on with a NULL in its place, so one pass finds
   * every blocker of an expression tree.
   */
  public Value compile(Expression e) throws Unsupported {
    if (blockers == null) {
      return translate(e);
    }
    try {
      return translate(e);
    } catch (Unsupported u) {
      blockers.add(new ExpressionBlocker(e, u.getMessage()));
      return new Value(program.loadNull(), e.dataType());
    }
  }

  private Value translate(Expression e) throws Unsupported {
    String name = e.getClass().getSimpleName();
    ExpressionRules.Rule<?> rule = ExpressionRules.of(e);
    if (rule == null) {
      throw new Unsupported("Tessera has no GPU version of the expression " + e.prettyName()
          + " (" + name + ")");
    }
    if (!e.deterministic()) {
      throw new Unsupported("the expression " + e.prettyName() + " is not deterministic");
    }
    if (!expressionEnabled.test(name)) {
      throw new Unsupported("the expression " + name + " is disabled by "
          + "spark.tessera.expression." + name + ".enabled");
    }
    SparkTypes.columnType(e.dataType()); // the result must be a device type
    return rule.compile(this, e);
  }

  /**
   * Makes this compiler record each expression that cannot run on the GPU in {@code into}
   * instead of throwing (the program it builds is then only good for finding blockers).
   */
  public ExpressionCompiler collectingBlockers(List<ExpressionBlocker> into) {
    this.blockers = into;
    return this;
  }

  /**
   * Every expression among {@code expressions} (Catalyst expressions, and their subexpressions)
   * that cannot run on the
   * GPU over {@code inputs}, with why; empty when all can.
   */
  public static List<ExpressionBlocker> blockersOf(List<?> expressions,
      List<Attribute> inputs, boolean ansi, Predicate<String> expressionEnabled) {
    List<ExpressionBlocker> blockers = new ArrayList<>();
    for (Object e : expressions) { // Expressions (a NamedExpression is one, though not to Java)
      ExpressionCompiler compiler = new ExpressionCompiler(new ProgramBuilder(ansi), inputs, ansi,
          expressionEnabled).collectingBlockers(blockers);
      try {
        compiler.compile((Expression) e);
      } catch (Unsupported cannotHappen) {
        throw new IllegalStateException(cannotHappen);
      }
    }
    return blockers;
  }

  boolean ansi() {
    return ansi;
  }

  Value ifThenElse(If i) throws Unsupported {
    Value p = compile(i.predicate());
    Value t = compile(i.trueValue());
    Value f = compile(i.falseValue());
    return new Value(program.emitNew(Opcode.SELECT, p.register(), t.register(), f.register()),
        i.dataType());
  }

  Value normalize(NormalizeNaNAndZero n) throws Unsupported {
    DataType t = n.child().dataType();
    Opcode op = isFloat(t) ? Opcode.NORMALIZE_F32 : isDouble(t) ? Opcode.NORMALIZE_F64 : null;
    if (op == null) {
      throw new Unsupported("normalizing " + t.sql() + " is not supported on the GPU");
    }
    return unary(op, n.child(), t);
  }

  Value length(Length l) throws Unsupported {
    if (!(l.child().dataType() instanceof StringType)) {
      throw new Unsupported("length of " + l.child().dataType().sql() + " is not supported");
    }
    return unary(Opcode.LENGTH, l.child(), l.dataType());
  }

  /** A boolean operator of two operands (AND, OR, string matches). */
  Value logic(Opcode op, Expression left, Expression right) throws Unsupported {
    return binary(op, left, right, BooleanType$.MODULE$);
  }

  /** A boolean operator of one operand (NOT, IS NULL, IS NOT NULL). */
  Value predicate(Opcode op, Expression child) throws Unsupported {
    return unary(op, child, BooleanType$.MODULE$);
  }

  // ---- leaves ------------------------------------------------------------------------------

  Value attribute(AttributeReference a) throws Unsupported {
    Value b = bound.get(a.exprId());
    if (b != null) {
      return b;
    }
    for (int i = 0; i < inputs.size(); i++) {
      if (inputs.get(i).exprId().equals(a.exprId())) {
        return loadInput(i);
      }
    }
    throw new Unsupported("attribute " + a.sql() + " is not an input of this operator");
  }

  /**
   * Loads input column {@code i} (once), making it the program's next input column. By ordinal,
   * not by attribute: an input may hold one attribute twice (Spark's aggregate of
   * {@code count(DISTINCT k) ... GROUP BY k} groups by k twice), and a program that must read
   * every column of a batch reads each of them.
   */
  Value loadInput(int i) throws Unsupported {
    Value loaded = loadedColumns.get(i);
    if (loaded == null) {
      DataType type = inputs.get(i).dataType();
      int column = program.addInput(SparkTypes.columnType(type));
      loaded = new Value(program.loadColumn(column), type);
      usedInputs.add(i);
      loadedColumns.put(i, loaded);
    }
    return loaded;
  }

  Value literal(Object value, DataType type) throws Unsupported {
    ColumnType t = SparkTypes.columnType(type);
    if (value == null) {
      return new Value(program.loadNull(), type);
    }
    if (t.id() == TypeId.STRING) {
      return new Value(program.loadString(((UTF8String) value).getBytes()), type);
    }
    long bits = switch (t.id()) {
      case BOOLEAN -> ((Boolean) value) ? 1 : 0;
      case FLOAT -> Float.floatToRawIntBits((Float) value) & 0xffffffffL;
      case DOUBLE -> Double.doubleToRawLongBits((Double) value);
      case DECIMAL -> ((Decimal) value).toUnscaledLong();
      default -> ((Number) value).longValue(); // integral, date (days), timestamp (micros)
    };
    return new Value(program.loadConstant(bits), type);
  }

  // ---- arithmetic --------------------------------------------------------------------------

  private void requireEvalMode(EvalModeHolder mode, String what) throws Unsupported {
    if (mode.value == EvalMode.TRY()) {
      throw new Unsupported(what + " in TRY mode (try_*) is not supported on the GPU");
    }
    boolean exprAnsi = mode.value == EvalMode.ANSI();
    if (exprAnsi != ansi) {
      throw new Unsupported(what + " was planned with spark.sql.ansi.enabled=" + exprAnsi
          + " but the query runs with " + ansi);
    }
  }

  /** A wrapper so the Scala enumeration value can be passed around with a name. */
  private record EvalModeHolder(scala.Enumeration.Value value) {}

  Value arithmetic(BinaryArithmetic b) throws Unsupported {
    String op = b.prettyName();
    requireEvalMode(new EvalModeHolder(b.evalMode()), op);
    DataType type = b.dataType();
    if (type instanceof DecimalType result) {
      return decimalArithmetic(b, result);
    }
    Value l = compile(b.left());
    Value r = compile(b.right());
    Opcode opcode;
    int c = 0;
    if (isIntegral(type)) {
      c = integerWidth(type);
      if (b instanceof Add) {
        opcode = Opcode.ADD_INT;
      } else if (b instanceof Subtract) {
        opcode = Opcode.SUB_INT;
      } else if (b instanceof Multiply) {
        opcode = Opcode.MUL_INT;
      } else if (b instanceof Remainder) {
        opcode = Opcode.REM_INT;
      } else if (b instanceof Pmod) {
        opcode = Opcode.PMOD_INT;
      } else {
        throw new Unsupported(op + " of " + type.sql() + " is not supported");
      }
    } else if (isFloat(type) || isDouble(type)) {
      boolean f = isFloat(type);
      if (b instanceof Add) {
        opcode = f ? Opcode.ADD_F32 : Opcode.ADD_F64;
      } else if (b instanceof Subtract) {
        opcode = f ? Opcode.SUB_F32 : Opcode.SUB_F64;
      } else if (b instanceof Multiply) {
        opcode = f ? Opcode.MUL_F32 : Opcode.MUL_F64;
      } else if (b instanceof Divide) {
        opcode = f ? Opcode.DIV_F32 : Opcode.DIV_F64;
      } else if (b instanceof Remainder) {
        opcode = f ? Opcode.REM_F32 : Opcode.REM_F64;
      } else {
        opcode = f ? Opcode.PMOD_F32 : Opcode.PMOD_F64;
      }
    } else {
      throw new Unsupported(op + " of " + type.sql() + " is not supported on the GPU");
    }
    return new Value(program.emitNew(opcode, l.register(), r.register(), c), type);
  }

  private Value decimalArithmetic(BinaryArithmetic b, DecimalType result) throws Unsupported {
    if (!(b instanceof Add || b instanceof Subtract || b instanceof Multiply)) {
      throw new Unsupported(b.prettyName() + " of decimals is not supported on the GPU"
          + " (its rounding is not implemented)");
    }
    if (!(b.left().dataType() instanceof DecimalType l)
        || !(b.right().dataType() instanceof DecimalType r)) {
      throw new Unsupported(b.prettyName() + " of mixed decimal and non-decimal operands");
    }
    if (result.precision() > ColumnType.MAX_DECIMAL_PRECISION) {
      throw new Unsupported(b.prettyName() + " of " + l.sql() + " and " + r.sql() + " gives "
          + result.sql() + ", more than " + ColumnType.MAX_DECIMAL_PRECISION + " digits");
    }
    Value left = compile(b.left());
    Value right = compile(b.right());
    if (b instanceof Multiply) {
      if (result.scale() != l.scale() + r.scale()) {
        throw new Unsupported("decimal multiply with a reduced result scale");
      }
      return new Value(program.emitNew(Opcode.MUL_DECIMAL, left.register(), right.register(),
          result.precision()), result);
    }
    if (result.scale() != Math.max(l.scale(), r.scale())) {
      throw new Unsupported("decimal " + b.prettyName() + " with a reduced result scale");
    }
    int a = rescale(left.register(), l.scale(), result.scale(), ColumnType.MAX_DECIMAL_PRECISION);
    int c = rescale(right.register(), r.scale(), result.scale(),
        ColumnType.MAX_DECIMAL_PRECISION);
    Opcode op = b instanceof Add ? Opcode.ADD_DECIMAL : Opcode.SUB_DECIMAL;
    return new Value(program.emitNew(op, a, c, result.precision()), result);
  }

  /** A register holding {@code register} rescaled (no-op when the scales match). */
  int rescale(int register, int from, int to, int precision) {
    if (from == to) {
      return register;
    }
    return program.emitNew(Opcode.RESCALE_DECIMAL, register, (from << 8) | to, precision);
  }

  Value negateOrAbs(Expression child, boolean failOnError, boolean negate)
      throws Unsupported {
    DataType type = child.dataType();
    if (failOnError != ansi && !(type instanceof DecimalType)) {
      throw new Unsupported((negate ? "negation" : "abs") + " planned with ANSI " + failOnError
          + " in a query running with spark.sql.ansi.enabled=" + ansi);
    }
    Value v = compile(child);
    Opcode op;
    int c = 0;
    if (isIntegral(type) || type instanceof DecimalType) {
      op = negate ? Opcode.NEG_INT : Opcode.ABS_INT;
      c = integerWidth(type);
    } else if (isFloat(type)) {
      op = negate ? Opcode.NEG_F32 : Opcode.ABS_F32;
    } else if (isDouble(type)) {
      op = negate ? Opcode.NEG_F64 : Opcode.ABS_F64;
    } else {
      throw new Unsupported((negate ? "negation" : "abs") + " of " + type.sql()
          + " is not supported on the GPU");
    }
    return new Value(program.emitNew(op, v.register(), 0, c), type);
  }

  // ---- comparisons and logic ---------------------------------------------------------------

  private static int comparisonKind(DataType t) throws Unsupported {
    ColumnType ct = SparkTypes.columnType(t);
    return switch (ct.id()) {
      case FLOAT -> 1;
      case DOUBLE -> 2;
      case STRING -> 3;
      default -> 0;
    };
  }

  private static final Opcode[] CMP_BY_KIND = {Opcode.CMP_INT, Opcode.CMP_F32, Opcode.CMP_F64,
      Opcode.CMP_STRING};

  Value comparison(BinaryComparison c) throws Unsupported {
    Comparison cmp;
    if (c instanceof EqualTo) {
      cmp = Comparison.EQ;
    } else if (c instanceof LessThan) {
      cmp = Comparison.LT;
    } else if (c instanceof LessThanOrEqual) {
      cmp = Comparison.LE;
    } else if (c instanceof GreaterThan) {
      cmp = Comparison.GT;
    } else if (c instanceof GreaterThanOrEqual) {
      cmp = Comparison.GE;
    } else {
      throw new Unsupported("comparison " + c.prettyName() + " is not supported on the GPU");
    }
    return compare(c.left(), c.right(), cmp);
  }

  private Value compare(Expression left, Expression right, Comparison cmp) throws Unsupported {
    requireSameType(left, right);
    Value l = compile(left);
    Value r = compile(right);
    return equalityOrOrder(l, r, cmp);
  }

  private Value equalityOrOrder(Value l, Value r, Comparison cmp) throws Unsupported {
    Opcode op = CMP_BY_KIND[comparisonKind(l.type())];
    return new Value(program.emitNew(op, l.register(), r.register(), cmp.code()),
        BooleanType$.MODULE$);
  }

  private static void requireSameType(Expression left, Expression right) throws Unsupported {
    if (!left.dataType().sameType(right.dataType())) {
      throw new Unsupported("comparison of " + left.dataType().sql() + " with "
          + right.dataType().sql());
    }
  }

  Value nullSafeEquality(EqualNullSafe c) throws Unsupported {
    requireSameType(c.left(), c.right());
    Value l = compile(c.left());
    Value r = compile(c.right());
    return new Value(program.emitNew(Opcode.EQ_NULL_SAFE, l.register(), r.register(),
        comparisonKind(l.type())), BooleanType$.MODULE$);
  }

  Value unary(Opcode op, Expression child, DataType type) throws Unsupported {
    Value v = compile(child);
    return new Value(program.emitNew(op, v.register(), 0, 0), type);
  }

  Value binary(Opcode op, Expression left, Expression right, DataType type)
      throws Unsupported {
    Value l = compile(left);
    Value r = compile(right);
    return new Value(program.emitNew(op, l.register(), r.register(), 0), type);
  }

  /** value IN (list): an OR of equalities has exactly Spark's NULL semantics for IN. */
  Value in(In in) throws Unsupported {
    List<Expression> list = CollectionConverters.asJava(in.list());
    if (list.size() > MAX_IN_LIST) {
      throw new Unsupported("IN with " + list.size() + " values (more than " + MAX_IN_LIST
          + ") is not supported on the GPU");
    }
    if (list.isEmpty()) {
      throw new Unsupported("IN with an empty list");
    }
    Value v = compile(in.value());
    List<Value> equalities = new ArrayList<>();
    for (Expression item : list) {
      requireSameType(in.value(), item);
      equalities.add(equalityOrOrder(v, compile(item), Comparison.EQ));
    }
    return orAll(equalities);
  }

  Value inSet(InSet in) throws Unsupported {
    DataType type = in.child().dataType();
    List<Object> values = new ArrayList<>(CollectionConverters.asJava(in.hset()));
    boolean hasNull = values.remove(null);
    Value v = compile(in.child());
    if (isIntegral(type) || SparkTypes.columnType(type).id() == TypeId.DATE
        || SparkTypes.columnType(type).id() == TypeId.TIMESTAMP) {
      long[] sorted = values.stream().mapToLong(x -> ((Number) x).longValue()).sorted().toArray();
      if (sorted.length > 0xffff) {
        throw new Unsupported("IN with " + sorted.length + " values is too large for the GPU");
      }
      int first = -1;
      for (long s : sorted) {
        int index = program.constant(s);
        first = first < 0 ? index : first;
      }
      if (sorted.length == 0) {
        first = 0;
      }
      int c = sorted.length | (hasNull ? 0x10000 : 0);
      return new Value(program.emitNew(Opcode.IN_SET_INT, v.register(), first, c),
          BooleanType$.MODULE$);
    }
    if (values.size() + (hasNull ? 1 : 0) > MAX_IN_LIST) {
      throw new Unsupported("IN with " + values.size() + " " + type.sql()
          + " values (more than " + MAX_IN_LIST + ") is not supported on the GPU");
    }
    List<Value> equalities = new ArrayList<>();
    for (Object item : values) {
      equalities.add(equalityOrOrder(v, literal(item, type), Comparison.EQ));
    }
    if (hasNull) {
      equalities.add(equalityOrOrder(v, literal(null, type), Comparison.EQ));
    }
    if (equalities.isEmpty()) {
      throw new Unsupported("IN with an empty set");
    }
    return orAll(equalities);
  }

  /** The three-valued OR of {@code values}, which has exactly IN's NULL semantics. */
  private Value orAll(List<Value> values) {
    int result = values.get(0).register();
    for (int i = 1; i < values.size(); i++) {
      result = program.emitNew(Opcode.OR, result, values.get(i).register(), 0);
    }
    return new Value(result, BooleanType$.MODULE$);
  }

  Value caseWhen(CaseWhen c) throws Unsupported {
    List<Tuple2<Expression, Expression>> branches = CollectionConverters.asJava(c.branches());
    Value otherwise = c.elseValue().isDefined() ? compile(c.elseValue().get())
        : literal(null, c.dataType());
    // Conditions are compiled first to last, as Spark evaluates them; the SELECT chain is built
    // from the last branch back so the first true condition wins.
    List<Value> conditions = new ArrayList<>();
    List<Value> results = new ArrayList<>();
    for (Tuple2<Expression, Expression> branch : branches) {
      conditions.add(compile(branch._1()));
      results.add(compile(branch._2()));
    }
    int result = otherwise.register();
    for (int i = branches.size() - 1; i >= 0; i--) {
      result = program.emitNew(Opcode.SELECT, conditions.get(i).register(),
          results.get(i).register(), result);
    }
    return new Value(result, c.dataType());
  }

  Value coalesce(Coalesce c) throws Unsupported {
    List<Expression> children = CollectionConverters.asJava(c.children());
    if (children.isEmpty()) {
      throw new Unsupported("coalesce of nothing");
    }
    List<Value> values = new ArrayList<>();
    for (Expression child : children) {
      values.add(compile(child));
    }
    int result = values.get(values.size() - 1).register();
    for (int i = values.size() - 2; i >= 0; i--) {
      result = program.emitNew(Opcode.COALESCE, values.get(i).register(), result, 0);
    }
    return new Value(result, c.dataType());
  }
}
