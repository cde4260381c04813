package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceStore;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.slf4j.Logger;

/**
 * What Tessera's operators do when a pool runs out (DESIGN.md §2, "Memory pressure is handled,
 * not reported"), in this order: split the batch and retry (each operator knows how to split
 * its own work), release what the executor keeps idle (the device store's entries no task uses:
 * join tables, cached tables' device copies) and wait for other tasks to free memory, retrying
 * after each release, or run that step on the CPU; only a single row that cannot fit fails, with
 * a message naming the setting to raise.
 *
 * <p>This class holds the shared parts: the bounded wait for other tasks, the split of a host
 * batch, and the error for one row.
 */
final class MemoryPressure {
  /** How long a task waits for another task to free memory before it gives up. */
  static final long WAIT_MILLIS = 500;
  /** The most times a task retries after other tasks freed memory, for one allocation. */
  private static final int MAX_WAITS = 200;

  private MemoryPressure() {}

  /**
   * Runs {@code attempt}; when a pool of {@code backend} runs out, releases the idle entries of
   * the executor's device store and, while other tasks hold memory of the pools, waits for them
   * to free some and retries (bounded). Rethrows the last {@link PoolExhaustedException} when
   * none of that helps.
   *
   * @param waits counted once per wait (may be null)
   */
  static <T> T waitingForOthers(Backend backend, SQLMetric waits, Supplier<T> attempt) {
    for (int tries = 0; ; tries++) {
      long deviceSeen = backend.deviceMemory().releases();
      long pinnedSeen = backend.pinnedMemory().releases();
      try {
        return attempt.get();
      } catch (PoolExhaustedException e) {
        if (tries >= MAX_WAITS || !released(backend, deviceSeen, pinnedSeen, waits)) {
          throw e;
        }
      }
    }
  }

  /**
   * After an allocation failed: frees the device store's idle entries, or waits for another task
   * to free memory. Returns whether any memory was freed since the releases counted
   * {@code deviceSeen} and {@code pinnedSeen} (so a retry may succeed).
   */
  static boolean released(Backend backend, long deviceSeen, long pinnedSeen, SQLMetric waits) {
    DeviceStore store = TesseraRuntime.deviceStoreOf(backend);
    if (store != null && store.evictIdle() > 0) {
      return true;
    }
    ArenaPool device = backend.deviceMemory();
    ArenaPool pinned = backend.pinnedMemory();
    if (device.releases() != deviceSeen || pinned.releases() != pinnedSeen) {
      return true; // something was freed while the attempt ran
    }
    if (device.bytesInUseByOtherThreads() == 0 && pinned.bytesInUseByOtherThreads() == 0) {
      return false; // nobody else holds memory: waiting would not help
    }
    if (waits != null) {
      waits.add(1);
    }
    // Waits on the device pool's releases, polling the pinned pool's.
    long deadline = System.nanoTime() + WAIT_MILLIS * 1_000_000L;
    while (System.nanoTime() < deadline) {
      if (device.awaitRelease(deviceSeen, 10) || pinned.releases() != pinnedSeen) {
        return true;
      }
      if (Thread.currentThread().isInterrupted()) {
        return false;
      }
    }
    return false;
  }

  /** Logs {@code message} at WARN once per task (per holder of {@code warned}). */
  static void warnOnce(Logger log, boolean[] warned, String message, Object... args) {
    if (!warned[0]) {
      warned[0] = true;
      log.warn(message, args);
    }
  }

  /** The error for one row that does not fit even alone. */
  static PoolExhaustedException oneRowDoesNotFit(String what, PoolExhaustedException e) {
    return new PoolExhaustedException("Tessera: a single row does not fit in memory " + what
        + ", even after waiting for other tasks. Raise " + TesseraConf.DEVICE_CAP_BYTES.key() + ": "
        + e.getMessage(), e);
  }

  /** Rows [from, to) of {@code batch}, copied into new staging columns the caller owns. */
  static ColumnBatch<HostColumn> slice(ColumnBatch<HostColumn> batch, int from, int to,
      BufferAllocator allocator) {
    List<HostColumn> columns = new ArrayList<>(batch.columns().size());
    try {
      for (HostColumn c : batch.columns()) {
        columns.add(slice(c, from, to, allocator));
      }
      return new ColumnBatch<>(columns, to - from);
    } catch (RuntimeException e) {
      columns.forEach(HostColumn::close);
      throw e;
    }
  }

