package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.expr.RowErrorException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType$;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The {@link OrderDependentSum}s of one GPU aggregation, checked on each batch of groups it
 * emits: groups the GPU shows exact keep its values; for the others the task's rows are replayed
 * in Spark's order with Spark's own additions, which raise Spark's ANSI error where Spark would,
 * and give the double sums Spark's rounding. The helper sums' columns are dropped either way.
 */
final class OrderChecks implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The task's input rows again, through the pipeline, in Spark's order. */
  interface Replay {
    void forEachRow(Consumer<InternalRow> sink);
  }

  private final List<OrderDependentSum> sums;
  private final List<DataType> keyTypes;
  private final List<DataType> inputTypes;
  private final int outputColumns;

  /**
   * @param keyTypes the grouping keys' types (the first columns of the aggregation's input and
   *     output)
   * @param inputTypes the types of the aggregation's input columns (keys, then values)
   * @param outputColumns the columns the node outputs (keys and functions); the helper sums
   *     follow them in the aggregation's groups
   */
  OrderChecks(List<OrderDependentSum> sums, List<DataType> keyTypes, List<DataType> inputTypes,
      int outputColumns) {
    this.sums = List.copyOf(sums);
    this.keyTypes = List.copyOf(keyTypes);
    this.inputTypes = List.copyOf(inputTypes);
    this.outputColumns = outputColumns;
  }

  boolean isEmpty() {
    return sums.isEmpty();
  }

  /**
   * The groups as the node outputs them (taking ownership): checked, replayed where the GPU
   * cannot show its sums exact, without the helper columns.
   *
   * @param rows the rows the task's aggregation has read so far
   */
  ColumnBatch<DeviceColumn> check(ColumnBatch<DeviceColumn> groups, long rows, Replay replay,
      Backend backend, GpuStream stream) {
    List<DeviceColumn> columns = new ArrayList<>(groups.columns());
    try {
      List<Integer> unproven = unproven(groups, rows, backend, stream);
      if (!unproven.isEmpty()) {
        Map<UnsafeRow, Integer> keys = keysOf(groups, unproven, backend, stream);
        Map<UnsafeRow, Object[]> spark = replay(keys, replay);
        for (int s = 0; s < sums.size(); s++) {
          if (sums.get(s).mode() != OrderDependentSum.Mode.DOUBLE) {
            continue; // an ANSI sum that did not raise in Spark's order: the GPU's total stands
          }
          Map<Integer, Double> values = new HashMap<>();
          for (Map.Entry<UnsafeRow, Integer> k : keys.entrySet()) {
            Object[] state = spark.get(k.getKey());
            if (state == null) {
              throw new IllegalStateException("Tessera bug: a group the GPU emitted has no rows"
                  + " when the task's input is read again");
            }
            values.put(k.getValue(), state[s] == null ? 0.0 : (Double) state[s]);
          }
          int result = sums.get(s).result();
          columns.set(result, patch(groups.column(result), values, backend, stream)).close();
        }
      }
    } catch (RuntimeException e) {
      columns.forEach(DeviceColumn::close);
      throw e;
    }
    columns.subList(outputColumns, columns.size()).forEach(DeviceColumn::close);
    return new ColumnBatch<>(columns.subList(0, outputColumns), groups.rowCount());
  }

  /**
   * Spark's error for a task whose GPU sum overflowed as a whole: Spark's running sum overflows
   * too, and the replay raises its own error (with its message and hint).
   */
  RuntimeException overflow(RowErrorException gpuError, Replay replay) {
    replay(null, replay);
    return new IllegalStateException("Tessera bug: the GPU found an overflowing sum, but Spark"
        + " adds the task's rows without error", gpuError);
  }

  /** The groups (rows of {@code groups}) whose sums the GPU cannot show exact. */
  private List<Integer> unproven(ColumnBatch<DeviceColumn> groups, long rows, Backend backend,
      GpuStream stream) {
    List<Integer> helperColumns = new ArrayList<>();
    for (OrderDependentSum s : sums) {
      if (s.hasHelpers()) {
        helperColumns.add(s.positive());
        helperColumns.add(s.negative());
      }
    }
    List<Integer> unproven = new ArrayList<>();
    try (ColumnBatch<HostColumn> helpers = toHost(groups, helperColumns, backend, stream)) {
      List<ColumnVector> h = new ArrayList<>();
      for (HostColumn c : helpers.columns()) {
        h.add(HostColumnVector.view(DoubleType$.MODULE$, c));
      }
      for (int r = 0; r < groups.rowCount(); r++) {
        int next = 0;
        boolean exact = true;
        for (OrderDependentSum s : sums) {
          if (s.hasHelpers()) {
            exact &= s.withinBound(h.get(next).getDouble(r), h.get(next + 1).getDouble(r));
            next += 2;
          } else {
            exact &= s.boundedByRows(rows);
          }
        }
        if (!exact) {
          unproven.add(r);
        }
      }
    }
    return unproven;
  }

  /** The grouping keys of rows {@code which} of {@code groups}, as Spark's unsafe rows. */
  private Map<UnsafeRow, Integer> keysOf(ColumnBatch<DeviceColumn> groups, List<Integer> which,
      Backend backend, GpuStream stream) {
    List<Integer> keyColumns = new ArrayList<>();
    for (int k = 0; k < keyTypes.size(); k++) {
      keyColumns.add(k);
    }
    Map<UnsafeRow, Integer> keys = new HashMap<>();
    try (ColumnBatch<HostColumn> host = toHost(groups, keyColumns, backend, stream)) {
      ColumnVector[] vectors = new ColumnVector[keyTypes.size()];
      for (int k = 0; k < vectors.length; k++) {
        vectors[k] = HostColumnVector.view(keyTypes.get(k), host.column(k));
      }
      ColumnarBatch batch = new ColumnarBatch(vectors, host.rowCount());
      UnsafeProjection key = keyProjection();
      for (int r : which) {
        keys.put(key.apply(batch.getRow(r)).copy(), r);
      }
    }
    return keys;
  }

  /**
   * Replays the task's rows in Spark's order: for each group of {@code groups} (every group when
   * null), each sum's value as Spark's additions give it; Spark's ANSI error propagates.
   */
  private Map<UnsafeRow, Object[]> replay(Map<UnsafeRow, Integer> groups, Replay replay) {
    Map<UnsafeRow, Object[]> states = new HashMap<>();
    UnsafeProjection key = keyProjection();
    GenericInternalRow pair = new GenericInternalRow(2);
    replay.forEachRow(row -> {
      UnsafeRow k = key.apply(row);
      if (groups != null && !groups.containsKey(k)) {
        return;
      }
      Object[] state = states.get(k);
      if (state == null) {
        state = new Object[sums.size()];
        states.put(k.copy(), state);
      }
      for (int s = 0; s < sums.size(); s++) {
        OrderDependentSum sum = sums.get(s);
        if (row.isNullAt(sum.input())) {
          continue;
        }
        if (sum.mode() == OrderDependentSum.Mode.ANSI_LONG) {
          pair.update(0, state[s] == null ? 0L : state[s]);
          pair.update(1, longValue(row, sum.input()));
          state[s] = sum.sparkAdd().eval(pair);
        } else {
          state[s] = (state[s] == null ? 0.0 : (double) state[s]) + row.getDouble(sum.input());
        }
      }
    });
    return states;
  }

  /** A copy of a DOUBLE column with {@code values} in their rows. */
  private static DeviceColumn patch(DeviceColumn column, Map<Integer, Double> values,
      Backend backend, GpuStream stream) {
    HostColumn patched;
    try (HostColumn old = ColumnTransfer.toHost(column, backend.stagingAllocator(), stream);
        HostColumnBuilder b = new HostColumnBuilder(ColumnType.DOUBLE, old.rowCount(),
            backend.stagingAllocator())) {
      ColumnVector v = HostColumnVector.view(DoubleType$.MODULE$, old);
      for (int r = 0; r < old.rowCount(); r++) {
        Double x = values.get(r);
        if (x != null) {
          b.appendDouble(x);
        } else if (v.isNullAt(r)) {
          b.appendNull();
        } else {
          b.appendDouble(v.getDouble(r));
        }
      }
      patched = b.build();
    }
    try (patched) {
      DeviceColumn device = ColumnTransfer.toDeviceAsync(patched, backend.deviceMemory(), stream);
      try {
        stream.synchronize();
        return device;
      } catch (RuntimeException e) {
        device.close();
        throw e;
      }
    }
  }

  private long longValue(InternalRow row, int column) {
    DataType t = inputTypes.get(column);
    if (t instanceof ByteType) {
      return row.getByte(column);
    } else if (t instanceof ShortType) {
      return row.getShort(column);
    } else if (t instanceof IntegerType) {
      return row.getInt(column);
    }
    return row.getLong(column);
  }

  /** The first columns of a row (the aggregation's input or its groups) as the group's key. */
  private UnsafeProjection keyProjection() {
    List<Expression> refs = new ArrayList<>();
    for (int k = 0; k < keyTypes.size(); k++) {
      refs.add(new BoundReference(k, keyTypes.get(k), true));
    }
    return UnsafeProjection.create(CollectionConverters.asScala(refs).toSeq());
  }

  /** Host copies of some columns of a device batch. */
  private static ColumnBatch<HostColumn> toHost(ColumnBatch<DeviceColumn> batch,
      List<Integer> columns, Backend backend, GpuStream stream) {
    List<HostColumn> host = new ArrayList<>();
    try {
      for (int c : columns) {
        host.add(ColumnTransfer.toHost(batch.column(c), backend.stagingAllocator(), stream));
      }
    } catch (RuntimeException e) {
      host.forEach(HostColumn::close);
      throw e;
    }
    return new ColumnBatch<>(host, batch.rowCount());
  }
}
