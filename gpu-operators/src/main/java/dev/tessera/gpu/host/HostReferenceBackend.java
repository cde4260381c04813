package dev.tessera.gpu.host;

import dev.tessera.gpu.join.HashJoinKernel;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.PooledBackend;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.kernels.DictionaryKernel;
import dev.tessera.gpu.kernels.ProgramKernel;
import dev.tessera.gpu.kernels.SmokeKernel;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.ChunkAllocator;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.gpu.sort.TopKKernel;
import java.util.HashMap;
import java.util.Map;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * The host reference backend (DESIGN.md §4): "device memory" is off-heap host memory with the
 * device layouts, streams run each operation at once, and operators are plain Java loops. It
 * lets the whole plugin run where there is no GPU, and is chosen only by name.
 */
public final class HostReferenceBackend extends PooledBackend {
  private static final long DEFAULT_DEVICE_CAP = 4L << 30;

  private HostReferenceBackend(RuntimeOptions options) {
    super(new ArenaPool("device memory (host reference)", offHeap("host reference device memory"),
            options.deviceMemoryCapBytes() == 0 ? DEFAULT_DEVICE_CAP
                : options.deviceMemoryCapBytes(),
            options.deviceCapSetting(), options.deviceChunkBytes()),
        new ArenaPool("staging memory (host reference)", offHeap("host reference staging memory"),
            options.pinnedMemoryCapBytes(), options.pinnedCapSetting(),
            options.pinnedChunkBytes()));
  }

  public static HostReferenceBackend open(RuntimeOptions options) {
    return new HostReferenceBackend(options);
  }

  @Override
  public BackendKind kind() {
    return BackendKind.HOST_REFERENCE;
  }

  @Override
  public String description() {
    return "host reference backend (plain Java on the CPU, not a GPU)";
  }

  @Override
  public GpuStream newStream() {
    return new HostReferenceStream();
  }

  @Override
  public SmokeKernel smokeKernel() {
    return new HostSmokeKernel();
  }

  @Override
  public ProgramKernel programKernel() {
    return new HostFilterProject();
  }

  @Override
  public HashAggregateKernel hashAggregateKernel() {
    return new HostHashAggregate();
  }

  @Override
  public HashJoinKernel hashJoinKernel() {
    return new HostHashJoin();
  }

  @Override
  public TopKKernel topKKernel() {
    return new HostTopK();
  }

  @Override
  public DictionaryKernel dictionaryKernel() {
    return new HostDictionaryDecode();
  }

  /** Off-heap chunks, over-allocated so the pool gets 256-byte aligned addresses. */
  private static ChunkAllocator offHeap(String description) {
    return new ChunkAllocator() {
      private final Map<Long, Long> rawByAligned = new HashMap<>();

      @Override
      public synchronized long allocate(long bytes) {
        long raw;
        try {
          raw = MemoryUtil.allocateMemory(bytes + ArenaPool.ALIGNMENT);
        } catch (OutOfMemoryError e) {
          throw new PoolExhaustedException("the JVM could not allocate " + bytes
              + " bytes off-heap", e);
        }
        long aligned = (raw + ArenaPool.ALIGNMENT - 1) & -ArenaPool.ALIGNMENT;
        rawByAligned.put(aligned, raw);
        return aligned;
      }

      @Override
      public synchronized void free(long address, long bytes) {
        Long raw = rawByAligned.remove(address);
        if (raw == null) {
          throw new IllegalStateException(description + ": 0x" + Long.toHexString(address)
              + " is not a chunk");
        }
        MemoryUtil.freeMemory(raw);
      }

      @Override
      public String describe() {
        return description;
      }
    };
  }
}
