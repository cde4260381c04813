package dev.tessera.spark.expr;

import static dev.tessera.spark.expr.SparkTypes.integerWidth;
import static dev.tessera.spark.expr.SparkTypes.isDouble;
import static dev.tessera.spark.expr.SparkTypes.isFloat;
import static dev.tessera.spark.expr.SparkTypes.isIntegral;

import dev.tessera.gpu.expr.Opcode;
import dev.tessera.spark.expr.ExpressionCompiler.Value;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;

/**
 * Casts among the numeric types and booleans, with Spark's legacy and ANSI results. Casts that
 * Spark computes through BigDecimal or string formatting (double to decimal, decimal to float,
 * anything with strings, dates or timestamps) stay on the CPU.
 */
final class Casts {
  /** Doubles hold integers up to 2^53 exactly, so a decimal of at most 15 digits converts exactly. */
  static final int MAX_EXACT_DECIMAL_TO_DOUBLE_PRECISION = 15;

  private Casts() {}

  static Value compile(ExpressionCompiler compiler, Cast cast, boolean ansi) throws Unsupported {
    DataType from = cast.child().dataType();
    DataType to = cast.dataType();
    String what = "cast from " + from.sql() + " to " + to.sql();
    if (cast.evalMode() == EvalMode.TRY()) {
      throw new Unsupported("try_cast (" + what + ") is not supported on the GPU");
    }
    if ((cast.evalMode() == EvalMode.ANSI()) != ansi) {
      throw new Unsupported(what + " was planned in another ANSI mode than the query runs in");
    }
    SparkTypes.columnType(from);
    SparkTypes.columnType(to);
    if (from.sameType(to)) {
      return new Value(compiler.compile(cast.child()).register(), to);
    }
    boolean fromBool = from == BooleanType$.MODULE$;
    boolean toBool = to == BooleanType$.MODULE$;
    boolean fromInt = isIntegral(from) || fromBool;
    boolean fromFraction = isFloat(from) || isDouble(from);
    if (!(fromInt || fromFraction || from instanceof DecimalType)) {
      throw new Unsupported(what + " is not supported on the GPU");
    }
    Value v = compiler.compile(cast.child());
    int r = v.register();
    var program = compiler.program();
    int result;
    if (toBool) {
      Opcode op = isFloat(from) ? Opcode.CAST_F32_TO_BOOL
          : isDouble(from) ? Opcode.CAST_F64_TO_BOOL : Opcode.CAST_INT_TO_BOOL;
      result = program.emitNew(op, r, 0, 0);
    } else if (isIntegral(to)) {
      int width = integerWidth(to);
      if (fromInt) {
        result = integerWidth(from) <= width || fromBool ? r
            : program.emitNew(Opcode.CAST_INT_TO_INT, r, 0, width);
      } else if (fromFraction) {
        result = program.emitNew(isFloat(from) ? Opcode.CAST_F32_TO_INT : Opcode.CAST_F64_TO_INT,
            r, 0, width);
      } else {
        result = program.emitNew(Opcode.CAST_DECIMAL_TO_INT, r, ((DecimalType) from).scale(),
            width);
      }
    } else if (isFloat(to) || isDouble(to)) {
      boolean f = isFloat(to);
      if (fromInt) {
        result = program.emitNew(f ? Opcode.CAST_INT_TO_F32 : Opcode.CAST_INT_TO_F64, r, 0, 0);
      } else if (fromFraction) {
        result = program.emitNew(f ? Opcode.CAST_F64_TO_F32 : Opcode.CAST_F32_TO_F64, r, 0, 0);
      } else {
        DecimalType d = (DecimalType) from;
        if (f || d.precision() > MAX_EXACT_DECIMAL_TO_DOUBLE_PRECISION) {
          throw new Unsupported(what + " is not supported on the GPU (Spark rounds it through"
              + " BigDecimal; only decimals of up to " + MAX_EXACT_DECIMAL_TO_DOUBLE_PRECISION
              + " digits convert to double exactly on the GPU)");
        }
        result = program.emitNew(Opcode.CAST_DECIMAL_TO_F64, r, d.scale(), 0);
      }
    } else if (to instanceof DecimalType d) {
      if (fromInt) {
        result = program.emitNew(Opcode.CAST_INT_TO_DECIMAL, r, d.scale(), d.precision());
      } else if (from instanceof DecimalType fd) {
        result = program.emitNew(Opcode.RESCALE_DECIMAL, r, (fd.scale() << 8) | d.scale(),
            d.precision());
      } else {
        throw new Unsupported(what + " is not supported on the GPU (Spark rounds it through"
            + " BigDecimal)");
      }
    } else {
      throw new Unsupported(what + " is not supported on the GPU");
    }
    return new Value(result, to);
  }
}
