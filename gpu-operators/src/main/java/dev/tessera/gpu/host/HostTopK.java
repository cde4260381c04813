package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.SparkOrder;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.sort.RunningTopK;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The host reference top-k: after each batch, the first {@code limit} rows of the rows held and
 * the batch's, chosen with a bounded heap and gathered into a new batch. Ties keep the order the
 * rows arrived in (the rows held came first, in their order).
 */
final class HostTopK implements TopKKernel {
  @Override
  public Running open(TopKSpec spec, ArenaPool pool, GpuStream stream) {
    return new HostRunning(spec, pool);
  }

  private static final class HostRunning extends RunningTopK {
    private final ArenaPool pool;

    HostRunning(TopKSpec spec, ArenaPool pool) {
      super(spec);
      this.pool = pool;
    }

    @Override
    protected ColumnBatch<DeviceColumn> step(ColumnBatch<DeviceColumn> held,
        ColumnBatch<DeviceColumn> batch) {
      Candidates candidates = new Candidates(held, batch);
      int[] first = candidates.first(spec.keys(), spec.limit());
      return candidates.gather(first, spec.columnTypes(), pool);
    }

    @Override
    protected ColumnBatch<DeviceColumn> empty() {
      List<DeviceColumn> columns = new ArrayList<>();
      try {
        for (ColumnType type : spec.columnTypes()) {
          columns.add(HostColumns.write(type, 0, new long[0], new byte[0][], new boolean[0],
              pool));
        }
      } catch (RuntimeException e) {
        columns.forEach(DeviceColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, 0);
    }
  }

  /**
   * The rows held (positions 0 .. held - 1, in order) followed by a new batch's: a position's
   * number is also its arrival order, which breaks ties.
   */
  private static final class Candidates {
    private final ColumnBatch<DeviceColumn> held;
    private final ColumnBatch<DeviceColumn> batch;
    private final int heldRows;

    Candidates(ColumnBatch<DeviceColumn> held, ColumnBatch<DeviceColumn> batch) {
      this.held = held;
      this.batch = batch;
      this.heldRows = held == null ? 0 : held.rowCount();
    }

    int size() {
      return heldRows + batch.rowCount();
    }

    DeviceColumn column(int position, int column) {
      return position < heldRows ? held.column(column) : batch.column(column);
    }

    int row(int position) {
      return position < heldRows ? position : position - heldRows;
    }

    /** The positions of the first {@code limit} rows, in order. */
    int[] first(List<SortKey> keys, int limit) {
      Comparator<Integer> order = (a, b) -> compare(keys, a, b);
      // A max-heap of the best rows so far: its head is the one to drop first.
      PriorityQueue<Integer> best = new PriorityQueue<>(Math.min(limit, size()) + 1,
          order.reversed());
      for (int p = 0; p < size(); p++) {
        if (best.size() < limit) {
          best.add(p);
        } else if (order.compare(p, best.peek()) < 0) {
          best.poll();
          best.add(p);
        }
      }
      return best.stream().sorted(order).mapToInt(Integer::intValue).toArray();
    }

    /** Spark's order of two positions by {@code keys}, then by arrival. */
    private int compare(List<SortKey> keys, int a, int b) {
      for (SortKey key : keys) {
        int c = compare(key, a, b);
        if (c != 0) {
          return c;
        }
      }
      return Integer.compare(a, b);
    }

    private int compare(SortKey key, int a, int b) {
      DeviceColumn ca = column(a, key.column());
      DeviceColumn cb = column(b, key.column());
      int ra = row(a);
      int rb = row(b);
      boolean nullA = HostColumns.isNull(ca, ra);
      boolean nullB = HostColumns.isNull(cb, rb);
      if (nullA || nullB) {
        if (nullA == nullB) {
          return 0;
        }
        return nullA == key.nullsFirst() ? -1 : 1;
      }
      int c = compareValues(ca, ra, cb, rb);
      return key.descending() ? -c : c;
    }

    private static int compareValues(DeviceColumn ca, int ra, DeviceColumn cb, int rb) {
      return switch (ca.type().id()) {
        case STRING -> Arrays.compareUnsigned(HostColumns.utf8(ca, ra), HostColumns.utf8(cb, rb));
        case FLOAT -> SparkOrder.compareFloats(
            Float.intBitsToFloat((int) HostColumns.fixed(ca, ra)),
            Float.intBitsToFloat((int) HostColumns.fixed(cb, rb)));
        case DOUBLE -> SparkOrder.compareDoubles(
            Double.longBitsToDouble(HostColumns.fixed(ca, ra)),
            Double.longBitsToDouble(HostColumns.fixed(cb, rb)));
        default -> Long.compare(HostColumns.fixed(ca, ra), HostColumns.fixed(cb, rb));
      };
    }

    /** A new batch of the rows at {@code positions}, in that order. */
    ColumnBatch<DeviceColumn> gather(int[] positions, List<ColumnType> types, ArenaPool pool) {
      List<DeviceColumn> columns = new ArrayList<>(types.size());
      try {
        for (int c = 0; c < types.size(); c++) {
          columns.add(gatherColumn(c, types.get(c), positions, pool));
        }
      } catch (RuntimeException e) {
        columns.forEach(DeviceColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, positions.length);
    }

    private DeviceColumn gatherColumn(int c, ColumnType type, int[] positions, ArenaPool pool) {
      int n = positions.length;
      long[] values = new long[n];
      byte[][] strings = type.isString() ? new byte[n][] : null;
      boolean[] valid = new boolean[n];
      for (int i = 0; i < n; i++) {
        DeviceColumn src = column(positions[i], c);
        int row = row(positions[i]);
        valid[i] = !HostColumns.isNull(src, row);
        if (!valid[i]) {
          continue;
        }
        if (strings != null) {
          strings[i] = HostColumns.utf8(src, row);
        } else {
          values[i] = HostColumns.fixed(src, row);
        }
      }
      return HostColumns.write(type, n, values, strings, valid, pool);
    }
  }
}
