package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.GroupMerge;
import dev.tessera.gpu.agg.MergeSpec;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The CPU side of a final (or complete) GPU hash aggregation that ran out of device memory: the
 * groups it emits early are copied off the device and merged here, with {@link MergeSpec} on the
 * host reference operators, so the GPU table can start empty; at the end the merged groups go back
 * to the device as the task's one output batch.
 *
 * <p>Memory: the host reference backend is opened at the first {@link #add} and owned here; its
 * "device" pool is off-heap host memory holding one column in transit and the final result (the
 * groups being merged live in the Java heap). Columns cross one at a time through the GPU
 * backend's pinned staging memory, so a flush needs one column's worth of it.
 */
final class CpuGroupMerge implements AutoCloseable {
  /** Off-heap memory the merge's columns may take; its name is what a pool error says. */
  private static final long HOST_CAP = 4L << 30;
  private static final String HOST_CAP_NAME = "the CPU merge's " + (HOST_CAP >> 30)
      + " GiB of off-heap memory (fixed)";

  private final AggregateSpec spec;
  private final Optional<String> whyNot;
  private final Backend device;
  private final GpuStream deviceStream;
  private Backend host;
  private GpuStream hostStream;
  private GroupMerge merge;
  /** The merged groups (on the host backend) while they go to the device in parts. */
  private ColumnBatch<DeviceColumn> merged;
  private int mergedFrom;
  private int partRows = Integer.MAX_VALUE;
  private int splits;

  /**
   * @param spec the GPU aggregation whose groups are merged
   * @param device the GPU backend (its staging allocator and device pool carry columns across)
   * @param deviceStream the task's stream on {@code device}
   */
  CpuGroupMerge(AggregateSpec spec, Backend device, GpuStream deviceStream) {
    this.spec = spec;
    this.whyNot = MergeSpec.whyNot(spec);
    this.device = device;
    this.deviceStream = deviceStream;
  }

  /** Why this aggregation's groups cannot be merged, or empty when they can. */
  Optional<String> whyNot() {
    return whyNot;
  }

  /** Whether groups were added (and {@link #finish} is the task's output). */
  boolean started() {
    return merge != null;
  }

  /** Group rows added so far. */
  long rowsAdded() {
    return merge == null ? 0 : merge.rowsAdded();
  }

  /** Copies {@code groups} (still owned by the caller) off the device and merges them. */
  void add(ColumnBatch<DeviceColumn> groups) {
    if (merge == null) {
      open();
    }
    try (ColumnBatch<DeviceColumn> onHost = copy(groups, device.stagingAllocator(),
        deviceStream, host.deviceMemory(), hostStream)) {
      merge.add(onHost);
    }
  }

  /**
   * The merged groups, as device columns the caller owns: the aggregation's output.
   *
   * @throws PoolExhaustedException naming the settings when they do not fit in device memory
   */
  ColumnBatch<DeviceColumn> finish() {
    if (merge == null) {
      throw new IllegalStateException("Tessera bug: finishing a CPU merge that got no groups");
    }
    if (merged == null) {
      merged = merge.finish();
      mergedFrom = 0;
    }
    int total = merged.rowCount();
    while (true) {
      int to = (int) Math.min(total, (long) mergedFrom + partRows);
      try {
        ColumnBatch<DeviceColumn> part;
        if (mergedFrom == 0 && to == total) {
          part = copy(merged, device.stagingAllocator(), hostStream, device.deviceMemory(),
              deviceStream);
        } else {
          part = copyRange(mergedFrom, to);
        }
        mergedFrom = to;
        return part;
      } catch (PoolExhaustedException e) {
        if (to - mergedFrom <= 8) {
          throw new PoolExhaustedException("The GPU hash aggregation merged its groups on the"
              + " CPU after running out of device memory, but even a few of the " + total
              + " merged groups do not fit in device memory. Raise "
              + TesseraConf.DEVICE_CAP_BYTES.key() + ", or run the aggregation on the CPU with "
              + TesseraConf.execEnabledKey("HashAggregateExec") + "=false", e);
        }
        partRows = Math.max(8, ((to - mergedFrom) / 2) & ~7);
        splits++;
      }
    }
  }

  /** Whether {@link #finish} has more parts of the merged groups to give. */
  boolean hasMoreParts() {
    return merged != null && mergedFrom < merged.rowCount();
  }

  /** How many times the merged groups' part was halved. */
  int splits() {
    return splits;
  }

  /** Merged groups [from, to) on the device, a column at a time through staging memory. */
  private ColumnBatch<DeviceColumn> copyRange(int from, int to) {
    List<DeviceColumn> copied = new ArrayList<>(merged.columns().size());
    try {
      for (DeviceColumn column : merged.columns()) {
        try (HostColumn staged = MemoryPressure.toHostRange(column, from, to,
            device.stagingAllocator(), hostStream)) {
          copied.add(ColumnTransfer.toDeviceAsync(staged, device.deviceMemory(), deviceStream));
          deviceStream.synchronize();
        }
      }
      return new ColumnBatch<>(copied, to - from);
    } catch (RuntimeException e) {
      copied.forEach(DeviceColumn::close);
      throw e;
    }
  }

  private void open() {
    if (whyNot.isPresent()) {
      throw new IllegalStateException("Tessera bug: merging groups that cannot be merged: "
          + whyNot.get());
    }
    RuntimeOptions options = new RuntimeOptions(0, HOST_CAP, RuntimeOptions.MiB,
        64 * RuntimeOptions.MiB, RuntimeOptions.MiB, HOST_CAP_NAME, HOST_CAP_NAME);
    host = Backends.open(BackendKind.HOST_REFERENCE, options);
    hostStream = host.newStream();
    merge = new GroupMerge(MergeSpec.of(spec), host.hashAggregateKernel(),
        host.programKernel(), host.deviceMemory(), hostStream);
  }

  /**
   * Copies {@code batch} from one backend's memory to another's, a column at a time through
   * staging buffers of {@code staging}, so at most one column is staged at once.
   */
  private static ColumnBatch<DeviceColumn> copy(ColumnBatch<DeviceColumn> batch,
      BufferAllocator staging, GpuStream from, ArenaPool to,
      GpuStream toStream) {
    List<DeviceColumn> copied = new ArrayList<>(batch.columns().size());
    try {
      for (DeviceColumn column : batch.columns()) {
        try (HostColumn staged = ColumnTransfer.toHost(column, staging, from)) {
          copied.add(ColumnTransfer.toDeviceAsync(staged, to, toStream));
          toStream.synchronize(); // the staged column is closed next
        }
      }
      return new ColumnBatch<>(copied, batch.rowCount());
    } catch (RuntimeException e) {
      copied.forEach(DeviceColumn::close);
      throw e;
    }
  }

  @Override
  public void close() {
    if (merged != null) {
      merged.close();
      merged = null;
    }
    try (Backend b = host; GpuStream s = hostStream; GroupMerge m = merge) {
      merge = null;
      hostStream = null;
      host = null;
    }
  }
}
