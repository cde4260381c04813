package dev.tessera.gpu.sort;

import dev.tessera.gpu.column.ColumnType;
import java.io.Serializable;
import java.util.List;

/**
 * A top-k: the first {@code limit} rows of batches of {@code columnTypes} in the order of
 * {@code keys} (the first key first, each later one breaking the ties of those before it). Rows
 * whose keys all tie keep the order they arrived in, so the result is one Spark's
 * {@code takeOrdered} can return too.
 *
 * @param columnTypes every column of the batches; all of them are carried into the result
 * @param keys the sort keys, at least one
 * @param limit how many rows to keep, at least 1
 */
public record TopKSpec(List<ColumnType> columnTypes, List<SortKey> keys, int limit)
    implements Serializable {
  /** The most sort keys a top-k takes (top_k.cu kMaxSortKeys: the kernels hold them in shared memory). */
  public static final int MAX_KEYS = 8;

  public TopKSpec {
    columnTypes = List.copyOf(columnTypes);
    keys = List.copyOf(keys);
    if (keys.isEmpty() || keys.size() > MAX_KEYS) {
      throw new IllegalArgumentException("a top-k takes 1 to " + MAX_KEYS + " sort keys, got "
          + keys.size());
    }
    for (SortKey key : keys) {
      if (key.column() >= columnTypes.size()) {
        throw new IllegalArgumentException("sort key " + key + " names no column of the "
            + columnTypes.size() + " the batches have");
      }
    }
    if (limit < 1) {
      throw new IllegalArgumentException("a top-k keeps at least one row, got a limit of "
          + limit);
    }
  }
}
