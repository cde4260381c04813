package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.spark.expr.SparkTypes;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.IntStream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnaryMinus;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.joins.HashedRelation$;
import org.apache.spark.sql.execution.joins.LongHashedRelation;
import org.apache.spark.sql.execution.joins.UnsafeHashedRelation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A broadcast relation's rows as host columns: every type, NULLs in every payload column,
 * repeated keys, empty strings, NaN and -0.0, boundaries; key columns read directly and computed
 * keys evaluated; from both of Spark's relation kinds. The columns' rows are compared, as a
 * multiset, with the values of the rows the relation was built from.
 */
class BuildSideColumnsTest {
  private static final List<DataType> SCHEMA = List.of(DataTypes.IntegerType,
      DataTypes.BooleanType, DataTypes.ByteType, DataTypes.ShortType, DataTypes.IntegerType,
      DataTypes.LongType, DataTypes.FloatType, DataTypes.DoubleType, DataTypes.DateType,
      DataTypes.TimestampType, DataTypes.createDecimalType(10, 2), DataTypes.StringType);
  private static final int ROWS = 300;
  private static final int STRING = 11;

  private static Object value(int column, int row) {
    if (column > 0 && row % 7 == column % 7) {
      return null;
    }
    int k = row % 97; // repeated keys
    return switch (column) {
      case 0 -> k - 40;
      case 1 -> row % 2 == 0;
      case 2 -> (byte) (row % 3 == 0 ? Byte.MIN_VALUE : row);
      case 3 -> (short) (row % 5 == 0 ? Short.MAX_VALUE : -row);
      case 4 -> row % 4 == 0 ? Integer.MIN_VALUE : row * 31;
      case 5 -> row % 6 == 0 ? Long.MAX_VALUE : -row * 1_000_000_007L;
      case 6 -> row % 3 == 0 ? Float.NaN : row % 3 == 1 ? -0.0f : row / 3f;
      case 7 -> row % 4 == 0 ? Double.NaN : row % 4 == 1 ? -0.0 : Double.MAX_VALUE / (row + 1);
      case 8 -> row - 150;
      case 9 -> row * 86_400_000_000L - 1;
      case 10 -> Decimal.apply(BigDecimal.valueOf(row * 12345L - 999_999L, 2));
      case 11 -> UTF8String.fromString(row % 5 == 0 ? "" : "naïve " + k);
      default -> throw new IllegalArgumentException();
    };
  }

  private static List<InternalRow> rows() {
    UnsafeProjection toUnsafe = UnsafeProjection.create(SCHEMA.toArray(new DataType[0]));
    List<InternalRow> rows = new ArrayList<>();
    for (int r = 0; r < ROWS; r++) {
      int row = r;
      Object[] values = IntStream.range(0, SCHEMA.size()).mapToObj(c -> value(c, row)).toArray();
      rows.add(toUnsafe.apply(new GenericInternalRow(values)).copy());
    }
    return rows;
  }

  private static HashedRelation relation(List<Expression> relationKeys) {
    return HashedRelation$.MODULE$.apply(CollectionConverters.asScala(rows().iterator()),
        CollectionConverters.asScala(relationKeys).toSeq(), 64, null, false, false, false);
  }

  @Test
  void aLongRelationsRowsBecomeColumnsOfEveryType() throws Exception {
    Expression key = new BoundReference(0, DataTypes.IntegerType, false);
    HashedRelation relation = relation(List.of(
        new Cast(key, DataTypes.LongType, scala.Option.empty(), EvalMode.LEGACY())));
    assertTrue(relation instanceof LongHashedRelation, relation.getClass().getName());
    checkAllColumns(relation, List.of(key), List.of(key));
  }

  @Test
  void anUnsafeRelationsRowsBecomeColumnsOfEveryType() throws Exception {
    List<Expression> keys = List.of(new BoundReference(0, DataTypes.IntegerType, false),
        new BoundReference(STRING, DataTypes.StringType, true));
    HashedRelation relation = relation(keys);
    assertTrue(relation instanceof UnsafeHashedRelation, relation.getClass().getName());
    checkAllColumns(relation, keys, keys);
  }

  @Test
  void aComputedKeyIsEvaluatedOnEachRow() throws Exception {
    Expression column = new BoundReference(0, DataTypes.IntegerType, false);
    Expression negated = new UnaryMinus(column, false);
    // A key of another type than its column's: evaluated too, not read as the column.
    Expression asLong = new Cast(column, DataTypes.LongType, scala.Option.empty(),
        EvalMode.LEGACY());
    HashedRelation relation = relation(List.of(asLong));
    checkAllColumns(relation, List.of(negated, asLong), List.of(negated, asLong));
  }

  /** Collects {@code keys} and every column as payload, and compares with the input rows. */
  private static void checkAllColumns(HashedRelation relation, List<Expression> keys,
      List<Expression> expectedKeys) throws Exception {
    int[] payload = IntStream.range(0, SCHEMA.size()).toArray();
    List<ColumnType> types = new ArrayList<>();
    for (Expression k : keys) {
      types.add(SparkTypes.columnType(k.dataType()));
    }
    for (DataType t : SCHEMA) {
      types.add(SparkTypes.columnType(t));
    }
    List<String> expected = new ArrayList<>();
    for (InternalRow row : rows()) {
      if (keys.stream().anyMatch(k -> k.eval(row) == null)) {
        continue; // Spark leaves rows with NULL keys out of the relation
      }
      List<Object> values = new ArrayList<>();
      for (Expression k : expectedKeys) {
        values.add(normalized(k.eval(row)));
      }
      for (int c = 0; c < SCHEMA.size(); c++) {
        values.add(row.isNullAt(c) ? null : normalized(row.get(c, SCHEMA.get(c))));
      }
      expected.add(values.toString());
    }
    List<String> actual = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        ColumnBatch<HostColumn> columns = BuildSideColumns.collect(relation.asReadOnlyCopy(),
            keys, payload, types, allocator)) {
      for (int r = 0; r < columns.rowCount(); r++) {
        List<Object> values = new ArrayList<>();
        for (HostColumn column : columns.columns()) {
          values.add(column.isNull(r) ? null : hostValue(column, r));
        }
        actual.add(values.toString());
      }
    }
    expected.sort(null);
    actual.sort(null);
    assertEquals(expected.size(), actual.size(), "rows");
    assertEquals(expected, actual);
  }

  /** A Spark value as the host column holds it: DATE days, decimals unscaled, text as String. */
  private static Object normalized(Object v) {
    if (v instanceof Decimal d) {
      return d.toUnscaledLong();
    } else if (v instanceof UTF8String s) {
      return s.toString();
    } else if (v instanceof Float f) {
      return Float.floatToRawIntBits(f);
    } else if (v instanceof Double d) {
      return Double.doubleToRawLongBits(d);
    }
    return Objects.requireNonNull(v);
  }

  private static Object hostValue(HostColumn column, int row) {
    return switch (column.type().id()) {
      case BOOLEAN -> column.getBoolean(row);
      case BYTE -> column.getByte(row);
      case SHORT -> column.getShort(row);
      case INT, DATE -> column.getInt(row);
      case LONG, TIMESTAMP -> column.getLong(row);
      case FLOAT -> Float.floatToRawIntBits(column.getFloat(row));
      case DOUBLE -> Double.doubleToRawLongBits(column.getDouble(row));
      case DECIMAL -> column.getDecimal(row).unscaledValue().longValueExact();
      case STRING -> column.getString(row);
    };
  }
}
