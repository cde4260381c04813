package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.joins.UnsafeHashedRelation;
import org.apache.spark.sql.execution.joins.ValueRowWithKeyIndex;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.Iterator;

/**
 * The build side of a broadcast join as host columns: the rows of Spark's broadcast
 * {@link HashedRelation}, with the join keys evaluated (keys first, then the payload columns),
 * as {@link dev.tessera.gpu.join.HashJoinKernel#build} takes them. Rows with NULL keys are not
 * in the relation (Spark drops them: no join Tessera runs outputs an unmatched build row).
 */
final class BuildSideColumns {
  private BuildSideColumns() {}

  /**
   * @param keys the build keys, bound to the build side's output
   * @param payload the build side's output columns to carry, by ordinal
   * @param types the device types of the keys, then of the payload columns
   */
  static ColumnBatch<HostColumn> collect(HashedRelation relation, List<Expression> keys,
      int[] payload, List<ColumnType> types, BufferAllocator allocator) {
    List<HostColumnBuilder> builders = new ArrayList<>(types.size());
    try {
      for (ColumnType t : types) {
        builders.add(new HostColumnBuilder(t, 1024, allocator));
      }
      ColumnCopy[] copies = new ColumnCopy[types.size()];
      for (int k = 0; k < keys.size(); k++) {
        copies[k] = keyCopy(keys.get(k), types.get(k));
      }
      for (int p = 0; p < payload.length; p++) {
        copies[keys.size() + p] = columnCopy(payload[p], types.get(keys.size() + p));
      }
      int rows = 0;
      Iterator<InternalRow> all = everyRow(relation);
      while (all.hasNext()) {
        InternalRow row = all.next();
        for (int c = 0; c < copies.length; c++) {
          copies[c].append(row, builders.get(c));
        }
        rows++;
      }
      List<HostColumn> columns = new ArrayList<>(builders.size());
      try {
        for (HostColumnBuilder b : builders) {
          columns.add(b.build());
        }
      } catch (RuntimeException e) {
        columns.forEach(HostColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, rows);
    } finally {
      builders.forEach(HostColumnBuilder::close);
    }
  }

  /**
   * Every row of the relation, once. {@code keys()} cannot be the walk for both kinds of relation:
   * {@link UnsafeHashedRelation}'s iterates its map's records, so a key held by n rows comes n
   * times (and {@code get} of it returns the n rows each time), while {@code LongHashedRelation}'s
   * yields each distinct key once. The general relation walks its records directly instead.
   */
  private static Iterator<InternalRow> everyRow(HashedRelation relation) {
    if (relation instanceof UnsafeHashedRelation unsafe) {
      return unsafe.valuesWithKeyIndex().map(ValueRowWithKeyIndex::getValue);
    }
    return relation.keys().flatMap(key -> {
      Iterator<InternalRow> values = relation.get(key);
      return values == null ? scala.collection.Iterator$.MODULE$.empty() : values;
    });
  }

  /** Appends one column of a build row to that column's builder. */
  @FunctionalInterface
  private interface ColumnCopy {
    void append(InternalRow row, HostColumnBuilder out);
  }

  /**
   * A key's copy: a key that is a build column of the key's own type is read as a payload column
   * is; any other expression is evaluated on each row.
   */
  private static ColumnCopy keyCopy(Expression key, ColumnType type) {
    if (key instanceof BoundReference ref && type.equals(columnTypeOf(ref))) {
      return columnCopy(ref.ordinal(), type);
    }
    return (row, out) -> append(key.eval(row), out);
  }

  private static ColumnType columnTypeOf(BoundReference ref) {
    try {
      return SparkTypes.columnType(ref.dataType());
    } catch (Unsupported e) {
      return null;
    }
  }

  /**
   * Copies build column {@code ordinal} of {@code type} value by value, without boxing, a
   * string's bytes straight from the row into the builder's buffer: a broadcast's rows are
   * copied once per executor before any of the query's tasks can start (BuildSideBench: a STRING
   * payload 55 -> 36 ns a row).
   */
  private static ColumnCopy columnCopy(int ordinal, ColumnType type) {
    ColumnCopy valid = switch (type.id()) {
      case BOOLEAN -> (row, out) -> out.appendBoolean(row.getBoolean(ordinal));
      case BYTE -> (row, out) -> out.appendByte(row.getByte(ordinal));
      case SHORT -> (row, out) -> out.appendShort(row.getShort(ordinal));
      case INT, DATE -> (row, out) -> out.appendInt(row.getInt(ordinal));
      case LONG, TIMESTAMP -> (row, out) -> out.appendLong(row.getLong(ordinal));
      case FLOAT -> (row, out) -> out.appendFloat(row.getFloat(ordinal));
      case DOUBLE -> (row, out) -> out.appendDouble(row.getDouble(ordinal));
      case DECIMAL -> (row, out) -> out.appendLong(
          row.getDecimal(ordinal, type.precision(), type.scale()).toUnscaledLong());
      case STRING -> (row, out) -> {
        UTF8String s = row.getUTF8String(ordinal);
        s.writeToMemory(null, out.appendUtf8Row(s.numBytes()));
      };
    };
    return (row, out) -> {
      if (row.isNullAt(ordinal)) {
        out.appendNull();
      } else {
        valid.append(row, out);
      }
    };
  }

  /** Appends a value as Spark's internal rows hold it (null = SQL NULL). */
  private static void append(Object v, HostColumnBuilder out) {
    if (v == null) {
      out.appendNull();
      return;
    }
    switch (out.type().id()) {
      case BOOLEAN -> out.appendBoolean((Boolean) v);
      case BYTE -> out.appendByte((Byte) v);
      case SHORT -> out.appendShort((Short) v);
      case INT, DATE -> out.appendInt((Integer) v);
      case LONG, TIMESTAMP -> out.appendLong((Long) v);
      case FLOAT -> out.appendFloat((Float) v);
      case DOUBLE -> out.appendDouble((Double) v);
      case DECIMAL -> out.appendLong(((Decimal) v).toUnscaledLong());
      case STRING -> out.appendUtf8(((UTF8String) v).getBytes());
    }
  }
}
