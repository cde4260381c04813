package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.DeviceBuffer;

/** {@link SmokeKernel} as the tile kernel tessera_smoke_axpb_sum. */
final class CudaSmokeKernel implements SmokeKernel {
  static final String KERNEL = "tessera_smoke_axpb_sum";
  private final CudaDevice device;

  CudaSmokeKernel(CudaDevice device) {
    this.device = device;
  }

  @Override
  public void axpbSum(GpuStream stream, DeviceBuffer x, DeviceBuffer y, long count, long a, long b,
      DeviceBuffer sum) {
    SmokeKernel.checkSizes(x, y, count, sum);
    if (count == 0) {
      return;
    }
    device.kernels().launch(KERNEL, LaunchShape.tilesFor(count), CudaBackend.cudaStream(stream),
        new KernelArgs().address(x.address()).address(y.address()).i64(count).i64(a).i64(b)
            .address(sum.address()));
  }
}
