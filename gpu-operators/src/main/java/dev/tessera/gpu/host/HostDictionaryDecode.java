package dev.tessera.gpu.host;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.kernels.DictionaryKernel;
import dev.tessera.gpu.memory.ArenaPool;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/** The host reference's {@link DictionaryKernel}: each id looked up in its entries. */
final class HostDictionaryDecode implements DictionaryKernel {
  @Override
  public ColumnBatch<DeviceColumn> decode(List<DeviceColumn> ids, List<DeviceColumn> entries,
      int rows, ArenaPool pool, GpuStream stream) {
    DictionaryKernel.check(ids, entries, rows);
    List<DeviceColumn> out = new ArrayList<>(ids.size());
    try {
      for (int c = 0; c < ids.size(); c++) {
        DeviceColumn dictionary = entries.get(c);
        int[] rowsOf = new int[rows];
        long idData = ids.get(c).data().address();
        for (int r = 0; r < rows; r++) {
          int id = MemoryUtil.getInt(idData + (long) Integer.BYTES * r);
          if (id < -1 || id >= dictionary.rowCount()) {
            throw new IllegalArgumentException("dictionary id " + id + " at row " + r
                + " of column " + c + " is outside its " + dictionary.rowCount() + " entries");
          }
          rowsOf[r] = id;
        }
        out.add(HostColumns.gather(dictionary, rowsOf, 0, rows, pool));
      }
    } catch (RuntimeException e) {
      out.forEach(DeviceColumn::close);
      throw e;
    }
    return new ColumnBatch<>(out, rows);
  }
}
