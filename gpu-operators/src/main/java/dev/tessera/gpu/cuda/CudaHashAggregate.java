package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.memory.ArenaPool;

/** {@link HashAggregateKernel} on CUDA (native-kernels/kernels/hash_aggregate.cu). */
final class CudaHashAggregate implements HashAggregateKernel {
  private final CudaBackend backend;

  CudaHashAggregate(CudaBackend backend) {
    this.backend = backend;
  }

  @Override
  public Aggregation open(AggregateSpec spec, ArenaPool pool, GpuStream stream) {
    throw new UnsupportedOperationException("the CUDA hash aggregation is not written yet ("
        + backend.description() + ")");
  }
}