  /** Rows [from, to) of {@code column} as a new column of its own. */
  static HostColumn slice(HostColumn column, int from, int to, BufferAllocator allocator) {
    try (HostColumnBuilder b = new HostColumnBuilder(column.type(), to - from, allocator)) {
      for (int r = from; r < to; r++) {
        appendValue(column, r, b);
      }
      return b.build();
    }
  }

  private static void appendValue(HostColumn c, int r, HostColumnBuilder b) {
    if (c.isNull(r)) {
      b.appendNull();
      return;
    }
    ColumnType t = c.type();
    switch (t.id()) {
      case BOOLEAN -> b.appendBoolean(c.getBoolean(r));
      case BYTE -> b.appendByte(c.getByte(r));
      case SHORT -> b.appendShort(c.getShort(r));
      case INT, DATE -> b.appendInt(c.getInt(r));
      case LONG, TIMESTAMP, DECIMAL -> b.appendLong(c.getLong(r));
      case FLOAT -> b.appendFloat(c.getFloat(r));
      case DOUBLE -> b.appendDouble(c.getDouble(r));
      case STRING -> b.appendUtf8(c.getUtf8(r));
    }
  }

  /**
   * Rows [from, to) of a device column copied into new staging buffers; {@code from} is a
   * multiple of 8, so the validity bitmap is copied from a byte boundary. For downloading a
   * batch that does not fit in pinned memory at once, in parts.
   */
  static HostColumn toHostRange(DeviceColumn c, int from, int to, BufferAllocator allocator,
      GpuStream stream) {
    if (from % 8 != 0) {
      throw new IllegalArgumentException("a range starts at a multiple of 8, not " + from);
    }
    if (c.isEncoded()) {
      throw new IllegalStateException("Tessera bug: a range of an encoded column is copied");
    }
    int rows = to - from;
    List<ArrowBuf> owned = new ArrayList<>(3);
    try {
      ArrowBuf validity = null;
      int nulls = 0;
      if (c.validity() != null && c.nullCount() > 0) {
        long bytes = Validity.bytesFor(rows);
        validity = allocator.buffer(bytes);
        owned.add(validity);
        validity.setZero(0, bytes);
        long copy = Math.min((rows + 7) / 8, c.validity().size() - from / 8);
        stream.copyDeviceToHost(c.validity().address() + from / 8, validity.memoryAddress(),
            copy);
        stream.synchronize();
        for (int r = 0; r < rows; r++) {
          if ((validity.getByte(r >>> 3) & (1 << (r & 7))) == 0) {
            nulls++;
          }
        }
        for (int r = rows; r < 8L * bytes; r++) { // bits past the range: not ours
          validity.setByte(r >>> 3, validity.getByte(r >>> 3) & ~(1 << (r & 7)));
        }
      }
      ArrowBuf data;
      ArrowBuf offsets = null;
      long dataBytes;
      if (c.type().isString()) {
        offsets = allocator.buffer(4L * (rows + 1));
        owned.add(offsets);
        stream.copyDeviceToHost(c.offsets().address() + 4L * from, offsets.memoryAddress(),
            4L * (rows + 1));
        stream.synchronize();
        int first = offsets.getInt(0);
        int last = offsets.getInt(4L * rows);
        for (int r = 0; r <= rows; r++) {
          offsets.setInt(4L * r, offsets.getInt(4L * r) - first);
        }
        dataBytes = last - first;
        data = allocator.buffer(dataBytes);
        owned.add(data);
        stream.copyDeviceToHost(c.data().address() + first, data.memoryAddress(), dataBytes);
      } else {
        int width = c.type().id().width();
        dataBytes = c.type().fixedDataBytes(rows);
        data = allocator.buffer(dataBytes);
        owned.add(data);
        stream.copyDeviceToHost(c.data().address() + (long) from * width, data.memoryAddress(),
            dataBytes);
      }
      stream.synchronize();
      if (nulls == 0 && validity != null) {
        owned.remove(validity);
        validity.close();
        validity = null;
      }
      return new HostColumn(c.type(), rows, nulls, data, validity, offsets, dataBytes);
    } catch (RuntimeException e) {
      owned.forEach(ArrowBuf::close);
      throw e;
    }
  }
}
