package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * {@link HashAggregateKernel} on CUDA (native-kernels/kernels/hash_aggregate.cu). Produces what
 * {@code HostHashAggregate} produces (group order aside).
 *
 * <p>The state is a device hash table (open addressing, linear probing, int32 group indexes in
 * the slots) plus per-group arrays: hash, key values and null flags, and per function a value
 * word, a high word (sums are exact 128-bit) and a seen flag. Before each batch the group arrays
 * are grown (copied into bigger ones and rehashed) so that groups + rows of the batch fit; the
 * table has twice as many slots as the group arrays have room for, so probes always end. Sums
 * overflow when the exact sum leaves int64 (SUM_INT to LONG: wraps, or the ANSI error) or the
 * result precision (SUM_DECIMAL: NULL, never an error); a SUM_INT to DOUBLE is the exact sum
 * rounded once. DOUBLE inputs of SUM_INT are whole numbers, converted exactly to int128.
 *
 * <p>STRING keys (and STRING inputs of functions) are not supported yet: {@link #open} rejects
 * them.
 */
final class CudaHashAggregate implements HashAggregateKernel {
  static final String UPDATE_KERNEL = "tessera_hash_aggregate_update";
  static final String REHASH_KERNEL = "tessera_hash_aggregate_rehash";
  static final String INIT_KERNEL = "tessera_hash_aggregate_init";
  static final String FINISH_KERNEL = "tessera_hash_aggregate_finish";

  // ---- the plan layout of hash_aggregate.cu (64-bit words) ----
  private static final int HEADER_WORDS = 8;
  private static final int COLUMN_WORDS = 12;
  // Header
  private static final int H_ROWS = 0;
  private static final int H_KEY_COUNT = 1;
  private static final int H_FUNCTION_COUNT = 2;
  private static final int H_TABLE_MASK = 3;
  private static final int H_SLOTS = 4;
  private static final int H_HASHES = 5;
  private static final int H_GROUP_COUNT = 6;
  // Key
  private static final int K_DATA = 0;
  private static final int K_VALIDITY = 1;
  private static final int K_TYPE = 2;
  private static final int K_VALUES = 3;
  private static final int K_NULLS = 4;
  // Function
  private static final int F_KIND = 0;
  private static final int F_DATA = 1;
  private static final int F_VALIDITY = 2;
  private static final int F_TYPE = 3;
  private static final int F_VALUE = 4;
  private static final int F_HIGH = 5;
  private static final int F_SEEN = 6;
  private static final int F_PRECISION = 7;
  private static final int F_RESULT_TYPE = 8;
  private static final int F_ZERO_WHEN_EMPTY = 9;

  private static final int ERROR_ROW_SHIFT = 8;
  private static final long NO_ERROR = -1L;
  private static final long ALIGN = ArenaPool.ALIGNMENT;
  /** Group indexes are int32; the table holds twice the group capacity. */
  private static final long MAX_GROUP_CAPACITY = 1L << 30;
  private static final long MIN_GROUP_CAPACITY = 1024;
  private static final int THREADS = LaunchShape.BLOCK_THREADS;

  private final CudaBackend backend;
  private final CudaDevice device;
  private final BufferAllocator staging;

  CudaHashAggregate(CudaBackend backend) {
    this.backend = backend;
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
  }

  @Override
  public Aggregation open(AggregateSpec spec, ArenaPool pool, GpuStream stream) {
    CudaStream cuda = CudaBackend.cudaStream(stream);
    for (int k = 0; k < spec.keyCount(); k++) {
      if (spec.inputTypes().get(k).isString()) {
        throw new IllegalArgumentException(
            "string keys are not supported on CUDA yet (hash aggregation key " + k + ")");
      }
    }
    for (AggregateFunction f : spec.functions()) {
      if (f.kind() != AggregateFunction.Kind.COUNT_ROWS
          && spec.inputTypes().get(f.input()).isString()) {
        throw new IllegalArgumentException(
            "string inputs of aggregates are not supported on CUDA yet (" + f + ")");
      }
      if (f.resultType().isString()) {
        throw new IllegalArgumentException("string results are not supported (" + f + ")");
      }
      if (f.kind() == AggregateFunction.Kind.SUM_INT) {
        TypeId in = spec.inputTypes().get(f.input()).id();
        TypeId out = f.resultType().id();
        boolean integral = in == TypeId.BYTE || in == TypeId.SHORT || in == TypeId.INT
            || in == TypeId.LONG;
        if (!(integral || in == TypeId.DOUBLE) || !(out == TypeId.LONG || out == TypeId.DOUBLE)) {
          throw new IllegalArgumentException("SUM_INT sums BYTE, SHORT, INT, LONG or whole-number "
              + "DOUBLE inputs into LONG or DOUBLE, not " + in + " into " + out + " (" + f + ")");
        }
      }
    }
    return new CudaAggregation(spec, pool, cuda);
  }

  private static long alignUp(long offset) {
    return (offset + ALIGN - 1) / ALIGN * ALIGN;
  }

  private static LaunchShape threadsFor(long items) {
    long blocks = Math.max(1, (items + THREADS - 1) / THREADS);
    if (blocks > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(items + " items is more than one launch can cover");
    }
    return new LaunchShape((int) blocks, THREADS, 0);
  }

  /** Byte offsets of the sections of the group buffer for a group capacity. */
  private static final class Layout {
    final long capacity;
    final long counter;
    final long hashes;
    final long[] keyValues;
    final long[] keyNulls;
    final long[] value;
    final long[] high;
    final long[] seen;
    final long size;

    Layout(long capacity, int keys, int functions) {
      this.capacity = capacity;
      long at = 0;
      counter = at;
      at = alignUp(at + Long.BYTES);
      hashes = at;
      at = alignUp(at + Long.BYTES * capacity);
      keyValues = new long[keys];
      keyNulls = new long[keys];
      for (int k = 0; k < keys; k++) {
        keyValues[k] = at;
        at = alignUp(at + Long.BYTES * capacity);
        keyNulls[k] = at;
        at = alignUp(at + capacity);
      }
      value = new long[functions];
      high = new long[functions];
      seen = new long[functions];
      for (int f = 0; f < functions; f++) {
        value[f] = at;
        at = alignUp(at + Long.BYTES * capacity);
        high[f] = at;
        at = alignUp(at + Long.BYTES * capacity);
        seen[f] = at;
        at = alignUp(at + Integer.BYTES * capacity);
      }
      size = at;
    }
  }

  private final class CudaAggregation implements Aggregation {
    private final AggregateSpec spec;
    private final ArenaPool pool;
    private final CudaStream stream;
    private final int keyCount;
    private final int functionCount;

    private Layout layout;
    private DeviceBuffer groups;
    private DeviceBuffer slots;
    private long tableCapacity;
    private long groupCount;
    private boolean closed;

    CudaAggregation(AggregateSpec spec, ArenaPool pool, CudaStream stream) {
      this.spec = spec;
      this.pool = pool;
      this.stream = stream;
      this.keyCount = spec.keyCount();
      this.functionCount = spec.functions().size();
    }

    private long planBytes() {
      return (long) Long.BYTES * (HEADER_WORDS + COLUMN_WORDS * (keyCount + functionCount));
    }

    private static void word(ArrowBuf host, long index, long value) {
      host.setLong(Long.BYTES * index, value);
    }

    /** The header and the state's pointers; column pointers are filled by the caller. */
    private void writeState(ArrowBuf host, long rows, Layout l, DeviceBuffer groupBuffer,
        DeviceBuffer slotBuffer, long tableMask) {
      host.setZero(0, planBytes());
      long g = groupBuffer.address();
      word(host, H_ROWS, rows);
      word(host, H_KEY_COUNT, keyCount);
      word(host, H_FUNCTION_COUNT, functionCount);
      word(host, H_TABLE_MASK, tableMask);
      word(host, H_SLOTS, slotBuffer == null ? 0 : slotBuffer.address());
      word(host, H_HASHES, g + l.hashes);
      word(host, H_GROUP_COUNT, g + l.counter);
      for (int k = 0; k < keyCount; k++) {
        long base = HEADER_WORDS + (long) COLUMN_WORDS * k;
        word(host, base + K_TYPE, spec.inputTypes().get(k).id().ordinal());
        word(host, base + K_VALUES, g + l.keyValues[k]);
        word(host, base + K_NULLS, g + l.keyNulls[k]);
      }
      for (int f = 0; f < functionCount; f++) {
        AggregateFunction fn = spec.functions().get(f);
        long base = HEADER_WORDS + (long) COLUMN_WORDS * (keyCount + f);
        word(host, base + F_KIND, fn.kind().ordinal());
        word(host, base + F_TYPE, fn.kind() == AggregateFunction.Kind.COUNT_ROWS
            ? TypeId.LONG.ordinal() : spec.inputTypes().get(fn.input()).id().ordinal());
        word(host, base + F_VALUE, g + l.value[f]);
        word(host, base + F_HIGH, g + l.high[f]);
        word(host, base + F_SEEN, g + l.seen[f]);
        word(host, base + F_PRECISION, fn.resultType().precision());
        word(host, base + F_RESULT_TYPE, fn.resultType().id().ordinal());
        word(host, base + F_ZERO_WHEN_EMPTY, fn.zeroWhenEmpty() ? 1 : 0);
      }
    }

    /** Makes room for {@code needed} groups (growing and rehashing), keeping the state valid. */
    private void ensureCapacity(long needed) {
      if (layout != null && needed <= layout.capacity) {
        return;
      }
      long capacity = Math.max(MIN_GROUP_CAPACITY, Long.highestOneBit(Math.max(1, needed - 1)) << 1);
      if (layout != null) {
        capacity = Math.max(capacity, layout.capacity * 2);
      }
      if (keyCount == 0) {
        capacity = 1;
      }
      if (capacity > MAX_GROUP_CAPACITY) {
        throw new IllegalStateException("the CUDA hash aggregation holds at most "
            + MAX_GROUP_CAPACITY + " groups, " + needed + " may be needed");
      }
      Layout next = new Layout(capacity, keyCount, functionCount);
      long nextTable = keyCount == 0 ? 0 : capacity * 2;
      List<AutoCloseable> temporaries = new ArrayList<>();
      DeviceBuffer nextGroups = null;
      DeviceBuffer nextSlots = null;
      boolean queued = false;
      try {
        nextGroups = DeviceBuffer.allocate(pool, next.size);
        if (nextTable > 0) {
          nextSlots = DeviceBuffer.allocate(pool, Integer.BYTES * nextTable);
        }
        DeviceBuffer plan = DeviceBuffer.allocate(pool, planBytes());
        temporaries.add(plan);
        ArrowBuf host = staging.buffer(planBytes());
        temporaries.add(host);
        writeState(host, 0, next, nextGroups, nextSlots, nextTable - 1);
        long base = nextGroups.address();
        long copied = layout == null ? 0 : groupCount;
        queued = true;
        stream.copyHostToDevice(host.memoryAddress(), plan.address(), planBytes());
        if (layout == null) {
          stream.fill(base + next.counter, Long.BYTES, (byte) 0);
        } else {
          long old = groups.address();
          stream.copyDeviceToDevice(old + layout.counter, base + next.counter, Long.BYTES);
          stream.copyDeviceToDevice(old + layout.hashes, base + next.hashes, Long.BYTES * copied);
          for (int k = 0; k < keyCount; k++) {
            stream.copyDeviceToDevice(old + layout.keyValues[k], base + next.keyValues[k],
                Long.BYTES * copied);
            stream.copyDeviceToDevice(old + layout.keyNulls[k], base + next.keyNulls[k], copied);
          }
          for (int f = 0; f < functionCount; f++) {
            stream.copyDeviceToDevice(old + layout.value[f], base + next.value[f],
                Long.BYTES * copied);
            stream.copyDeviceToDevice(old + layout.high[f], base + next.high[f],
                Long.BYTES * copied);
            stream.copyDeviceToDevice(old + layout.seen[f], base + next.seen[f],
                Integer.BYTES * copied);
          }
        }
        KernelModule kernels = device.kernels();
        if (capacity > copied) {
          kernels.launch(INIT_KERNEL, threadsFor(capacity - copied), stream, new KernelArgs()
              .address(plan.address()).i64(copied).i64(capacity));
        }
        if (nextSlots != null) {
          stream.fill(nextSlots.address(), nextSlots.size(), (byte) 0xff);
          if (copied > 0) {
            kernels.launch(REHASH_KERNEL, threadsFor(copied), stream, new KernelArgs()
                .address(base + next.hashes).i64(copied).address(nextSlots.address())
                .i64(nextTable - 1));
          }
        }
        stream.synchronize();
        queued = false;
      } catch (RuntimeException | Error e) {
        if (queued) {
          try {
            stream.synchronize();
          } catch (RuntimeException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        closeQuietly(nextGroups, e);
        closeQuietly(nextSlots, e);
        Closing.closeAll(temporaries, e);
        throw e;
      }
      Closing.closeAll(temporaries, null);
      DeviceBuffer oldGroups = groups;
      DeviceBuffer oldSlots = slots;
      groups = nextGroups;
      slots = nextSlots;
      layout = next;
      tableCapacity = nextTable;
      if (oldGroups != null) {
        oldGroups.close();
      }
      if (oldSlots != null) {
        oldSlots.close();
      }
    }

    /** Not fused yet: the filter/project kernel materialises the program's output first. */
    @Override
    public void update(Program program, ColumnBatch<DeviceColumn> input) {
      try (ColumnBatch<DeviceColumn> projected =
          backend.filterProjectKernel().run(program, input, pool, stream)) {
        update(projected);
      }
    }

    @Override
    public void update(ColumnBatch<DeviceColumn> batch) {
      checkOpen();
      if (batch.columns().size() != spec.inputTypes().size()) {
        throw new IllegalArgumentException("the aggregation reads " + spec.inputTypes().size()
            + " columns, the batch has " + batch.columns().size());
      }
      int rows = batch.rowCount();
      for (int i = 0; i < batch.columns().size(); i++) {
        DeviceColumn column = batch.column(i);
        if (column.type().id() != spec.inputTypes().get(i).id()) {
          throw new IllegalArgumentException("input column " + i + " is " + column.type()
              + ", the aggregation expects " + spec.inputTypes().get(i));
        }
        if (column.rowCount() != rows) {
          throw new IllegalArgumentException("input column " + i + " has " + column.rowCount()
              + " rows, the batch " + rows);
        }
      }
      if (rows == 0) {
        return;
      }
      ensureCapacity(keyCount == 0 ? 1 : groupCount + rows);
      List<AutoCloseable> temporaries = new ArrayList<>();
      boolean queued = false;
      try {
        DeviceBuffer plan = DeviceBuffer.allocate(pool, planBytes());
        temporaries.add(plan);
        long readbackAt = alignUp(planBytes());
        ArrowBuf host = staging.buffer(readbackAt + Long.BYTES);
        temporaries.add(host);
        writeState(host, rows, layout, groups, slots, tableCapacity - 1);
        for (int k = 0; k < keyCount; k++) {
          long base = HEADER_WORDS + (long) COLUMN_WORDS * k;
          DeviceColumn c = batch.column(k);
          word(host, base + K_DATA, c.data().address());
          word(host, base + K_VALIDITY, c.validity() == null ? 0 : c.validity().address());
        }
        for (int f = 0; f < functionCount; f++) {
          AggregateFunction fn = spec.functions().get(f);
          if (fn.kind() == AggregateFunction.Kind.COUNT_ROWS) {
            continue;
          }
          long base = HEADER_WORDS + (long) COLUMN_WORDS * (keyCount + f);
          DeviceColumn c = batch.column(fn.input());
          word(host, base + F_DATA, c.data().address());
          word(host, base + F_VALIDITY, c.validity() == null ? 0 : c.validity().address());
        }
        queued = true;
        stream.copyHostToDevice(host.memoryAddress(), plan.address(), planBytes());
        device.kernels().launch(UPDATE_KERNEL, LaunchShape.tilesFor(rows), stream,
            new KernelArgs().address(plan.address()));
        stream.copyDeviceToHost(groups.address() + layout.counter,
            host.memoryAddress() + readbackAt, Long.BYTES);
        stream.synchronize();
        queued = false;
        if (keyCount > 0) {
          long count = host.getLong(readbackAt);
          if (count < groupCount || count > layout.capacity) {
            throw new IllegalStateException(UPDATE_KERNEL + " reported " + count
                + " groups, outside [" + groupCount + ", " + layout.capacity + "]: a kernel bug");
          }
          groupCount = count;
        } else {
          groupCount = 1;
        }
      } catch (RuntimeException | Error e) {
        if (queued) {
          try {
            stream.synchronize();
          } catch (RuntimeException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        Closing.closeAll(temporaries, e);
        throw e;
      }
      Closing.closeAll(temporaries, null);
    }

    @Override
    public ColumnBatch<DeviceColumn> finish() {
      checkOpen();
      if (keyCount == 0) {
        ensureCapacity(1); // a global aggregate always has one row
        groupCount = 1;
      }
      int rows = Math.toIntExact(groupCount);
      int outputs = keyCount + functionCount;
      DeviceBuffer[] data = new DeviceBuffer[outputs];
      DeviceBuffer[] validity = new DeviceBuffer[outputs];
      ColumnType[] types = new ColumnType[outputs];
      List<AutoCloseable> temporaries = new ArrayList<>();
      boolean queued = false;
      try {
        for (int o = 0; o < outputs; o++) {
          types[o] = o < keyCount ? spec.inputTypes().get(o)
              : spec.functions().get(o - keyCount).resultType();
          data[o] = DeviceBuffer.allocate(pool, types[o].fixedDataBytes(rows));
          validity[o] = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
        }
        long[] nulls = new long[outputs];
        if (rows > 0) {
          DeviceBuffer plan = DeviceBuffer.allocate(pool, planBytes());
          temporaries.add(plan);
          long statusBytes = (long) Long.BYTES * (1 + outputs);
          DeviceBuffer status = DeviceBuffer.allocate(pool, statusBytes);
          temporaries.add(status);
          long readbackAt = alignUp(planBytes());
          ArrowBuf host = staging.buffer(readbackAt + statusBytes);
          temporaries.add(host);
          writeState(host, rows, layout, groups, slots, tableCapacity - 1);
          for (int o = 0; o < outputs; o++) {
            long base = HEADER_WORDS + (long) COLUMN_WORDS * o;
            word(host, base + (o < keyCount ? K_DATA : F_DATA), data[o].address());
            word(host, base + (o < keyCount ? K_VALIDITY : F_VALIDITY), validity[o].address());
          }
          queued = true;
          stream.copyHostToDevice(host.memoryAddress(), plan.address(), planBytes());
          for (int o = 0; o < outputs; o++) {
            stream.fill(validity[o].address(), validity[o].size(), (byte) 0);
          }
          stream.fill(status.address(), statusBytes, (byte) 0);
          stream.fill(status.address(), Long.BYTES, (byte) 0xff);
          device.kernels().launch(FINISH_KERNEL, threadsFor(rows), stream, new KernelArgs()
              .address(plan.address()).i32(spec.ansi() ? 1 : 0).address(status.address())
              .address(status.address() + Long.BYTES));
          stream.copyDeviceToHost(status.address(), host.memoryAddress() + readbackAt,
              statusBytes);
          stream.synchronize();
          queued = false;
          long error = host.getLong(readbackAt);
          if (error != NO_ERROR) {
            throw new RowErrorException(RowError.ofCode((int) (error & ((1 << ERROR_ROW_SHIFT) - 1))),
                error >>> ERROR_ROW_SHIFT);
          }
          for (int o = 0; o < outputs; o++) {
            nulls[o] = host.getLong(readbackAt + (long) Long.BYTES * (1 + o));
            if (nulls[o] < 0 || nulls[o] > rows) {
              throw new IllegalStateException(FINISH_KERNEL + " reported " + nulls[o]
                  + " nulls of " + rows + " rows: a kernel bug");
            }
          }
        }
        Closing.closeAll(temporaries, null);
        List<DeviceColumn> columns = new ArrayList<>(outputs);
        for (int o = 0; o < outputs; o++) {
          if (nulls[o] == 0) {
            DeviceBuffer unused = validity[o];
            validity[o] = null;
            unused.close();
          }
          columns.add(new DeviceColumn(types[o], rows, (int) nulls[o], data[o], validity[o], null,
              types[o].fixedDataBytes(rows)));
          data[o] = null;
          validity[o] = null;
        }
        return new ColumnBatch<>(columns, rows);
      } catch (RuntimeException | Error e) {
        if (queued) {
          try {
            stream.synchronize();
          } catch (RuntimeException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        for (int o = 0; o < outputs; o++) {
          closeQuietly(data[o], e);
          closeQuietly(validity[o], e);
        }
        Closing.closeAll(temporaries, e);
        throw e;
      }
    }

    private void checkOpen() {
      if (closed) {
        throw new IllegalStateException("the aggregation is closed");
      }
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      DeviceBuffer g = groups;
      DeviceBuffer s = slots;
      groups = null;
      slots = null;
      layout = null;
      if (g != null) {
        g.close();
      }
      if (s != null) {
        s.close();
      }
    }
  }

  private static void closeQuietly(AutoCloseable resource, Throwable failure) {
    if (resource == null) {
      return;
    }
    try {
      resource.close();
    } catch (Exception e) {
      failure.addSuppressed(e);
    }
  }
}
