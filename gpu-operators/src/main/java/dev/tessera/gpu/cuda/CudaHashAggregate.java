package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.codegen.AggregateUpdateGenerator;
import dev.tessera.gpu.codegen.CodeGroups;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.codegen.KernelFeatures;
import dev.tessera.gpu.codegen.LocalTableLayout;
import dev.tessera.gpu.codegen.LocalTableSize;
import dev.tessera.gpu.codegen.ProgramWords;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import dev.tessera.gpu.memory.PoolExhaustedException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link HashAggregateKernel} on CUDA (native-kernels/kernels/hash_aggregate.cu). Produces what
 * {@code HostHashAggregate} produces (group order aside).
 *
 * <p>The state is a device hash table (open addressing, linear probing, an int32 group index and
 * that group's hash in each slot) plus per-group arrays: hash, key values and null flags (string
 * keys: an offset into a device key heap and a byte length), and per function a value word, a high
 * word (sums are exact 128-bit) and a seen flag. Before each batch the group arrays are grown
 * (copied into bigger ones and rehashed) so that groups + rows of the batch fit, and the key heap
 * is grown (copied: groups hold offsets relative to its base) so that every string key byte the
 * batch may insert fits; the table has twice as many slots as the group arrays have room for, so
 * probes always end. Sums overflow when the exact sum leaves int64 (SUM to LONG: wraps, or the ANSI
 * error) or the result precision (SUM_DECIMAL: NULL, never an error); a SUM to DOUBLE is the exact
 * sum rounded once. DOUBLE inputs of SUM are whole numbers, converted exactly to int128.
 *
 * <p>Every update is the fused kernel: {@link #update(ColumnBatch)} runs it with the identity
 * program, so there is one code path. Each block pre-aggregates in a small shared-memory table
 * (see {@link LocalTableSize}) before it touches the global accumulators; a generated kernel with
 * one fixed-width key finds its entries there by key, and a row whose key its block holds skips
 * the global table (codegen's LocalKeyTable); such a kernel runs one block a multiprocessor
 * whose table takes most of its shared memory (see {@code updateShape}). With small dense
 * integer keys (seen in the first batch's groups) a direct group map, Crystal's SSB group-by,
 * sits in front of the hash table (see {@code decideDirect}).
 *
 * <p>STRING inputs of functions are not supported (MIN/MAX of strings is outside the contract).
 */
final class CudaHashAggregate implements HashAggregateKernel {
  private static final Logger LOG = LoggerFactory.getLogger(CudaHashAggregate.class);
  static final String UPDATE_KERNEL = "tessera_hash_aggregate_update";
  static final String REHASH_KERNEL = "tessera_hash_aggregate_rehash";
  static final String INIT_KERNEL = "tessera_hash_aggregate_init";
  static final String FINISH_KERNEL = "tessera_hash_aggregate_finish";

  // ---- the plan layout of hash_aggregate.cu (64-bit words) ----
  private static final int HEADER_WORDS = 16;
  private static final int COLUMN_WORDS = 12;
  // Header
  private static final int H_ROWS = 0;
  private static final int H_KEY_COUNT = 1;
  private static final int H_FUNCTION_COUNT = 2;
  private static final int H_TABLE_MASK = 3;
  private static final int H_SLOTS = 4;
  private static final int H_HASHES = 5;
  private static final int H_GROUP_COUNT = 6;
  private static final int H_HEAP = 7;
  private static final int H_HEAP_USED = 8;
  private static final int H_HEAP_CAPACITY = 9;
  private static final int H_OUTPUT_REGISTERS = 10;
  private static final int H_OUTPUT_COUNT = 11;
  private static final int H_LOCAL_ENTRIES = 12;
  private static final int H_DIRECT = 13;
  // Key
  private static final int K_DATA = 0;
  private static final int K_VALIDITY = 1;
  private static final int K_TYPE = 2;
  private static final int K_VALUES = 3;
  private static final int K_NULLS = 4;
  private static final int K_REGISTER = 5;
  private static final int K_LENGTHS = 6;
  private static final int K_STRING_LENGTHS = 7;
  private static final int K_STRING_SOURCES = 8;
  private static final int K_DIRECT_MIN = 9;
  private static final int K_DIRECT_SPAN = 10;
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
  private static final int F_REGISTER = 10;
  /** Which of its words a lean per-block table holds (LocalTableLayout.tableWords). */
  private static final int F_TABLE_WORDS = 11;

  /**
   * The direct group map: decided once, from the groups after the first batch, when there are at
   * most this many (their keys are read back) ...
   */
  private static final long DIRECT_DECISION_MAX_GROUPS = 1 << 16;
  /** ... and the key tuples' range has at most this many slots (int32 each) ... */
  private static final long DIRECT_MAX_SLOTS = 1 << 22;
  /** ... and at most this many slots per group (dense). */
  private static final long DIRECT_SLOTS_PER_GROUP = 64;

  private static final int ERROR_ROW_SHIFT = 8;
  private static final long NO_ERROR = -1L;
  /** Group indexes are int32; the table holds twice the group capacity. */
  private static final long MAX_GROUP_CAPACITY = 1L << 30;
  private static final long MIN_GROUP_CAPACITY = 1024;
  private static final long MIN_HEAP_CAPACITY = 64 << 10;
  /** Offsets of a string column are int32 (Arrow's layout). */
  private static final long MAX_STRING_BYTES = Integer.MAX_VALUE;
  private static final int THREADS = LaunchShape.BLOCK_THREADS;
  /** program.cuh struct InputColumn (CudaFilterProject writes the same layout). */

  private final CudaBackend backend;
  private final CudaDevice device;
  private final BufferAllocator staging;
  /** Whether updates run the pipeline's generated kernel where there is one. */
  private final boolean codegen;

  CudaHashAggregate(CudaBackend backend) {
    this.backend = backend;
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
    this.codegen = backend.codegen();
  }

  @Override
  public Aggregation open(AggregateSpec spec, ArenaPool pool, GpuStream stream) {
    CudaStream cuda = CudaBackend.cudaStream(stream);
    for (AggregateFunction f : spec.functions()) {
      if (f.kind() != AggregateFunction.Kind.COUNT_ROWS
          && spec.inputTypes().get(f.input()).isString()) {
        throw new IllegalArgumentException(
            "string inputs of aggregates are not supported on CUDA (" + f + ")");
      }
      if (f.resultType().isString()) {
        throw new IllegalArgumentException("string results are not supported (" + f + ")");
      }
      if (f.kind() == AggregateFunction.Kind.SUM) {
        TypeId in = spec.inputTypes().get(f.input()).id();
        TypeId out = f.resultType().id();
        boolean integral = in == TypeId.BYTE || in == TypeId.SHORT || in == TypeId.INT
            || in == TypeId.LONG;
        if (!(integral || in == TypeId.DOUBLE) || !(out == TypeId.LONG || out == TypeId.DOUBLE)) {
          throw new IllegalArgumentException("SUM sums BYTE, SHORT, INT, LONG or whole-number "
              + "DOUBLE inputs into LONG or DOUBLE, not " + in + " into " + out + " (" + f + ")");
        }
      }
    }
    return new CudaAggregation(spec, pool, cuda);
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
    /** The device counters: group count, then bytes of the key heap in use. */
    static final long COUNTERS_BYTES = 2L * Long.BYTES;
    /**
     * An update's status, right after the counters so that one copy reads both back: the first
     * row error (NO_ERROR where none), then whether the key heap overflowed (0: no). Armed once
     * and again only after an update reported something: an update that reports nothing leaves
     * it as it was, so it needs no fill before each launch.
     */
    static final long STATUS_BYTES = 2L * Long.BYTES;
    /** What an update reads back: the counters and the status. */
    static final long READBACK_BYTES = COUNTERS_BYTES + STATUS_BYTES;

    final long capacity;
    final long counters;
    final long status;
    final long hashes;
    final long[] keyValues;
    final long[] keyNulls;
    final long[] keyLengths; // string keys only (-1 otherwise)
    final long[] value;
    final long[] high;
    final long[] seen;
    final long size;

    Layout(long capacity, List<ColumnType> keyTypes, int functions) {
      this.capacity = capacity;
      int keys = keyTypes.size();
      Sections s = new Sections();
      counters = s.add(READBACK_BYTES);
      status = counters + COUNTERS_BYTES;
      hashes = s.add(Long.BYTES * capacity);
      keyValues = new long[keys];
      keyNulls = new long[keys];
      keyLengths = new long[keys];
      for (int k = 0; k < keys; k++) {
        keyValues[k] = s.add(Long.BYTES * capacity);
        keyNulls[k] = s.add(capacity);
        keyLengths[k] = keyTypes.get(k).isString() ? s.add(Integer.BYTES * capacity) : -1;
      }
      value = new long[functions];
      high = new long[functions];
      seen = new long[functions];
      for (int f = 0; f < functions; f++) {
        value[f] = s.add(Long.BYTES * capacity);
        high[f] = s.add(Long.BYTES * capacity);
        seen[f] = s.add(Integer.BYTES * capacity);
      }
      size = s.size();
    }
  }

  /**
   * For tests: every slot of {@code aggregation}'s group table then reads its hash as
   * kUnknownHash, as a relaxed reader may see a slot whose group is published before the hash
   * written ahead of it (hash_aggregate.cuh Slot); the next updates must find each such group by
   * its keys. {@code aggregation} must be one this kernel opened.
   */
  static void forgetSlotHashes(Aggregation aggregation) {
    ((CudaAggregation) aggregation).forgetSlotHashes();
  }

  private final class CudaAggregation implements Aggregation {
    private final AggregateSpec spec;
    private final ArenaPool pool;
    private final CudaStream stream;
    private final int keyCount;
    private final int functionCount;
    private final int localEntries;
    private final boolean stringKeys;

    private Layout layout;
    private DeviceBuffer groups;
    private DeviceBuffer slots;
    private long tableCapacity;
    private long groupCount;
    /**
     * Groups [0, initializedTo) have their accumulators set (at their identities, or holding what
     * was added); the others hold whatever the pool had. A generated keyed update sets each group
     * it inserts (GroupedAggregateEmitter); before the interpreter kernel runs, the init kernel
     * sets the rest, so growing needs to set nothing a generated kernel will not.
     */
    private long initializedTo;
    /** The key heap (string keys only) and the bytes of it in use (the device counter's copy). */
    private DeviceBuffer heap;
    private long heapUsed;
    /** The direct group map (null: none), per key its range's minimum and span (+1 for NULL). */
    private DeviceBuffer direct;
    private long[] directMin;
    private long[] directSpan;
    /** Whether the direct map and the slices (decided when the second batch comes) are. */
    private boolean secondBatchDecided;
    /**
     * Among how many blocks of a row group a generated kernel slices the groups (1: none;
     * {@link GroupSlices}).
     */
    private int slices = 1;
    /** Whether work queued on the arrays may still run (close waits for it before freeing). */
    private boolean unsynchronized;
    /** Whether a batch is in the groups: the direct map is decided when the next one comes. */
    private boolean batchAdded;
    /** The identity program of the last batch's column types (update(batch)). */
    private Program identity;
    /** What the last update spent generating and compiling its kernel. */
    private long lastCompileNanos;

    @Override
    public long lastCompileNanos() {
      return lastCompileNanos;
    }
    private boolean closed;

    CudaAggregation(AggregateSpec spec, ArenaPool pool, CudaStream stream) {
      this.spec = spec;
      this.pool = pool;
      this.stream = stream;
      this.keyCount = spec.keyCount();
      this.functionCount = spec.functions().size();
      // Sized for the generated kernel where there may be one (the interpreter kernel, should
      // the pipeline fall back, leaves the keys' bytes unused).
      this.localEntries = LocalTableSize.entries(spec,
          codegen ? AggregateUpdateGenerator.localKeyBytes(spec, 1, false, false) : 0);
      this.stringKeys = spec.keyTypes().stream().anyMatch(ColumnType::isString);
    }

    private long planBytes() {
      return (long) Long.BYTES * (HEADER_WORDS + COLUMN_WORDS * (keyCount + functionCount));
    }

    private static void word(ArrowBuf host, long index, long value) {
      host.setLong(Long.BYTES * index, value);
    }

    private static long keyBase(int k) {
      return HEADER_WORDS + (long) COLUMN_WORDS * k;
    }

    private long functionBase(int f) {
      return HEADER_WORDS + (long) COLUMN_WORDS * (keyCount + f);
    }

    /**
     * The header and the state's pointers; per-call columns are filled by the caller. {@code
     * entries}: the per-block table's (the update's launch may size its own).
     */
    private void writeState(ArrowBuf host, long rows, Layout l, DeviceBuffer groupBuffer,
        DeviceBuffer slotBuffer, long tableMask, int entries) {
      host.setZero(0, planBytes());
      long g = groupBuffer.address();
      word(host, H_ROWS, rows);
      word(host, H_KEY_COUNT, keyCount);
      word(host, H_FUNCTION_COUNT, functionCount);
      word(host, H_TABLE_MASK, tableMask);
      word(host, H_SLOTS, slotBuffer == null ? 0 : slotBuffer.address());
      word(host, H_HASHES, g + l.hashes);
      word(host, H_GROUP_COUNT, g + l.counters);
      word(host, H_HEAP, heap == null ? 0 : heap.address());
      word(host, H_HEAP_USED, g + l.counters + Long.BYTES);
      word(host, H_HEAP_CAPACITY, heap == null ? 0 : heap.size());
      word(host, H_LOCAL_ENTRIES, entries);
      word(host, H_DIRECT, direct == null ? 0 : direct.address());
      for (int k = 0; k < keyCount; k++) {
        long base = keyBase(k);
        if (direct != null) {
          word(host, base + K_DIRECT_MIN, directMin[k]);
          word(host, base + K_DIRECT_SPAN, directSpan[k]);
        }
        word(host, base + K_TYPE, spec.inputTypes().get(k).id().ordinal());
        word(host, base + K_VALUES, g + l.keyValues[k]);
        word(host, base + K_NULLS, g + l.keyNulls[k]);
        word(host, base + K_LENGTHS, l.keyLengths[k] < 0 ? 0 : g + l.keyLengths[k]);
      }
      for (int f = 0; f < functionCount; f++) {
        AggregateFunction fn = spec.functions().get(f);
        long base = functionBase(f);
        word(host, base + F_KIND, fn.kind().ordinal());
        word(host, base + F_TYPE, fn.kind() == AggregateFunction.Kind.COUNT_ROWS
            ? TypeId.LONG.ordinal() : spec.inputTypes().get(fn.input()).id().ordinal());
        word(host, base + F_VALUE, g + l.value[f]);
        word(host, base + F_HIGH, g + l.high[f]);
        word(host, base + F_SEEN, g + l.seen[f]);
        word(host, base + F_PRECISION, fn.resultType().precision());
        word(host, base + F_RESULT_TYPE, fn.resultType().id().ordinal());
        word(host, base + F_ZERO_WHEN_EMPTY, fn.zeroWhenEmpty() ? 1 : 0);
        word(host, base + F_REGISTER, -1);
        word(host, base + F_TABLE_WORDS, 0);
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
      Layout next = new Layout(capacity, spec.keyTypes(), functionCount);
      long copied = layout == null ? 0 : groupCount;
      long nextTable = keyCount == 0 ? 0 : capacity * 2;
      List<AutoCloseable> temporaries = new ArrayList<>();
      DeviceBuffer nextGroups = null;
      DeviceBuffer nextSlots = null;
      boolean queued = false;
      try {
        nextGroups = DeviceBuffer.allocate(pool, next.size);
        if (nextTable > 0) {
          nextSlots = DeviceBuffer.allocate(pool,
              (long) AggregateUpdateGenerator.GROUP_SLOT_BYTES * nextTable);
        }
        boolean initializes = keyCount == 0 && capacity > copied; // the group no update inserts
        long planAddress = 0;
        queued = true;
        if (initializes) {
          DeviceBuffer plan = DeviceBuffer.allocate(pool, planBytes());
          temporaries.add(plan);
          ArrowBuf host = staging.buffer(planBytes());
          temporaries.add(host);
          writeState(host, 0, next, nextGroups, nextSlots, nextTable - 1, localEntries);
          planAddress = plan.address();
          stream.copyHostToDevice(host.memoryAddress(), planAddress, planBytes());
        }
        long base = nextGroups.address();
        if (layout == null) {
          stream.fill(base + next.counters, Layout.COUNTERS_BYTES, (byte) 0);
          armStatus(base + next.status);
        } else {
          copyGroups(groups.address(), layout, base, next, copied);
        }
        KernelModule kernels = device.kernels();
        if (initializes) {
          kernels.launch(INIT_KERNEL, threadsFor(capacity - copied), stream, new KernelArgs()
              .address(planAddress).i64(copied).i64(capacity));
        }
        if (nextSlots != null) {
          // every slot kEmpty, its hash kUnknownHash
          stream.fill(nextSlots.address(), nextSlots.size(), (byte) 0xff);
          if (copied > 0) {
            kernels.launch(REHASH_KERNEL, threadsFor(copied), stream, new KernelArgs()
                .address(base + next.hashes).i64(copied).address(nextSlots.address())
                .i64(nextTable - 1));
          }
        }
        // Work on this stream runs in order: the next update follows it. Waiting is needed only
        // before freeing what the queued work reads (the plan, its staging, the old arrays).
        if (!temporaries.isEmpty() || layout != null) {
          stream.synchronize();
        } else {
          unsynchronized = true;
        }
        queued = false;
      } catch (RuntimeException | Error e) {
        if (queued) {
          stream.synchronizeAfter(e);
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
      initializedTo = keyCount == 0 ? capacity : copied;
      tableCapacity = nextTable;
      if (oldGroups != null) {
        oldGroups.close();
      }
      if (oldSlots != null) {
        oldSlots.close();
      }
    }

    /**
     * Queues the fills that set an update's status (at {@code status}) to "nothing reported".
     */
    private void armStatus(long status) {
      stream.fill(status, Long.BYTES, (byte) 0xff); // NO_ERROR
      stream.fill(status + Long.BYTES, Long.BYTES, (byte) 0);
    }

    /**
     * Queues the copy of groups [0, count) (and the counters and status) from one layout to
     * another.
     */
    private void copyGroups(long from, Layout old, long to, Layout next, long count) {
      stream.copyDeviceToDevice(from + old.counters, to + next.counters, Layout.READBACK_BYTES);
      stream.copyDeviceToDevice(from + old.hashes, to + next.hashes, Long.BYTES * count);
      for (int k = 0; k < keyCount; k++) {
        stream.copyDeviceToDevice(from + old.keyValues[k], to + next.keyValues[k],
            Long.BYTES * count);
        stream.copyDeviceToDevice(from + old.keyNulls[k], to + next.keyNulls[k], count);
        if (old.keyLengths[k] >= 0) {
          stream.copyDeviceToDevice(from + old.keyLengths[k], to + next.keyLengths[k],
              Integer.BYTES * count);
        }
      }
      for (int f = 0; f < functionCount; f++) {
        stream.copyDeviceToDevice(from + old.value[f], to + next.value[f], Long.BYTES * count);
        stream.copyDeviceToDevice(from + old.high[f], to + next.high[f], Long.BYTES * count);
        stream.copyDeviceToDevice(from + old.seen[f], to + next.seen[f], Integer.BYTES * count);
      }
    }

    /**
     * Makes room in the key heap for {@code bytes} more (growing it by copy: groups hold offsets
     * relative to its base, so nothing else changes).
     */
    private void ensureHeap(long bytes) {
      long needed = heapUsed + bytes;
      if (heap != null && needed <= heap.size()) {
        return;
      }
      long capacity = Math.max(MIN_HEAP_CAPACITY, needed);
      if (heap != null) {
        capacity = Math.max(capacity, heap.size() * 2);
      }
      DeviceBuffer next = DeviceBuffer.allocate(pool, capacity);
      if (heap != null && heapUsed > 0) {
        try {
          stream.copyDeviceToDevice(heap.address(), next.address(), heapUsed);
          stream.synchronize();
        } catch (RuntimeException | Error e) {
          stream.synchronizeAfter(e);
          closeQuietly(next, e);
          throw e;
        }
      }
      DeviceBuffer old = heap;
      heap = next;
      if (old != null) {
        old.close();
      }
    }

    /**
     * The most key heap bytes one batch can insert, for each string key: at most one new group
     * per row, whose key bytes come from one of the input's string columns or the program's
     * string pool (string registers only point into those). With a single key, each distinct
     * string is inserted once, so each constant counts once; otherwise each row may copy the
     * longest constant. Each group inserted pads its bytes to a multiple of
     * AggregateUpdateGenerator.KEY_HEAP_ALIGNMENT.
     */
    private long heapBound(Program program, List<JoinTable> tables,
        ColumnBatch<DeviceColumn> input) {
      if (!stringKeys) {
        return 0;
      }
      long columnBytes = 0;
      for (DeviceColumn c : input.columns()) {
        if (c.type().isString()) {
          columnBytes += c.dataBytes();
        }
      }
      long constantBytes = keyCount == 1 ? stringConstantBytes(program)
          : Math.multiplyExact((long) input.rowCount(), longestStringConstant(program));
      long padding =
          (AggregateUpdateGenerator.KEY_HEAP_ALIGNMENT - 1) * (long) input.rowCount();
      long perKey = Math.addExact(Math.addExact(columnBytes, constantBytes),
          Math.addExact(joinPayloadBytes(tables, input.rowCount()), padding));
      long keys = spec.keyTypes().stream().filter(ColumnType::isString).count();
      return Math.multiplyExact(perKey, keys);
    }

    /**
     * Key bytes the batch may take from join tables' string payloads (LOAD_BUILD): with one key,
     * each distinct payload string at most once (a group is inserted once); with several, a
     * payload string per row, as long as the longest.
     */
    private long joinPayloadBytes(List<JoinTable> tables, long rows) {
      long bytes = 0;
      for (JoinTable table : tables) {
        CudaJoinTable cuda = CudaJoinTable.of(table);
        bytes = Math.addExact(bytes, keyCount == 1 ? cuda.stringPayloadBytes()
            : Math.multiplyExact(rows, cuda.longestStringPayload()));
      }
      return bytes;
    }

    @Override
    public void update(ColumnBatch<DeviceColumn> batch) {
      checkOpen();
      if (batch.columns().size() != spec.inputTypes().size()) {
        throw new IllegalArgumentException("the aggregation reads " + spec.inputTypes().size()
            + " columns, the batch has " + batch.columns().size());
      }
      List<ColumnType> types = new ArrayList<>(batch.columns().size());
      for (int i = 0; i < batch.columns().size(); i++) {
        types.add(batch.column(i).type());
      }
      if (identity == null || !identity.inputTypes().equals(types)) {
        identity = ProgramBuilder.identity(types, spec.ansi());
      }
      update(identity, batch);
    }

    @Override
    public void update(Program program, List<JoinTable> tables,
        ColumnBatch<DeviceColumn> input) {
      checkOpen();
      checkProgram(program, input);
      ProgramChecks.check(program);
      ProgramChecks.checkTables(program, tables);
      int rows = input.rowCount();
      if (rows == 0) {
        return;
      }
      if (batchAdded && !secondBatchDecided) {
        secondBatchDecided = true;
        slices = decideSlices(program, input);
        try {
          decideDirect();
        } catch (PoolExhaustedException | OutOfMemoryException e) {
          // The map only speeds the batches up, so under memory pressure there is none.
          LOG.debug("Tessera: no direct group map (memory is short): {}", e.getMessage());
        }
      }
      ensureCapacity(keyCount == 0 ? 1 : groupCount + rows);
      if (stringKeys) {
        ensureHeap(heapBound(program, tables, input));
      }
      new Update(program, tables, input).run();
      batchAdded = true;
    }

    /**
     * Crystal's SSB group-by (see hash_aggregate.cu, "the direct group map"): decided when the
     * second batch comes (an aggregation of one batch has no use for it), from the first batch's
     * groups: when every key is an integer and the groups' key tuples span a small dense range,
     * a map from each tuple of the range to its group goes in front of the hash table. Later
     * batches may leave the range: their rows outside it use the hash table, which still holds
     * every group.
     */
    private void decideDirect() {
      if (keyCount == 0 || groupCount == 0 || groupCount > DIRECT_DECISION_MAX_GROUPS) {
        return;
      }
      if (!spec.directMapKeys()) {
        return;
      }
      long[] min = new long[keyCount];
      long[] span = new long[keyCount];
      if (!readKeyRanges(min, span)) {
        return;
      }
      long slots = 1;
      for (long s : span) {
        slots *= s; // each factor and the product stay <= DIRECT_MAX_SLOTS: no overflow
        if (slots > DIRECT_MAX_SLOTS) {
          return;
        }
      }
      if (slots > DIRECT_SLOTS_PER_GROUP * Math.max(groupCount, 1024)) {
        return;
      }
      DeviceBuffer map = DeviceBuffer.allocate(pool, Integer.BYTES * slots);
      try {
        stream.fill(map.address(), map.size(), (byte) 0xff); // every slot kEmpty (-1)
        stream.synchronize();
      } catch (RuntimeException | Error e) {
        stream.synchronizeAfter(e);
        closeQuietly(map, e);
        throw e;
      }
      direct = map;
      directMin = min;
      directSpan = span;
    }

    /**
     * The slices for the groups the first batch made ({@link GroupSlices#forGroups}), in
     * per-block tables of a kernel that fills a multiprocessor; 1 where updates run no generated
     * kernel. Whether a batch's kernel may slice its groups is its pipeline's ({@link
     * AggregateUpdateGenerator#slicesGroups}).
     */
    private int decideSlices(Program program, ColumnBatch<DeviceColumn> input) {
      if (!codegen || keyCount == 0) {
        return 1;
      }
      List<InputSpec> inputs = input.columns().stream().map(InputSpec::of).toList();
      int entries = AggregateUpdateGenerator.slicedTableEntries(spec,
          LocalTableLayout.of(program, spec, inputs, true),
          device.generated().features().shared());
      return GroupSlices.forGroups(groupCount, entries, device.multiprocessors());
    }

    /**
     * Reads the groups' keys back and fills each key's minimum and span (values of its range + 1
     * for NULL); false when a range is too wide (more than DIRECT_MAX_SLOTS values).
     */
    private boolean readKeyRanges(long[] min, long[] span) {
      int groupsNow = (int) groupCount;
      long perKey = (long) Long.BYTES * groupsNow + groupsNow;
      try (ArrowBuf host = staging.buffer(perKey * keyCount)) {
        try {
          for (int k = 0; k < keyCount; k++) {
            long at = host.memoryAddress() + perKey * k;
            stream.copyDeviceToHost(groups.address() + layout.keyValues[k], at,
                (long) Long.BYTES * groupsNow);
            stream.copyDeviceToHost(groups.address() + layout.keyNulls[k],
                at + (long) Long.BYTES * groupsNow, groupsNow);
          }
          stream.synchronize();
        } catch (RuntimeException | Error e) {
          stream.synchronizeAfter(e);
          throw e;
        }
        for (int k = 0; k < keyCount; k++) {
          long lo = Long.MAX_VALUE;
          long hi = Long.MIN_VALUE;
          for (int g = 0; g < groupsNow; g++) {
            if (host.getByte(perKey * k + (long) Long.BYTES * groupsNow + g) != 0) {
              continue; // NULL
            }
            long v = host.getLong(perKey * k + (long) Long.BYTES * g);
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
          }
          if (lo > hi) { // only NULLs: the range is empty, the NULL slot remains
            min[k] = 0;
            span[k] = 1;
            continue;
          }
          // hi - lo + 1 values (computed without overflow), + 1 for NULL.
          if (hi - lo < 0 || hi - lo >= DIRECT_MAX_SLOTS) {
            return false;
          }
          min[k] = lo;
          span[k] = hi - lo + 2;
        }
        return true;
      }
    }

    /** The program reads the batch's columns and writes the aggregation's input columns. */
    private void checkProgram(Program program, ColumnBatch<DeviceColumn> input) {
      ProgramChecks.checkInputs(program, input);
      if (program.outputs().size() != spec.inputTypes().size()) {
        throw new IllegalArgumentException("the aggregation reads " + spec.inputTypes().size()
            + " columns, the program writes " + program.outputs().size());
      }
      for (int o = 0; o < program.outputs().size(); o++) {
        ColumnType type = program.outputs().get(o).type();
        if (type.id() != spec.inputTypes().get(o).id()) {
          throw new IllegalArgumentException("program output " + o + " is " + type
              + ", the aggregation expects " + spec.inputTypes().get(o));
        }
      }
    }

    /** One launch of the fused update over one non-empty batch; owns its temporaries. */
    private final class Update {
      private final Program program;
      private final List<JoinTable> tables;
      private final ColumnBatch<DeviceColumn> input;
      private final List<AutoCloseable> temporaries = new ArrayList<>();
      private boolean queued;

      Update(Program program, List<JoinTable> tables, ColumnBatch<DeviceColumn> input) {
        this.program = program;
        this.tables = tables;
        this.input = input;
      }

      void run() {
        try {
          execute();
        } catch (RuntimeException | Error e) {
          if (queued) {
            stream.synchronizeAfter(e);
          }
          Closing.closeAll(temporaries, e);
          throw e;
        }
        Closing.closeAll(temporaries, null);
      }

      /**
       * An update's launch, the entries of its per-block table, whether its generated kernel
       * fills a multiprocessor, and the inputs its keys are where they are found by their codes
       * ({@link CodeGroups#keyInputs}; else null).
       */
      private record UpdateLaunch(LaunchShape shape, int localEntries, boolean fills,
          int[] codedKeys, LocalTableLayout layout) {}

      /**
       * The launch of the update and its per-block table's entries. Blocks take tiles
       * grid-stride: as many as the multiprocessors hold at once. A generated {@code kernel}
       * that {@link AggregateUpdateGenerator#fillsMultiprocessor} runs one block a
       * multiprocessor, of as many threads as its registers allow, whose table (of the entries
       * the kernel was generated for, {@link LocalTableSize#wholeMultiprocessorEntries}) takes
       * {@link LocalTableSize#WHOLE_SHARED_PERCENT} of the multiprocessor's shared memory; other
       * kernels (null: the interpreter's) run blocks of 128 threads with {@link #localEntries}
       * entries each, or none ({@link #runsWithoutTable}). A kernel that fills a multiprocessor
       * and slices its groups among {@code kernelSlices} blocks ({@link GroupSlices}) gets a
       * grid of whole row groups of that many blocks.
       */
      private UpdateLaunch updateShape(GeneratedKernels.Kernel kernel, List<InputSpec> inputs,
          int rows, int kernelSlices) {
        KernelModule kernels = device.kernels();
        int threads = LaunchShape.BLOCK_THREADS;
        int percent = LocalTableSize.KEYED_SHARED_PERCENT;
        int launchEntries = localEntries;
        boolean fills = kernel != null
            && AggregateUpdateGenerator.fillsMultiprocessor(program, spec, inputs);
        int[] codedKeys = kernel != null ? CodeGroups.keyInputs(program, spec, inputs) : null;
        boolean coded = codedKeys != null;
        LocalTableLayout layout = LocalTableLayout.of(program, spec, inputs, fills);
        if (fills) {
          threads = kernels.maxBlockThreads(kernel.function(), kernel.entry());
          percent = LocalTableSize.WHOLE_SHARED_PERCENT;
          KernelFeatures.SharedMemory shared = device.generated().features().shared();
          launchEntries = kernelSlices > 1
              ? AggregateUpdateGenerator.slicedTableEntries(spec, layout, shared)
              : LocalTableSize.wholeMultiprocessorEntries(spec, layout, coded, shared);
        }
        int keyBytes = kernel != null
            ? AggregateUpdateGenerator.localKeyBytes(spec, launchEntries, fills, coded) : 0;
        LaunchShape oneBlock = new LaunchShape(1, threads, fills && kernelSlices > 1
            ? AggregateUpdateGenerator.slicedSharedBytes(spec, layout, launchEntries)
            : layout.tableBytes(launchEntries) + keyBytes);
        int resident;
        if (kernel == null) {
          resident = kernels.residentBlocks(UPDATE_KERNEL, oneBlock);
        } else if (keyBytes > 0 || fills) {
          resident = kernels.residentBlocks(kernel.function(), kernel.entry(), oneBlock, percent);
        } else {
          resident = kernels.residentBlocks(kernel.function(), kernel.entry(), oneBlock);
        }
        long tiles = LaunchShape.tilesFor(rows, threads * LaunchShape.ITEMS_PER_THREAD)
            .gridBlocks();
        int blocks = (int) Math.max(1, Math.min(tiles, (long) device.multiprocessors() * resident));
        if (fills && kernelSlices > 1) {
          // Each row group's blocks, one a slice, side by side: the grid a multiple of them.
          long rowGroups = Math.max(1, Math.min(tiles,
              (long) device.multiprocessors() * resident / kernelSlices));
          blocks = (int) (rowGroups * kernelSlices);
        }
        if (runsWithoutTable(kernel, fills, keyBytes, tiles, blocks)) {
          return new UpdateLaunch(new LaunchShape(blocks, threads, 0), 0, fills, codedKeys,
              layout);
        }
        return new UpdateLaunch(new LaunchShape(blocks, threads, oneBlock.sharedMemoryBytes()),
            launchEntries, fills, codedKeys, layout);
      }

      /**
       * Whether a generated {@code kernel} launched as {@code blocks} blocks over {@code tiles}
       * tiles runs without its per-block table (its launch gives it 0 entries and no dynamic
       * shared memory, its rows' updates go straight to the global accumulators): where that
       * table holds groups found by their index ({@code keyBytes}, the table's keys, 0: every row
       * looks its group up in the global table first, and the table only gathers its
       * accumulators) and each block takes one tile. Such a block clears the table, updates it
       * for at most its 512 rows, which seldom share a group there, and merges it: SSB SF10's
       * aggregate launches of a few thousand rows (grids of 8 to 19 blocks) 15-16% faster
       * without it (H200, ncu). Blocks of several tiles keep it: Q4.1's kernel, about 4 tiles a
       * block, was 16% slower without it. Only in blocks of 128 threads: a kernel that {@code
       * fills} a multiprocessor may have its entries as a constant
       * (AggregateUpdateGenerator.constantEntries), not the plan's 0.
       */
      private boolean runsWithoutTable(GeneratedKernels.Kernel kernel, boolean fills,
          int keyBytes, long tiles, int blocks) {
        return kernel != null && !fills && keyCount > 0 && keyBytes == 0 && tiles <= blocks;
      }

      private void execute() {
        int rows = input.rowCount();
        List<Program.Output> outputs = program.outputs();
        Sections plan = new Sections();
        long stateAt = plan.add(planBytes());
        long registersAt = plan.add((long) Integer.BYTES * outputs.size());
        ProgramPlan programPlan = new ProgramPlan(plan, program, input, tables);
        DeviceBuffer planBuffer = temporary(DeviceBuffer.allocate(pool, plan.size()));
        long planAddress = planBuffer.address();
        // Staging: the plan, then the counters and the status read back.
        long readbackAt = Sections.alignUp(plan.size());
        ArrowBuf host = temporary(staging.buffer(readbackAt + Layout.READBACK_BYTES));

        // The generated kernel where there is one: the same arguments, the same results.
        List<InputSpec> inputs = input.columns().stream().map(InputSpec::of).toList();
        int kernelSlices = slices > 1
            && AggregateUpdateGenerator.slicesGroups(program, spec, inputs) ? slices : 1;
        GeneratedKernels.Lookup lookup = codegen ? device.generated().aggregateUpdate(program,
            inputs, spec, programPlan.probeFiltered(), kernelSlices) : null;
        lastCompileNanos = lookup == null ? 0 : lookup.buildNanos();
        GeneratedKernels.Kernel kernel =
            lookup != null && lookup.kernel().generated() ? lookup.kernel() : null;
        UpdateLaunch launch = updateShape(kernel, inputs, rows, kernelSlices);
        LaunchShape shape = launch.shape();
        CodeGroups.Shape codeShape = CodeGroups.shape(launch.codedKeys(), input.columns());

        ArrowBuf state = host.slice(stateAt, planBytes());
        writeState(state, 0, layout, groups, slots, tableCapacity - 1, launch.localEntries());
        word(state, H_OUTPUT_REGISTERS, planAddress + registersAt);
        word(state, H_OUTPUT_COUNT, outputs.size());
        for (int k = 0; k < keyCount; k++) {
          word(state, keyBase(k) + K_REGISTER, outputs.get(k).register());
        }
        for (int f = 0; f < functionCount; f++) {
          AggregateFunction fn = spec.functions().get(f);
          if (fn.kind() != AggregateFunction.Kind.COUNT_ROWS) {
            word(state, functionBase(f) + F_REGISTER, outputs.get(fn.input()).register());
          }
          if (launch.layout().lean()) {
            word(state, functionBase(f) + F_TABLE_WORDS, launch.layout().tableWords(f));
          }
        }
        for (int o = 0; o < outputs.size(); o++) {
          host.setInt(registersAt + (long) Integer.BYTES * o, outputs.get(o).register());
        }
        programPlan.write(host);

        queued = true;
        stream.copyHostToDevice(host.memoryAddress(), planAddress, plan.size());
        long status = groups.address() + layout.status;
        KernelArgs arguments = programPlan.arguments(planAddress)
            .i32(program.filterRegister())
            .i32(program.ansi() ? 1 : 0)
            .i32(rows)
            .address(planAddress + stateAt)
            .address(status)
            .address(status + Long.BYTES);
        boolean generated = kernel != null;
        // The interpreter kernel wants every group it may insert at its identities already.
        long initializing = generated ? 0 : layout.capacity - initializedTo;
        if (initializing > 0) {
          device.kernels().launch(INIT_KERNEL, threadsFor(initializing), stream,
              new KernelArgs().address(planAddress + stateAt).i64(initializedTo)
                  .i64(layout.capacity));
        }
        if (generated) {
          // The generated kernel's own parameters, which the interpreter's has not.
          arguments.address(codeGroups(codeShape)).i64(codeShape.secondDigits());
          if (AggregateUpdateGenerator.takesPlanWords(spec)) {
            // The plan's words as uploaded, which the kernel reads as a parameter (PlanWords).
            long[] words = new long[(int) (planBytes() / Long.BYTES)];
            for (int i = 0; i < words.length; i++) {
              words[i] = state.getLong((long) Long.BYTES * i);
            }
            arguments.words(words);
          }
          ProgramWords programWords =
              AggregateUpdateGenerator.programWords(program, inputs, spec);
          if (programWords != null) {
            arguments.words(programPlan.words(host, programWords));
          }
          device.kernels().launch(kernel.function(), kernel.entry(), shape, stream, arguments);
        } else {
          device.kernels().launch(UPDATE_KERNEL, shape, stream, arguments);
        }
        stream.copyDeviceToHost(groups.address() + layout.counters,
            host.memoryAddress() + readbackAt, Layout.READBACK_BYTES);
        stream.synchronize();
        unsynchronized = false;
        queued = false;

        long count = host.getLong(readbackAt);
        long used = host.getLong(readbackAt + Long.BYTES);
        long firstError = host.getLong(readbackAt + Layout.COUNTERS_BYTES);
        boolean heapOverflowed = host.getLong(readbackAt + Layout.COUNTERS_BYTES + Long.BYTES) != 0;
        if (keyCount > 0 && (count < groupCount || count > layout.capacity)) {
          throw new IllegalStateException(UPDATE_KERNEL + " reported " + count
              + " groups, outside [" + groupCount + ", " + layout.capacity + "]: a kernel bug");
        }
        if (firstError != NO_ERROR || heapOverflowed) {
          armStatus(status); // the next update, if the caller goes on, starts with none
          unsynchronized = true;
        }
        if (heapOverflowed) {
          throw new IllegalStateException(UPDATE_KERNEL + " ran out of key heap (" + used
              + " bytes wanted, " + (heap == null ? 0 : heap.size())
              + " reserved): the heap bound is wrong, a bug");
        }
        groupCount = keyCount > 0 ? count : 1;
        initializedTo = Math.max(initializing > 0 ? layout.capacity : initializedTo, groupCount);
        heapUsed = used;
        if (firstError != NO_ERROR) {
          throw new RowErrorException(
              RowError.ofCode((int) (firstError & ((1 << ERROR_ROW_SHIFT) - 1))),
              firstError >>> ERROR_ROW_SHIFT);
        }
      }

      /**
       * The launch's {@link CodeGroups} map of {@code shape}'s entries, cleared (every entry -1)
       * on the stream; 0 where it has none.
       */
      private long codeGroups(CodeGroups.Shape shape) {
        long entries = shape.entries();
        if (entries == 0) {
          return 0;
        }
        DeviceBuffer map =
            temporary(DeviceBuffer.allocate(pool, entries * CodeGroups.ENTRY_BYTES));
        stream.fill(map.address(), map.size(), (byte) 0xff);
        return map.address();
      }

      private <T extends AutoCloseable> T temporary(T resource) {
        temporaries.add(resource);
        return resource;
      }
    }

    @Override
    public long groupCount() {
      return keyCount == 0 ? 1 : groupCount;
    }

    @Override
    public ColumnBatch<DeviceColumn> finish() {
      checkOpen();
      if (keyCount == 0) {
        ensureCapacity(1); // a global aggregate always has one row
        groupCount = 1;
      }
      return new Finish(Math.toIntExact(groupCount)).run();
    }

    /** Writes the groups into new columns; owns them until it hands them over. */
    private final class Finish {
      private final int rows;
      private final int outputs;
      private final DeviceBuffer[] data;
      private final DeviceBuffer[] validity;
      private final DeviceBuffer[] offsets;
      private final ColumnType[] types;
      private final List<AutoCloseable> temporaries = new ArrayList<>();
      private boolean queued;

      Finish(int rows) {
        this.rows = rows;
        this.outputs = keyCount + functionCount;
        this.data = new DeviceBuffer[outputs];
        this.validity = new DeviceBuffer[outputs];
        this.offsets = new DeviceBuffer[outputs];
        this.types = new ColumnType[outputs];
        for (int o = 0; o < outputs; o++) {
          types[o] = o < keyCount ? spec.inputTypes().get(o)
              : spec.functions().get(o - keyCount).resultType();
        }
      }

      ColumnBatch<DeviceColumn> run() {
        try {
          ColumnBatch<DeviceColumn> result = execute();
          Closing.closeAll(temporaries, null);
          return result;
        } catch (RuntimeException | Error e) {
          if (queued) {
            stream.synchronizeAfter(e);
          }
          for (DeviceBuffer[] buffers : List.of(data, validity, offsets)) {
            for (DeviceBuffer b : buffers) {
              closeQuietly(b, e);
            }
          }
          Closing.closeAll(temporaries, e);
          throw e;
        }
      }

      private ColumnBatch<DeviceColumn> execute() {
        for (int o = 0; o < outputs; o++) {
          validity[o] = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
          if (types[o].isString()) {
            offsets[o] = DeviceBuffer.allocate(pool, Integer.BYTES * (rows + 1L));
          } else {
            data[o] = DeviceBuffer.allocate(pool, types[o].fixedDataBytes(rows));
          }
        }
        long[] nulls = new long[outputs];
        long[] stringBytes = new long[outputs];
        if (rows > 0) {
          launch(nulls, stringBytes);
        } else {
          for (int o = 0; o < outputs; o++) {
            if (types[o].isString()) {
              data[o] = DeviceBuffer.allocate(pool, 0);
              queued = true;
              stream.fill(offsets[o].address(), Integer.BYTES, (byte) 0); // the one offset: 0
            }
          }
          if (queued) {
            stream.synchronize();
            queued = false;
          }
        }
        List<DeviceColumn> columns = new ArrayList<>(outputs);
        for (int o = 0; o < outputs; o++) {
          if (nulls[o] == 0) {
            DeviceBuffer unused = validity[o];
            validity[o] = null;
            unused.close();
          }
          long dataBytes = types[o].isString() ? stringBytes[o] : types[o].fixedDataBytes(rows);
          columns.add(new DeviceColumn(types[o], rows, (int) nulls[o], data[o], validity[o],
              offsets[o], dataBytes));
          data[o] = null;
          validity[o] = null;
          offsets[o] = null;
        }
        return new ColumnBatch<>(columns, rows);
      }

      /** The finish kernel, then per string key the offsets scan and the byte gather. */
      private void launch(long[] nulls, long[] stringBytes) {
        LaunchShape tiles = LaunchShape.tilesFor(rows);
        Sections work = new Sections();
        // Status: error, one null count per output, then per string key the scan's counters
        // (tile counter, total bytes) and tile states: all zeroed but the error. The scan reads
        // the row count from the plan's header (H_ROWS).
        long statusBytes = (long) Long.BYTES * (1 + outputs);
        long statusAt = work.add(statusBytes);
        long[] scanAt = new long[outputs];
        long[] tileStatusAt = new long[outputs];
        for (int o = 0; o < keyCount; o++) {
          if (types[o].isString()) {
            scanAt[o] = work.add(2L * Long.BYTES);
            tileStatusAt[o] = work.add((long) Long.BYTES * tiles.gridBlocks());
          }
        }
        long zeroedBytes = work.size();
        long[] lengthsAt = new long[outputs];
        long[] sourcesAt = new long[outputs];
        for (int o = 0; o < keyCount; o++) {
          if (types[o].isString()) {
            lengthsAt[o] = work.add((long) Integer.BYTES * rows);
            sourcesAt[o] = work.add((long) Long.BYTES * rows);
          }
        }
        DeviceBuffer plan = temporary(DeviceBuffer.allocate(pool, planBytes()));
        DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
        long w = workBuffer.address();
        long readbackAt = Sections.alignUp(planBytes());
        ArrowBuf host = temporary(staging.buffer(readbackAt + zeroedBytes));
        writeState(host, rows, layout, groups, slots, tableCapacity - 1, localEntries);
        for (int o = 0; o < outputs; o++) {
          boolean key = o < keyCount;
          long base = key ? keyBase(o) : functionBase(o - keyCount);
          word(host, base + (key ? K_DATA : F_DATA), data[o] == null ? 0 : data[o].address());
          word(host, base + (key ? K_VALIDITY : F_VALIDITY), validity[o].address());
          if (key && types[o].isString()) {
            word(host, base + K_STRING_LENGTHS, w + lengthsAt[o]);
            word(host, base + K_STRING_SOURCES, w + sourcesAt[o]);
          }
        }
        queued = true;
        stream.copyHostToDevice(host.memoryAddress(), plan.address(), planBytes());
        for (int o = 0; o < outputs; o++) {
          stream.fill(validity[o].address(), validity[o].size(), (byte) 0);
        }
        stream.fill(w, zeroedBytes, (byte) 0);
        stream.fill(w + statusAt, Long.BYTES, (byte) 0xff);
        KernelModule kernels = device.kernels();
        kernels.launch(FINISH_KERNEL, threadsFor(rows), stream, new KernelArgs()
            .address(plan.address()).i32(spec.ansi() ? 1 : 0).address(w + statusAt)
            .address(w + statusAt + Long.BYTES));
        for (int o = 0; o < keyCount; o++) {
          if (types[o].isString()) {
            long scan = w + scanAt[o];
            kernels.launch(CudaFilterProject.STRING_OFFSETS_KERNEL, tiles, stream,
                new KernelArgs()
                    .address(w + lengthsAt[o])
                    .address(offsets[o].address())
                    .address(plan.address() + (long) Long.BYTES * H_ROWS)
                    .address(scan)
                    .address(w + tileStatusAt[o])
                    .address(scan + Long.BYTES));
          }
        }
        stream.copyDeviceToHost(w, host.memoryAddress() + readbackAt, zeroedBytes);
        stream.synchronize();
        queued = false;

        long error = host.getLong(readbackAt + statusAt);
        if (error != NO_ERROR) {
          throw new RowErrorException(
              RowError.ofCode((int) (error & ((1 << ERROR_ROW_SHIFT) - 1))),
              error >>> ERROR_ROW_SHIFT);
        }
        for (int o = 0; o < outputs; o++) {
          nulls[o] = host.getLong(readbackAt + statusAt + (long) Long.BYTES * (1 + o));
          if (nulls[o] < 0 || nulls[o] > rows) {
            throw new IllegalStateException(FINISH_KERNEL + " reported " + nulls[o]
                + " nulls of " + rows + " rows: a kernel bug");
          }
        }
        for (int o = 0; o < keyCount; o++) {
          if (!types[o].isString()) {
            continue;
          }
          stringBytes[o] = host.getLong(readbackAt + scanAt[o] + Long.BYTES);
          if (stringBytes[o] < 0 || stringBytes[o] > MAX_STRING_BYTES) {
            throw new IllegalStateException("a string column holds at most 2 GiB of text");
          }
          data[o] = DeviceBuffer.allocate(pool, stringBytes[o]);
          if (stringBytes[o] > 0) {
            queued = true;
            kernels.launch(CudaFilterProject.STRING_GATHER_KERNEL, tiles, stream,
                new KernelArgs()
                    .address(offsets[o].address())
                    .address(w + sourcesAt[o])
                    .address(data[o].address())
                    .i32(rows));
          }
        }
        if (queued) {
          stream.synchronize();
          queued = false;
        }
      }

      private <T extends AutoCloseable> T temporary(T resource) {
        temporaries.add(resource);
        return resource;
      }
    }

    private void checkOpen() {
      if (closed) {
        throw new IllegalStateException("the aggregation is closed");
      }
    }

    /** {@link CudaHashAggregate#forgetSlotHashes}. */
    void forgetSlotHashes() {
      checkOpen();
      if (slots == null) {
        return;
      }
      try (ArrowBuf host = staging.buffer(slots.size())) {
        try {
          stream.copyDeviceToHost(slots.address(), host.memoryAddress(), slots.size());
          stream.synchronize();
          for (long at = 0; at < slots.size(); at += AggregateUpdateGenerator.GROUP_SLOT_BYTES) {
            host.setLong(at + AggregateUpdateGenerator.GROUP_SLOT_HASH,
                AggregateUpdateGenerator.GROUP_SLOT_UNKNOWN_HASH);
          }
          stream.copyHostToDevice(host.memoryAddress(), slots.address(), slots.size());
          stream.synchronize();
        } catch (RuntimeException | Error e) {
          stream.synchronizeAfter(e);
          throw e;
        }
      }
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      RuntimeException failure = null;
      if (unsynchronized) {
        try {
          stream.synchronize();
        } catch (RuntimeException e) {
          failure = e;
        }
      }
      DeviceBuffer[] owned = {groups, slots, heap, direct};
      groups = null;
      slots = null;
      heap = null;
      direct = null;
      layout = null;
      for (DeviceBuffer b : owned) {
        if (b == null) {
          continue;
        }
        try {
          b.close();
        } catch (RuntimeException e) {
          if (failure == null) {
            failure = e;
          } else {
            failure.addSuppressed(e);
          }
        }
      }
      if (failure != null) {
        throw failure;
      }
    }
  }

  /** The bytes of every LOAD_STRING_CONST of a program (constants may overlap in the pool). */
  static long stringConstantBytes(Program program) {
    long total = 0;
    int[] code = program.code();
    for (int pc = 0; pc + Program.WORDS <= code.length; pc += Program.WORDS) {
      if (code[pc] == Opcode.LOAD_STRING_CONST.code()) {
        total += code[pc + 3];
      }
    }
    return total;
  }

  /** The longest LOAD_STRING_CONST of a program (its b operand is the byte length). */
  static int longestStringConstant(Program program) {
    int longest = 0;
    int[] code = program.code();
    for (int pc = 0; pc + Program.WORDS <= code.length; pc += Program.WORDS) {
      if (code[pc] == Opcode.LOAD_STRING_CONST.code()) {
        longest = Math.max(longest, code[pc + 3]);
      }
    }
    return longest;
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
