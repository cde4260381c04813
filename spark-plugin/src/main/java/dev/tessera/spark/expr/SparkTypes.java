package dev.tessera.spark.expr;

import dev.tessera.gpu.column.ColumnType;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.ByteType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType$;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType$;
import org.apache.spark.sql.types.FloatType$;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.ShortType$;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType$;
import org.apache.spark.sql.types.TimestampType$;

/** Spark SQL types and the device column types that hold them. */
public final class SparkTypes {
  private SparkTypes() {}

  /** The device type for {@code type}, or why there is none. */
  public static ColumnType columnType(DataType type) throws Unsupported {
    if (type == BooleanType$.MODULE$) {
      return ColumnType.BOOLEAN;
    } else if (type == ByteType$.MODULE$) {
      return ColumnType.BYTE;
    } else if (type == ShortType$.MODULE$) {
      return ColumnType.SHORT;
    } else if (type == IntegerType$.MODULE$) {
      return ColumnType.INT;
    } else if (type == LongType$.MODULE$) {
      return ColumnType.LONG;
    } else if (type == FloatType$.MODULE$) {
      return ColumnType.FLOAT;
    } else if (type == DoubleType$.MODULE$) {
      return ColumnType.DOUBLE;
    } else if (type == DateType$.MODULE$) {
      return ColumnType.DATE;
    } else if (type == TimestampType$.MODULE$ || type == TimestampNTZType$.MODULE$) {
      return ColumnType.TIMESTAMP;
    } else if (type instanceof DecimalType d) {
      if (d.precision() > ColumnType.MAX_DECIMAL_PRECISION) {
        throw new Unsupported("type " + type.sql() + " has more than "
            + ColumnType.MAX_DECIMAL_PRECISION + " digits");
      }
      return ColumnType.decimal(d.precision(), d.scale());
    } else if (type instanceof StringType s) {
      if (!s.supportsBinaryEquality() || s.collationId() != 0) {
        throw new Unsupported("type " + type.sql() + " has a collation other than UTF8_BINARY");
      }
      return ColumnType.STRING;
    }
    throw new Unsupported("type " + type.sql() + " is not supported on the GPU");
  }

  /** The width in bits of an integral type's values (booleans count as 8). */
  static int integerWidth(DataType type) {
    if (type == LongType$.MODULE$ || type == TimestampType$.MODULE$
        || type == TimestampNTZType$.MODULE$ || type instanceof DecimalType) {
      return 64;
    } else if (type == IntegerType$.MODULE$ || type == DateType$.MODULE$) {
      return 32;
    } else if (type == ShortType$.MODULE$) {
      return 16;
    }
    return 8;
  }

  static boolean isIntegral(DataType t) {
    return t == ByteType$.MODULE$ || t == ShortType$.MODULE$ || t == IntegerType$.MODULE$
        || t == LongType$.MODULE$;
  }

  static boolean isFloat(DataType t) {
    return t == FloatType$.MODULE$;
  }

  static boolean isDouble(DataType t) {
    return t == DoubleType$.MODULE$;
  }
}
