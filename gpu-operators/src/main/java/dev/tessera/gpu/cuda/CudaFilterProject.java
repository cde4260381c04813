package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.kernels.FilterProjectKernel;
import dev.tessera.gpu.memory.ArenaPool;

/** {@link FilterProjectKernel} on CUDA: native-kernels/kernels/filter_project.cu. */
final class CudaFilterProject implements FilterProjectKernel {
  private final CudaDevice device;

  CudaFilterProject(CudaDevice device) {
    this.device = device;
  }

  @Override
  public long lastKernelNanos() {
    return 0;
  }

  @Override
  public ColumnBatch<DeviceColumn> run(Program program, ColumnBatch<DeviceColumn> input,
      ArenaPool pool, GpuStream stream) {
    throw new UnsupportedOperationException("the CUDA filter-project kernel is being written");
  }
}
