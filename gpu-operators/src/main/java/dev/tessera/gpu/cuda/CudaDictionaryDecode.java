package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.kernels.DictionaryKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The CUDA {@link DictionaryKernel}: the join's gather ({@link CudaGather}, {@value
 * CudaGather#GATHER_KERNEL}) with the entries as its source column and the ids as its row
 * list, whose -1 gives NULL as an outer join's unmatched row does.
 */
final class CudaDictionaryDecode implements DictionaryKernel {
  private static final int INPUT_COLUMN_BYTES = ProgramPlan.INPUT_COLUMN_BYTES;

  private final CudaDevice device;
  private final BufferAllocator staging;

  CudaDictionaryDecode(CudaBackend backend) {
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
  }

  @Override
  public ColumnBatch<DeviceColumn> decode(List<DeviceColumn> ids, List<DeviceColumn> entries,
      int rows, ArenaPool pool, GpuStream gpuStream) {
    DictionaryKernel.check(ids, entries, rows);
    CudaStream stream = CudaBackend.cudaStream(gpuStream);
    long planBytes = (long) INPUT_COLUMN_BYTES * Math.max(1, entries.size());
    try (DeviceBuffer plan = DeviceBuffer.allocate(pool, planBytes);
        ArrowBuf host = staging.buffer(planBytes)) {
      List<CudaGather.Column> columns = new ArrayList<>(entries.size());
      for (int c = 0; c < entries.size(); c++) {
        long at = (long) INPUT_COLUMN_BYTES * c;
        ProgramPlan.writeInputColumn(host, at, entries.get(c));
        columns.add(CudaGather.Column.of(entries.get(c).type(), plan.address() + at,
            ids.get(c).data().address()));
      }
      stream.copyHostToDevice(host.memoryAddress(), plan.address(), planBytes);
      try {
        // The gather waits for its results, so the plan may go when it returns.
        return CudaGather.gather(device, staging, pool, stream, rows, columns);
      } catch (RuntimeException | Error e) {
        stream.synchronizeAfter(e); // the copy may still read the host plan
        throw e;
      }
    }
  }
}
