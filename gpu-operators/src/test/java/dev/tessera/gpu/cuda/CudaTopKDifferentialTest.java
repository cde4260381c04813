package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CUDA top-k against the host reference on large random batches (many sort tiles and merge
 * passes): every k from 1 to past a tile, one and several keys of every kind (strings, floating
 * point with NaN and -0.0, decimals, NULLs), heavy ties. One fixed-width key takes the
 * ordered-key kernels, the others compare through their columns; once k rows are held (k below a
 * batch), the later batches' candidates after the last of them are set aside. The rows must be
 * the same, in order.
 */
@RequiresCuda
class CudaTopKDifferentialTest extends CudaVersusHostTest {
  private static final int BATCHES = 4;
  private static final int ROWS = 150_000;

  /**
   * Scenario: k, key layout (0: LONG; 1: DOUBLE desc + STRING; 2: few-valued BYTE desc NULLS
   * FIRST + DECIMAL; 3: DOUBLE; 4: FLOAT desc NULLS FIRST; 5: few-valued BYTE desc, heavy ties).
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:0", "10:0", "1000:1", "1024:2", "1025:0", "5000:1", "70000:2",
      "700000:0", "1:3", "3000:3", "100:4", "70000:4", "257:5", "1024:5"})
  void matchesTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int limit = Integer.parseInt(parts[0]);
    int layout = Integer.parseInt(parts[1]);
    List<ColumnType> keyTypes = switch (layout) {
      case 0 -> List.of(ColumnType.LONG);
      case 1 -> List.of(ColumnType.DOUBLE, ColumnType.STRING);
      case 2 -> List.of(ColumnType.BYTE, ColumnType.decimal(12, 2));
      case 3 -> List.of(ColumnType.DOUBLE);
      case 4 -> List.of(ColumnType.FLOAT);
      default -> List.of(ColumnType.BYTE);
    };
    List<SortKey> keys = switch (layout) {
      case 0 -> List.of(SortKey.ascending(0));
      case 1 -> List.of(SortKey.descending(0), new SortKey(1, false, false));
      case 2 -> List.of(new SortKey(0, true, true), SortKey.ascending(1));
      case 3 -> List.of(SortKey.ascending(0));
      case 4 -> List.of(new SortKey(0, true, true));
      default -> List.of(SortKey.descending(0));
    };
    List<ColumnType> types = new ArrayList<>(keyTypes);
    types.add(ColumnType.STRING); // a payload that is not a key
    types.add(ColumnType.INT);
    TopKSpec spec = new TopKSpec(types, keys, limit);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int b = 0; b < BATCHES; b++) {
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(TestColumns.random(types.get(c), ROWS, 0.05, 1000L * b + 7L * c + layout));
      }
      batches.add(columns);
    }
    assertEquals(topK(host, hostStream, spec, batches), topK(cuda, cudaStream, spec, batches),
        scenario);
  }

  private static List<List<Object>> topK(Backend backend, GpuStream stream, TopKSpec spec,
      List<List<List<Object>>> batches) {
    try (TopKKernel.Running running = backend.topKKernel().open(spec, backend.deviceMemory(),
        stream)) {
      for (List<List<Object>> columns : batches) {
        List<HostColumn> hostColumns = new ArrayList<>();
        for (int c = 0; c < columns.size(); c++) {
          hostColumns.add(TestColumns.build(spec.columnTypes().get(c), columns.get(c),
              backend.stagingAllocator()));
        }
        try (ColumnBatch<HostColumn> h = new ColumnBatch<>(hostColumns, columns.get(0).size());
            ColumnBatch<DeviceColumn> d = ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(),
                stream)) {
          stream.synchronize();
          running.add(d);
        }
      }
      try (ColumnBatch<DeviceColumn> result = running.finish();
          ColumnBatch<HostColumn> back = ColumnTransfer.toHost(result, backend.stagingAllocator(),
              stream)) {
        List<List<Object>> rows = new ArrayList<>();
        for (int r = 0; r < back.rowCount(); r++) {
          rows.add(new ArrayList<>());
        }
        for (int c = 0; c < back.columns().size(); c++) {
          List<Object> values = TestColumns.values(spec.columnTypes().get(c), back.column(c));
          for (int r = 0; r < back.rowCount(); r++) {
            rows.get(r).add(values.get(r));
          }
        }
        return rows;
      }
    }
  }
}
