package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.join.JoinTable;
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
import java.math.BigDecimal;
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

  /**
   * One function's state in one group: counts and MIN/MAX in {@code value}; sums exactly in
   * {@code sum} (a BigInteger never overflows, so every rule of the contract about leaving the
   * result type is applied once, to the total, in finish()).
   */
  private static final class Accumulator {
    long value;
    BigInteger sum = BigInteger.ZERO;
    boolean seen;
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
    public void update(Program program, List<JoinTable> tables,
        ColumnBatch<DeviceColumn> input) {
      try (ColumnBatch<DeviceColumn> projected =
          new HostFilterProject().run(program, tables, input, pool, null)) {
        update(projected);
      }
    }

    @Override
    public void update(ColumnBatch<DeviceColumn> input) {
      try (EncodedInput plain = EncodedInput.of(input, pool)) {
        updatePlain(plain.batch());
      }
    }

    private void updatePlain(ColumnBatch<DeviceColumn> batch) {
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
        case SUM, SUM_DECIMAL -> a.sum = a.sum.add(exact(in.type().id(), v));
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

    /** An input of a sum as an exact integer (DOUBLE inputs hold whole numbers). */
    private static BigInteger exact(TypeId type, long v) {
      if (type != TypeId.DOUBLE) {
        return BigInteger.valueOf(v);
      }
      double d = Double.longBitsToDouble(v);
      if (Double.isNaN(d) || Double.isInfinite(d) || d != Math.rint(d)) {
        throw new IllegalArgumentException("SUM of the DOUBLE " + d + ", not a whole number");
      }
      return new BigDecimal(d).toBigIntegerExact();
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
      return finish(0, Math.toIntExact(groupCount()));
    }

    @Override
    public boolean canFinishInParts() {
      return true;
    }

    @Override
    public long groupCount() {
      return spec.keyCount() == 0 ? 1 : groups.size();
    }

    /** Groups in insertion order (the LinkedHashMap's), [from, from + count). */
    @Override
    public ColumnBatch<DeviceColumn> finish(long from, int count) {
      if (spec.keyCount() == 0 && groups.isEmpty()) {
        groups.put(new Key(new Object[0]), fresh()); // a global aggregate always has one row
      }
      if (from < 0 || count < 0 || from > groups.size()) {
        throw new IllegalArgumentException("groups [" + from + ", +" + count + ") of "
            + groups.size());
      }
      int start = (int) from;
      int rows = Math.min(count, groups.size() - start);
      List<Key> keys = new ArrayList<>(groups.keySet()).subList(start, start + rows);
      List<Accumulator[]> accumulators =
          new ArrayList<>(groups.values()).subList(start, start + rows);
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
            values[r] = a.value;
            valid[r] = a.seen;
            switch (function.kind()) {
              case COUNT, COUNT_ROWS -> valid[r] = true;
              case SUM -> {
                valid[r] = a.seen || function.zeroWhenEmpty();
                values[r] = sumInt(function, a.sum, r);
              }
              case SUM_DECIMAL -> {
                valid[r] = (a.seen || function.zeroWhenEmpty())
                    && fitsPrecision(a.sum, function.resultType().precision());
                values[r] = valid[r] ? a.sum.longValueExact() : 0;
              }
              default -> { }
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

    /**
     * A SUM total as its result type: DOUBLE rounds the exact sum once; LONG wraps, or under
     * ANSI raises ARITHMETIC_OVERFLOW naming the output row.
     */
    private long sumInt(AggregateFunction f, BigInteger sum, int row) {
      if (f.resultType().id() == TypeId.DOUBLE) {
        return Double.doubleToRawLongBits(sum.doubleValue());
      }
      if (sum.bitLength() > 63 && spec.ansi()) {
        throw new RowErrorException(RowError.ARITHMETIC_OVERFLOW, row);
      }
      return sum.longValue(); // the low 64 bits: the wrapped sum
    }

    /** Whether a decimal's unscaled value has at most {@code precision} digits. */
    private static boolean fitsPrecision(BigInteger unscaled, int precision) {
      return unscaled.abs().compareTo(BigInteger.TEN.pow(precision)) < 0;
    }

    @Override
    public void close() {
      groups.clear();
    }
  }
}
