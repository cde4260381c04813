package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.expr.SparkOrder;
import dev.tessera.gpu.memory.ArenaPool;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@link HashAggregateKernel} as a Java hash map from key tuples to accumulators. */
final class HostHashAggregate implements HashAggregateKernel {
  @Override
  public Aggregation open(AggregateSpec spec, ArenaPool pool, GpuStream stream) {
    return new HostAggregation(spec, pool);
  }

  /** A group's key: the key values (Long, byte[] wrapped for equality, or null). */
  private record Key(Object[] values) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && Arrays.deepEquals(values, k.values);
    }

    @Override
    public int hashCode() {
      return Arrays.deepHashCode(values);
    }
  }

  /** One function's state in one group. */
  private static final class Accumulator {
    long value;
    boolean seen;
    boolean overflowed;
  }

  private static final class HostAggregation implements Aggregation {
    private final AggregateSpec spec;
    private final ArenaPool pool;
    private final Map<Key, Accumulator[]> groups = new LinkedHashMap<>();

    HostAggregation(AggregateSpec spec, ArenaPool pool) {
      this.spec = spec;
      this.pool = pool;
    }

    /** The reference: the program's output batch, materialised, then aggregated. */
    @Override
    public void update(Program program, ColumnBatch<DeviceColumn> input) {
      try (ColumnBatch<DeviceColumn> projected =
          new HostFilterProject().run(program, input, pool, null)) {
        update(projected);
      }
    }

    @Override
    public void update(ColumnBatch<DeviceColumn> batch) {
      if (batch.columns().size() != spec.inputTypes().size()) {
        throw new IllegalArgumentException("the aggregation reads " + spec.inputTypes().size()
            + " columns, the batch has " + batch.columns().size());
      }
      for (int row = 0; row < batch.rowCount(); row++) {
        Object[] key = new Object[spec.keyCount()];
        for (int k = 0; k < key.length; k++) {
          DeviceColumn c = batch.column(k);
          key[k] = HostColumns.isNull(c, row) ? null
              : c.type().isString() ? HostColumns.utf8(c, row) : (Object) HostColumns.fixed(c, row);
        }
        Accumulator[] accumulators = groups.computeIfAbsent(new Key(key), k -> fresh());
        for (int f = 0; f < accumulators.length; f++) {
          accumulate(spec.functions().get(f), accumulators[f], batch, row);
        }
      }
    }

    private Accumulator[] fresh() {
      Accumulator[] a = new Accumulator[spec.functions().size()];
      for (int i = 0; i < a.length; i++) {
        a[i] = new Accumulator();
      }
      return a;
    }

    private void accumulate(AggregateFunction f, Accumulator a, ColumnBatch<DeviceColumn> batch,
        int row) {
      if (f.kind() == AggregateFunction.Kind.COUNT_ROWS) {
        a.value++;
        a.seen = true;
        return;
      }
      DeviceColumn in = batch.column(f.input());
      if (HostColumns.isNull(in, row)) {
        return;
      }
      long v = HostColumns.fixed(in, row);
      switch (f.kind()) {
        case COUNT -> a.value++;
        case SUM_INT, SUM_DECIMAL -> {
          long sum = a.value + v;
          if (((a.value ^ sum) & (v ^ sum)) < 0) {
            a.overflowed = true; // wrapped past the int64 range
          }
          a.value = sum;
        }
        case MIN, MAX -> {
          int order = a.seen ? compare(in.type().id(), v, a.value) : 0;
          if (!a.seen || (f.kind() == AggregateFunction.Kind.MIN ? order < 0 : order > 0)) {
            a.value = v;
          }
        }
        default -> throw new IllegalStateException(f.kind().toString());
      }
      a.seen = true;
    }

    private static int compare(TypeId type, long x, long y) {
      return switch (type) {
        case FLOAT -> SparkOrder.compareFloats(Float.intBitsToFloat((int) x),
            Float.intBitsToFloat((int) y));
        case DOUBLE -> SparkOrder.compareDoubles(Double.longBitsToDouble(x),
            Double.longBitsToDouble(y));
        case STRING -> throw new IllegalArgumentException("min/max of strings");
        default -> Long.compare(x, y);
      };
    }

    @Override
    public ColumnBatch<DeviceColumn> finish() {
      if (spec.keyCount() == 0 && groups.isEmpty()) {
        groups.put(new Key(new Object[0]), fresh()); // a global aggregate always has one row
      }
      int rows = groups.size();
      List<Key> keys = new ArrayList<>(groups.keySet());
      List<Accumulator[]> accumulators = new ArrayList<>(groups.values());
      List<DeviceColumn> columns = new ArrayList<>();
      try {
        for (int k = 0; k < spec.keyCount(); k++) {
          ColumnType type = spec.inputTypes().get(k);
          long[] values = new long[rows];
          byte[][] strings = new byte[rows][];
          boolean[] valid = new boolean[rows];
          for (int r = 0; r < rows; r++) {
            Object v = keys.get(r).values()[k];
            valid[r] = v != null;
            if (v instanceof byte[] b) {
              strings[r] = b;
            } else if (v != null) {
              values[r] = (Long) v;
            }
          }
          columns.add(HostColumns.write(type, rows, values, strings, valid, pool));
        }
        for (int f = 0; f < spec.functions().size(); f++) {
          AggregateFunction function = spec.functions().get(f);
          long[] values = new long[rows];
          boolean[] valid = new boolean[rows];
          for (int r = 0; r < rows; r++) {
            Accumulator a = accumulators.get(r)[f];
            boolean counts = function.kind() == AggregateFunction.Kind.COUNT
                || function.kind() == AggregateFunction.Kind.COUNT_ROWS;
            values[r] = a.value;
            valid[r] = counts || a.seen;
            if (valid[r] && !counts && overflows(function, a)) {
              if (spec.ansi()) {
                throw new RowErrorException(function.kind() == AggregateFunction.Kind.SUM_INT
                    ? RowError.ARITHMETIC_OVERFLOW : RowError.DECIMAL_OVERFLOW, r);
              }
              valid[r] = function.kind() == AggregateFunction.Kind.SUM_INT; // ints wrap
            }
          }
          columns.add(HostColumns.write(function.resultType(), rows, values, null, valid, pool));
        }
      } catch (RuntimeException e) {
        columns.forEach(DeviceColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, rows);
    }

    /** Whether a sum left its result type: int64 for ints, the precision for decimals. */
    private static boolean overflows(AggregateFunction f, Accumulator a) {
      if (f.kind() == AggregateFunction.Kind.SUM_INT) {
        return a.overflowed;
      }
      if (f.kind() == AggregateFunction.Kind.SUM_DECIMAL) {
        BigInteger limit = BigInteger.TEN.pow(f.resultType().precision());
        return a.overflowed || BigInteger.valueOf(a.value).abs().compareTo(limit) >= 0;
      }
      return false;
    }

    @Override
    public void close() {
      groups.clear();
    }
  }
}
