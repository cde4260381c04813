package dev.tessera.gpu.kernels;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.memory.ArenaPool;
import java.util.List;

/**
 * Dictionary-encoded columns decoded on the device: each column arrives as its entries (the
 * dictionary) and an INT id per row, and leaves as the plain column of the entries' type. An
 * upload sends a Parquet dictionary's ids and its entries instead of the values Spark would
 * decode on the CPU one by one.
 */
public interface DictionaryKernel {
  /**
   * The batch whose column c has, at row r, entry {@code ids.get(c)[r]} of
   * {@code entries.get(c)}, or NULL where that id is -1 (the ids' validity is not read) or the
   * entry is NULL. The caller keeps {@code ids} and {@code entries}; the result is new and its
   * own (closed by the caller). Waits for the result.
   *
   * @param ids INT columns of {@code rows} rows, each id -1 or an entry of its dictionary
   * @param entries plain columns of any type, one per id column
   */
  ColumnBatch<DeviceColumn> decode(List<DeviceColumn> ids, List<DeviceColumn> entries, int rows,
      ArenaPool pool, GpuStream stream);

  /** Checks the arguments' shapes (the ids' values are the caller's to get right). */
  static void check(List<DeviceColumn> ids, List<DeviceColumn> entries, int rows) {
    if (ids.size() != entries.size()) {
      throw new IllegalArgumentException(ids.size() + " id columns for " + entries.size()
          + " dictionaries");
    }
    for (int c = 0; c < ids.size(); c++) {
      DeviceColumn id = ids.get(c);
      if (id.type().id() != TypeId.INT || id.rowCount() != rows
          || id.isEncoded()) {
        throw new IllegalArgumentException("dictionary ids " + c + " must be a plain INT column"
            + " of " + rows + " rows, not " + id.type() + " of " + id.rowCount());
      }
      if (entries.get(c).isEncoded()) {
        throw new IllegalArgumentException("dictionary " + c + " must be plain");
      }
    }
  }
}
