package dev.tessera.gpu.host;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import java.util.Arrays;
import java.util.List;

/**
 * A join key as the host reference compares it: one part per key column, a {@code Long} for the
 * integer kinds (so an INT key equals a LONG key of the same value, as PROBE's 64-bit compare
 * says) and a {@code byte[]} for strings (compared by bytes).
 */
record HostJoinKey(Object[] parts) {

  /** The key of {@code row} in {@code columns}, or null when any of its parts is NULL. */
  static HostJoinKey of(List<DeviceColumn> columns, int[] keyColumns, int row) {
    Object[] parts = new Object[keyColumns.length];
    for (int k = 0; k < keyColumns.length; k++) {
      DeviceColumn c = columns.get(keyColumns[k]);
      if (HostColumns.isNull(c, row)) {
        return null;
      }
      parts[k] = c.type().isString() ? HostColumns.utf8(c, row) : HostColumns.fixed(c, row);
    }
    return new HostJoinKey(parts);
  }

  /** Rejects key types PROBE does not compare (floating point has no 64-bit integer form). */
  static void checkKeyType(ColumnType type) {
    switch (type.id()) {
      case FLOAT, DOUBLE, BOOLEAN -> throw new IllegalArgumentException(
          type + " is not a join key type: keys are integral, date, timestamp, decimal or string");
      default -> { }
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HostJoinKey k && Arrays.deepEquals(parts, k.parts);
  }

  @Override
  public int hashCode() {
    return Arrays.deepHashCode(parts);
  }

  @Override
  public String toString() {
    return Arrays.deepToString(parts);
  }
}
