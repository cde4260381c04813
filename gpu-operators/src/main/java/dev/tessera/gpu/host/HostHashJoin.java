package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.join.HashJoinKernel;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.memory.ArenaPool;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@link HashJoinKernel} as Java maps and row loops over host-addressable columns. */
final class HostHashJoin implements HashJoinKernel {

  @Override
  public JoinTable build(JoinTableSchema schema, ColumnBatch<DeviceColumn> build, ArenaPool pool,
      GpuStream stream) {
    int keys = schema.keyTypes().size();
    checkShape(schema, build);
    int[] keyColumns = range(0, keys);
    Map<HostJoinKey, List<Integer>> rows = new LinkedHashMap<>();
    for (int row = 0; row < build.rowCount(); row++) {
      HostJoinKey key = HostJoinKey.of(build.columns(), keyColumns, row);
      if (key != null) { // a NULL key never matches: the row only keeps its payload
        rows.computeIfAbsent(key, k -> new ArrayList<>()).add(row);
      }
    }
    Map<HostJoinKey, int[]> rowsByKey = new HashMap<>();
    rows.forEach((k, v) -> rowsByKey.put(k, v.stream().mapToInt(Integer::intValue).toArray()));
    int[] all = range(0, build.rowCount());
    List<DeviceColumn> payload = new ArrayList<>();
    try {
      for (int c = keys; c < build.columns().size(); c++) {
        payload.add(HostColumns.gather(build.column(c), all, 0, all.length, pool));
      }
    } catch (RuntimeException e) {
      payload.forEach(DeviceColumn::close);
      throw e;
    }
    return new HostJoinTable(schema, build.rowCount(), rowsByKey, payload);
  }

  @Override
  public List<ColumnBatch<DeviceColumn>> expand(JoinTable table, ColumnBatch<DeviceColumn> probe,
      int[] probeKeys, boolean leftOuter, int maxRowsPerBatch, ArenaPool pool, GpuStream stream) {
    if (maxRowsPerBatch < 1) {
      throw new IllegalArgumentException("maxRowsPerBatch must be positive: " + maxRowsPerBatch);
    }
    HostJoinTable host = (HostJoinTable) table;
    checkProbeKeys(host.schema(), probe, probeKeys);
    // The output rows as (probe row, build row) pairs, in probe order, then build order.
    IntPairs pairs = new IntPairs();
    for (int row = 0; row < probe.rowCount(); row++) {
      int[] matches = host.matches(HostJoinKey.of(probe.columns(), probeKeys, row));
      for (int b : matches) {
        pairs.add(row, b);
      }
      if (matches.length == 0 && leftOuter) {
        pairs.add(row, -1);
      }
    }
    List<ColumnBatch<DeviceColumn>> out = new ArrayList<>();
    try {
      for (int from = 0; from < pairs.size; from += maxRowsPerBatch) {
        int to = (int) Math.min((long) from + maxRowsPerBatch, pairs.size);
        out.add(gatherBatch(host, probe, pairs, from, to, pool));
      }
    } catch (RuntimeException e) {
      out.forEach(ColumnBatch::close);
      throw e;
    }
    return out;
  }

  private static ColumnBatch<DeviceColumn> gatherBatch(HostJoinTable table,
      ColumnBatch<DeviceColumn> probe, IntPairs pairs, int from, int to, ArenaPool pool) {
    List<DeviceColumn> columns = new ArrayList<>();
    try {
      for (DeviceColumn c : probe.columns()) {
        columns.add(HostColumns.gather(c, pairs.probeRows, from, to, pool));
      }
      for (int p = 0; p < table.schema().payloadTypes().size(); p++) {
        columns.add(HostColumns.gather(table.payload(p), pairs.buildRows, from, to, pool));
      }
    } catch (RuntimeException e) {
      columns.forEach(DeviceColumn::close);
      throw e;
    }
    return new ColumnBatch<>(columns, to - from);
  }

  private static void checkShape(JoinTableSchema schema, ColumnBatch<DeviceColumn> build) {
    schema.checkBuildColumns(build.columns().stream().map(DeviceColumn::type).toList());
    schema.keyTypes().forEach(HostJoinKey::checkKeyType);
  }

  private static void checkProbeKeys(JoinTableSchema schema, ColumnBatch<DeviceColumn> probe,
      int[] probeKeys) {
    if (probeKeys.length != schema.keyTypes().size()) {
      throw new IllegalArgumentException("the table has " + schema.keyTypes().size()
          + " key columns, the probe names " + Arrays.toString(probeKeys));
    }
    for (int k = 0; k < probeKeys.length; k++) {
      ColumnType probeType = probe.column(probeKeys[k]).type();
      if (probeType.isString() != schema.keyTypes().get(k).isString()) {
        throw new IllegalArgumentException("probe key column " + probeKeys[k] + " is "
            + probeType + ", the table's key " + k + " is " + schema.keyTypes().get(k));
      }
      HostJoinKey.checkKeyType(probeType);
    }
  }

  private static int[] range(int from, int to) {
    int[] r = new int[to - from];
    Arrays.setAll(r, i -> from + i);
    return r;
  }

  /** A growable list of (probe row, build row) pairs. */
  private static final class IntPairs {
    int[] probeRows = new int[16];
    int[] buildRows = new int[16];
    int size;

    void add(int probeRow, int buildRow) {
      if (size == probeRows.length) {
        probeRows = Arrays.copyOf(probeRows, size * 2);
        buildRows = Arrays.copyOf(buildRows, size * 2);
      }
      probeRows[size] = probeRow;
      buildRows[size] = buildRow;
      size++;
    }
  }
}
