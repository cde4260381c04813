package dev.tessera.gpu.host;

import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.HostProbeTable;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;
import java.util.Map;

/**
 * The host reference join table: a Java map from key to the build rows holding it (ascending),
 * and copies of the payload columns in pool memory, which this table owns. Read-only once built,
 * so any number of tasks may probe it at once.
 */
final class HostJoinTable implements JoinTable, HostProbeTable {
  private final JoinTableSchema schema;
  private final int buildRows;
  private final Map<HostJoinKey, int[]> rowsByKey;
  private final List<DeviceColumn> payload;
  private final boolean uniqueKeys;
  private boolean closed;

  /** Takes ownership of {@code payload}. */
  HostJoinTable(JoinTableSchema schema, int buildRows, Map<HostJoinKey, int[]> rowsByKey,
      List<DeviceColumn> payload) {
    this.schema = schema;
    this.buildRows = buildRows;
    this.rowsByKey = Map.copyOf(rowsByKey);
    this.payload = List.copyOf(payload);
    this.uniqueKeys = rowsByKey.values().stream().allMatch(rows -> rows.length == 1);
  }

  @Override
  public JoinTableSchema schema() {
    return schema;
  }

  @Override
  public long buildRows() {
    return buildRows;
  }

  @Override
  public boolean uniqueKeys() {
    return uniqueKeys;
  }

  /**
   * The sizes of the payload columns' buffers, which come from the device pool; the key map is
   * on the Java heap, which the device store does not weigh.
   */
  @Override
  public long deviceBytes() {
    long total = 0;
    for (DeviceColumn c : payload) {
      total += c.data().size();
      total += c.validity() == null ? 0 : c.validity().size();
      total += c.offsets() == null ? 0 : c.offsets().size();
    }
    return total;
  }

  /** The build rows whose keys equal {@code key}, ascending; empty when none (or key is null). */
  int[] matches(HostJoinKey key) {
    return key == null ? NONE : rowsByKey.getOrDefault(key, NONE);
  }

  @Override
  public int firstMatch(Object[] key) {
    int[] rows = matches(new HostJoinKey(key));
    return rows.length == 0 ? -1 : rows[0];
  }

  @Override
  public DeviceColumn payload(int column) {
    return payload.get(column);
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      payload.forEach(DeviceColumn::close);
    }
  }

  private static final int[] NONE = new int[0];
}
