package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.HostColumn;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;

/**
 * A batch staged for its upload: its columns, and for each column staged as dictionary ids
 * ({@link DictionaryIds}: an INT column, -1 where NULL) the entries those ids index. Owns them
 * all.
 */
final class StagedBatch implements AutoCloseable {
  private final ColumnBatch<HostColumn> columns;
  /** Per column, the entries its ids index, or null where the column holds its values. */
  private final List<HostColumn> dictionaries;

  /**
   * @param dictionaries per column, the entries its INT ids index, or null where it holds its
   *     values
   */
  StagedBatch(ColumnBatch<HostColumn> columns, List<HostColumn> dictionaries) {
    if (dictionaries.size() != columns.columns().size()) {
      throw new IllegalArgumentException(dictionaries.size() + " dictionaries for "
          + columns.columns().size() + " columns");
    }
    this.columns = columns;
    this.dictionaries = new ArrayList<>(dictionaries);
  }

  ColumnBatch<HostColumn> columns() {
    return columns;
  }

  int rowCount() {
    return columns.rowCount();
  }

  /** The entries column {@code c}'s ids index, or null where it holds its values. */
  HostColumn dictionary(int c) {
    return dictionaries.get(c);
  }

  /** The data bytes the upload sends (the validity bitmaps and string offsets aside). */
  long dataBytes() {
    long bytes = 0;
    for (HostColumn c : columns.columns()) {
      bytes += c.dataBytes();
    }
    for (HostColumn d : dictionaries) {
      bytes += d == null ? 0 : d.dataBytes();
    }
    return bytes;
  }

  /** Rows [from, to) as a new batch of its own (with its own copy of every dictionary). */
  StagedBatch slice(int from, int to, BufferAllocator allocator) {
    ColumnBatch<HostColumn> rows = MemoryPressure.slice(columns, from, to, allocator);
    List<HostColumn> copies = new ArrayList<>(dictionaries.size());
    try {
      for (HostColumn d : dictionaries) {
        copies.add(d == null ? null : MemoryPressure.slice(d, 0, d.rowCount(), allocator));
      }
      return new StagedBatch(rows, copies);
    } catch (RuntimeException e) {
      rows.close();
      copies.stream().filter(c -> c != null).forEach(HostColumn::close);
      throw e;
    }
  }

  @Override
  public void close() {
    try {
      columns.close();
    } finally {
      dictionaries.stream().filter(d -> d != null).forEach(HostColumn::close);
    }
  }
}
