package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.join.HashJoinKernel;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import dev.tessera.gpu.memory.PoolExhaustedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link HashJoinKernel} on CUDA: native-kernels/kernels/hash_join.cu. A table is built into
 * memory of its own (the build batch may be closed afterwards), described by program.cuh's
 * JoinTableView, which PROBE and LOAD_BUILD read inside the fused programs and
 * {@link #expand} reads for the 1:N path. Produces what {@code HostHashJoin} produces.
 *
 * <p>Build: the build columns are copied; {@value #BUILD_HASH_KERNEL},
 * {@value #BUILD_INSERT_KERNEL} and {@value #BUILD_HEADS_KERNEL} fill the slots with each
 * distinct key's smallest build row and give each row its key's smallest row ("head"). The host
 * then turns the heads into the chains of equal keys in ascending build-row order (one linear
 * pass: rows arrive in order, so appending keeps the chain sorted) and the group sizes, and
 * uploads them: the build happens once per broadcast, and the sequential pass is simple and
 * obviously ordered, where a device sort per key would not be.
 *
 * <p>A table with one integral key whose values span a small range (see {@link #directSpan})
 * also gets a direct map, Crystal's perfect hash: {@value #BUILD_KEY_RANGE_KERNEL} finds the
 * range (read back with the heads) and {@value #BUILD_DIRECT_KERNEL} writes each key's smallest
 * row at key - min, so that a probe reads one word where the slots' walk reads a slot, a hash
 * and a key (on a 200,000-row dimension table, all of them from L2, the probe's bottleneck).
 * Where that map is the identity (the rows hold the keys min, min + 1, ... in order, as a
 * dimension table of surrogate keys read in key order does; {@value #DIRECT_IDENTITY_KERNEL}
 * checks), generated probes read nothing: the row is the key's offset.
 */
final class CudaHashJoin implements HashJoinKernel {
  static final String BUILD_HASH_KERNEL = "tessera_join_build_hash";
  static final String BUILD_INSERT_KERNEL = "tessera_join_build_insert";
  static final String BUILD_HEADS_KERNEL = "tessera_join_build_heads";
  static final String LONGEST_STRING_KERNEL = "tessera_join_longest_string";
  static final String BUILD_KEY_RANGE_KERNEL = "tessera_join_build_key_range";
  static final String BUILD_DIRECT_KERNEL = "tessera_join_build_direct";
  static final String BUILD_FILTER_KERNEL = "tessera_join_build_filter";
  static final String DIRECT_IDENTITY_KERNEL = "tessera_join_direct_identity";
  static final String EXPAND_COUNT_KERNEL = "tessera_join_expand_count";
  static final String EXPAND_ROWS_KERNEL = "tessera_join_expand_rows";

  /**
   * Build rows a table may hold: row numbers are int32 on the device and the slots (a power of
   * two, {@link #slotCount}) must stay below 2^31.
   */
  static final int MAX_BUILD_ROWS = 1 << 29;
  /** Build rows up to which a table has 4 slots per row ({@link #slotCount}), 2 beyond. */
  private static final long SPARSE_SLOTS_MAX_ROWS = 1 << 28;
  /** program.cuh kNoBuildRow: an empty slot, a NULL key's head, the end of a chain. */
  private static final int NO_ROW = -1;
  private static final byte ALL_ONES = (byte) 0xff;
  private static final int INPUT_COLUMN_BYTES = ProgramPlan.INPUT_COLUMN_BYTES;
  /**
   * A direct map may have this many int32 words per build row, plus {@link #DIRECT_MIN_WORDS}
   * (SSB's date table: 2,556 keys over 61,130 days), and at most {@link #DIRECT_MAX_WORDS}.
   */
  private static final long DIRECT_WORDS_PER_ROW = 16;
  private static final long DIRECT_MIN_WORDS = 1 << 16;
  private static final long DIRECT_MAX_WORDS = 1 << 28;
  /**
   * A sparser map, up to this many words per build row (16 KiB of device memory a row), while it
   * stays within {@link #DIRECT_L2_WORDS}. A filtered dimension table gives such keys: at SSB
   * scale factor 10, q2.1's part side is 32,000 rows over keys 1 to 800,000, q2.2's 6,400 and
   * q2.3's 800 over the same keys (a brand is one part in 1,000), q3.3's customer side 2,400 over
   * 1 to 300,000. Without a map, a probe that finds no row walks the slots to an empty one, and a
   * warp waits for its lanes' longest walk, an L2 round trip a slot, against one word with the
   * map. At 64 words a row (the bound before) only q2.1's had one: SSB SF10's fused kernels of
   * q2.2 + q2.3 took 6,397 µs, of q3.3 + q3.4 5,220 µs; with maps 4,636 and 4,167 (-27.5%,
   * -20.2%; H200, ncu).
   */
  private static final long DIRECT_SPARSE_WORDS_PER_ROW = 4096;
  /** The most words of a sparse map: 16 MiB, a third of an H100's or H200's L2. */
  private static final long DIRECT_L2_WORDS = 1 << 22;
  private static final Logger LOG = LoggerFactory.getLogger(CudaHashJoin.class);

  private final CudaDevice device;
  private final BufferAllocator staging;

  CudaHashJoin(CudaBackend backend) {
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
  }

  // ---- build ----------------------------------------------------------------------------------

  @Override
  public JoinTable build(JoinTableSchema schema, ColumnBatch<DeviceColumn> build, ArenaPool pool,
      GpuStream stream) {
    checkBuild(schema, build);
    return new Build(schema, build, pool, CudaBackend.cudaStream(stream)).run();
  }

  private static void checkBuild(JoinTableSchema schema, ColumnBatch<DeviceColumn> build) {
    schema.checkBuildColumns(build.columns().stream().map(DeviceColumn::type).toList());
    for (ColumnType type : schema.keyTypes()) {
      checkKeyType(type);
    }
    for (int c = 0; c < build.columns().size(); c++) {
      if (build.column(c).rowCount() != build.rowCount()) {
        throw new IllegalArgumentException("build column " + c + " has "
            + build.column(c).rowCount() + " rows, the batch " + build.rowCount());
      }
    }
    if (build.rowCount() > MAX_BUILD_ROWS) {
      throw new IllegalArgumentException("the CUDA hash join builds at most " + MAX_BUILD_ROWS
          + " rows into one table, the build side has " + build.rowCount());
    }
  }

  private static void checkKeyType(ColumnType type) {
    switch (type.id()) {
      case FLOAT, DOUBLE, BOOLEAN -> throw new IllegalArgumentException(type
          + " is not a join key type: keys are integral, date, timestamp, decimal or string");
      default -> { }
    }
  }

  /** Whether a table's keys can have a direct map: one key whose values are integers. */
  static boolean directKeys(List<ColumnType> keyTypes) {
    if (keyTypes.size() != 1) {
      return false;
    }
    return switch (keyTypes.get(0).id()) {
      case BYTE, SHORT, INT, LONG, DATE, TIMESTAMP -> true;
      default -> false;
    };
  }

  /**
   * The direct map's words for non-NULL keys from {@code min} to {@code max} over {@code rows}
   * build rows, or 0 when the range is too sparse or too large for one (or empty: min > max).
   */
  static long directSpan(long min, long max, long rows) {
    if (min > max) {
      return 0;
    }
    long span = max - min + 1; // 0 or negative when it overflows
    long dense = DIRECT_WORDS_PER_ROW * rows + DIRECT_MIN_WORDS;
    long sparse = Math.min(DIRECT_L2_WORDS, DIRECT_SPARSE_WORDS_PER_ROW * rows);
    long limit = Math.min(DIRECT_MAX_WORDS, Math.max(dense, sparse));
    return span > 0 && span <= limit ? span : 0;
  }

  /**
   * Slots for {@code rows} build rows: a power of two, at least 4 times the rows (and 2), or
   * twice the rows beyond {@link #SPARSE_SLOTS_MAX_ROWS}, so that slot numbers stay int32.
   *
   * <p>Why a quarter full: a probe that finds no row walks the slots until an empty one, and a
   * warp waits for its lanes' longest walk. With a filtered dimension table whose keys get no
   * direct map, most probes find no row (StarJoinBench's "sparse" form: 1 in 25 and 1 in 5 of
   * the rows, keys 9,973 apart): the fused kernel took 2.17 ms with the slots at most half full,
   * 1.44 ms a quarter full. It costs 8 more bytes of device memory per build row.
   */
  static long slotCount(long rows) {
    long perRow = rows <= SPARSE_SLOTS_MAX_ROWS ? 4 : 2;
    long slots = 2;
    while (slots < perRow * rows) {
      slots *= 2;
    }
    return slots;
  }

  /** One build; owns the table's buffers until the table takes them. */
  private final class Build {
    private final JoinTableSchema schema;
    private final ColumnBatch<DeviceColumn> input;
    private final ArenaPool pool;
    private final CudaStream stream;
    private final int rows;
    private final List<DeviceBuffer> owned = new ArrayList<>();
    private final List<AutoCloseable> temporaries = new ArrayList<>();
    /** Per build column: the device address of its copied offsets (string columns), else 0. */
    private final long[] copiedOffsets;
    private boolean queued;

    Build(JoinTableSchema schema, ColumnBatch<DeviceColumn> input, ArenaPool pool,
        CudaStream stream) {
      this.schema = schema;
      this.input = input;
      this.pool = pool;
      this.stream = stream;
      this.rows = input.rowCount();
      this.copiedOffsets = new long[input.columns().size()];
    }

    JoinTable run() {
      try {
        JoinTable table = execute();
        Closing.closeAll(temporaries, null);
        return table;
      } catch (RuntimeException | Error e) {
        if (queued) {
          stream.synchronizeAfter(e);
        }
        temporaries.addAll(owned);
        Closing.closeAll(temporaries, e);
        throw e;
      }
    }

    private DeviceBuffer own(long bytes) {
      DeviceBuffer buffer = DeviceBuffer.allocate(pool, bytes);
      owned.add(buffer);
      return buffer;
    }

    private <T extends AutoCloseable> T temporary(T resource) {
      temporaries.add(resource);
      return resource;
    }

    private JoinTable execute() {
      int columns = input.columns().size();
      int keyCount = schema.keyTypes().size();
      long slots = slotCount(rows);

      // The descriptor: the view, then the InputColumns of the keys and of the payloads.
      Sections layout = new Sections();
      long viewAt = layout.add(CudaJoinTable.TABLE_VIEW_BYTES);
      long columnsAt = layout.add((long) INPUT_COLUMN_BYTES * columns);
      DeviceBuffer descriptor = own(layout.size());
      DeviceBuffer slotBuffer = own(Integer.BYTES * slots);
      DeviceBuffer hashes = own((long) Long.BYTES * rows);
      DeviceBuffer next = own((long) Integer.BYTES * rows);
      DeviceBuffer groupSizes = own((long) Integer.BYTES * rows);

      // Work: key-null flags, slot per row, head per row, the duplicates flag and one longest
      // string length per column.
      Sections work = new Sections();
      long flagsAt = work.add((long) Integer.BYTES * (1 + columns));
      long keyNullAt = work.add(rows);
      long slotOfAt = work.add((long) Integer.BYTES * rows);
      long headsAt = work.add((long) Integer.BYTES * rows);
      long rangeAt = work.add(2L * Long.BYTES);
      long notIdentityAt = work.add(Integer.BYTES);
      DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
      long workAddress = workBuffer.address();

      // Staging: the descriptor up; flags and heads back; next and group sizes up.
      Sections host = new Sections();
      long hostDescriptorAt = host.add(layout.size());
      long hostFlagsAt = host.add((long) Integer.BYTES * (1 + columns));
      long hostHeadsAt = host.add((long) Integer.BYTES * rows);
      long hostNextAt = host.add((long) Integer.BYTES * rows);
      long hostSizesAt = host.add((long) Integer.BYTES * rows);
      long hostRangeAt = host.add(2L * Long.BYTES);
      long hostNotIdentityAt = host.add(Integer.BYTES);
      ArrowBuf staged = temporary(staging.buffer(Math.max(1, host.size())));

      long descriptorAddress = descriptor.address();
      long[] view = new long[CudaJoinTable.TABLE_VIEW_BYTES / Long.BYTES];
      view[CudaJoinTable.VIEW_KEYS / Long.BYTES] = descriptorAddress + columnsAt;
      view[CudaJoinTable.VIEW_PAYLOADS / Long.BYTES] =
          descriptorAddress + columnsAt + (long) INPUT_COLUMN_BYTES * keyCount;
      view[CudaJoinTable.VIEW_SLOTS / Long.BYTES] = slotBuffer.address();
      view[CudaJoinTable.VIEW_HASHES / Long.BYTES] = hashes.address();
      view[CudaJoinTable.VIEW_NEXT / Long.BYTES] = next.address();
      view[CudaJoinTable.VIEW_GROUP_SIZES / Long.BYTES] = groupSizes.address();
      view[CudaJoinTable.VIEW_SLOT_MASK / Long.BYTES] = slots - 1;
      view[CudaJoinTable.VIEW_ROWS / Long.BYTES] = rows;
      view[CudaJoinTable.VIEW_KEY_COUNT / Long.BYTES] =
          (keyCount & 0xffffffffL) | ((long) (columns - keyCount) << 32);
      for (int i = 0; i < view.length; i++) {
        staged.setLong(hostDescriptorAt + (long) Long.BYTES * i, view[i]);
      }
      queued = true;
      long[] stringBytes = new long[columns];
      for (int c = 0; c < columns; c++) {
        stringBytes[c] = copyColumn(c, staged,
            hostDescriptorAt + columnsAt + (long) INPUT_COLUMN_BYTES * c);
      }
      stream.copyHostToDevice(staged.memoryAddress() + hostDescriptorAt, descriptorAddress,
          layout.size());
      stream.fill(slotBuffer.address(), slotBuffer.size(), ALL_ONES);
      stream.fill(workAddress + flagsAt, (long) Integer.BYTES * (1 + columns), (byte) 0);
      boolean mayMapDirectly = rows > 0 && directKeys(schema.keyTypes());
      if (mayMapDirectly) {
        staged.setLong(hostRangeAt, Long.MAX_VALUE);
        staged.setLong(hostRangeAt + Long.BYTES, Long.MIN_VALUE);
        stream.copyHostToDevice(staged.memoryAddress() + hostRangeAt, workAddress + rangeAt,
            2L * Long.BYTES);
      }

      long viewAddress = descriptorAddress + viewAt;
      KernelModule kernels = device.kernels();
      if (rows > 0) {
        LaunchShape grid = LaunchShape.tilesFor(rows);
        kernels.launch(BUILD_HASH_KERNEL, grid, stream, new KernelArgs()
            .address(viewAddress)
            .address(workAddress + keyNullAt));
        kernels.launch(BUILD_INSERT_KERNEL, grid, stream, new KernelArgs()
            .address(viewAddress)
            .address(workAddress + keyNullAt)
            .address(workAddress + slotOfAt)
            .address(workAddress + flagsAt));
        kernels.launch(BUILD_HEADS_KERNEL, grid, stream, new KernelArgs()
            .address(viewAddress)
            .address(workAddress + slotOfAt)
            .address(workAddress + headsAt));
        if (mayMapDirectly) {
          kernels.launch(BUILD_KEY_RANGE_KERNEL, grid, stream, new KernelArgs()
              .address(viewAddress)
              .address(workAddress + rangeAt));
          stream.copyDeviceToHost(workAddress + rangeAt, staged.memoryAddress() + hostRangeAt,
              2L * Long.BYTES);
        }
        for (int c = keyCount; c < columns; c++) {
          if (input.column(c).type().isString()) {
            kernels.launch(LONGEST_STRING_KERNEL, grid, stream, new KernelArgs()
                .address(copiedOffsets[c])
                .i64(rows)
                .address(workAddress + flagsAt + (long) Integer.BYTES * (1 + c)));
          }
        }
      }
      stream.copyDeviceToHost(workAddress + flagsAt, staged.memoryAddress() + hostFlagsAt,
          (long) Integer.BYTES * (1 + columns));
      stream.copyDeviceToHost(workAddress + headsAt, staged.memoryAddress() + hostHeadsAt,
          (long) Integer.BYTES * rows);
      stream.synchronize();
      queued = false;

      boolean duplicates = staged.getInt(hostFlagsAt) != 0;
      int[] heads = new int[rows];
      for (int r = 0; r < rows; r++) {
        heads[r] = staged.getInt(hostHeadsAt + (long) Integer.BYTES * r);
      }
      Chains chains = Chains.of(heads, duplicates);
      for (int r = 0; r < rows; r++) {
        staged.setInt(hostNextAt + (long) Integer.BYTES * r, chains.next[r]);
        staged.setInt(hostSizesAt + (long) Integer.BYTES * r, chains.groupSizes[r]);
      }
      queued = true;
      stream.copyHostToDevice(staged.memoryAddress() + hostNextAt, next.address(),
          (long) Integer.BYTES * rows);
      stream.copyHostToDevice(staged.memoryAddress() + hostSizesAt, groupSizes.address(),
          (long) Integer.BYTES * rows);
      long directSpan = !mayMapDirectly ? 0 : directMap(staged, hostDescriptorAt + viewAt,
          viewAddress, workAddress + headsAt, staged.getLong(hostRangeAt),
          staged.getLong(hostRangeAt + Long.BYTES));
      if (directSpan == 0) {
        probeFilter(staged, hostDescriptorAt + viewAt, viewAddress, workAddress + headsAt,
            chains.distinctKeys());
      }
      // The map can be the identity only with a word for each row and no NULL or repeated key.
      boolean mayBeIdentity = directSpan > 0 && directSpan == rows
          && chains.distinctKeys() == rows;
      if (mayBeIdentity) {
        stream.fill(workAddress + notIdentityAt, Integer.BYTES, (byte) 0);
        device.kernels().launch(DIRECT_IDENTITY_KERNEL, LaunchShape.tilesFor(rows), stream,
            new KernelArgs().address(viewAddress).address(workAddress + notIdentityAt));
        stream.copyDeviceToHost(workAddress + notIdentityAt,
            staged.memoryAddress() + hostNotIdentityAt, Integer.BYTES);
      }
      stream.synchronize();
      queued = false;
      if (mayBeIdentity && staged.getInt(hostNotIdentityAt) == 0) {
        markIdentity(staged, hostDescriptorAt + viewAt, viewAddress);
      }

      long payloadStringBytes = 0;
      long longest = 0;
      for (int c = keyCount; c < columns; c++) {
        payloadStringBytes += stringBytes[c];
        longest = Math.max(longest, staged.getInt(hostFlagsAt + (long) Integer.BYTES * (1 + c)));
      }
      byte[] viewBytes = new byte[CudaJoinTable.TABLE_VIEW_BYTES];
      staged.getBytes(hostDescriptorAt + viewAt, viewBytes);
      CudaJoinTable table = new CudaJoinTable(schema, rows, !duplicates, payloadStringBytes,
          longest, viewBytes, viewAddress, owned);
      owned.clear();
      return table;
    }

    /**
     * Makes the direct map when the keys' range [min, max] is dense enough: allocates it, writes
     * its fields into the view (the host image at {@code hostViewAt} and the device copy) and
     * queues the kernel that fills it from the heads. Under memory pressure the table has none:
     * the slots find every key anyway. Returns the map's words, 0 without one.
     */
    private long directMap(ArrowBuf staged, long hostViewAt, long viewAddress, long heads,
        long min, long max) {
      long span = directSpan(min, max, rows);
      if (span == 0) {
        return 0;
      }
      DeviceBuffer direct;
      try {
        direct = DeviceBuffer.allocate(pool, Integer.BYTES * span);
      } catch (PoolExhaustedException | OutOfMemoryException e) {
        LOG.debug("Tessera: no direct map for the join table (memory is short): {}",
            e.getMessage());
        return 0;
      }
      owned.add(direct);
      stream.fill(direct.address(), direct.size(), ALL_ONES);
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_DIRECT, direct.address());
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_DIRECT_MIN, min);
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_DIRECT_SPAN, span);
      stream.copyHostToDevice(staged.memoryAddress() + hostViewAt + CudaJoinTable.VIEW_DIRECT,
          viewAddress + CudaJoinTable.VIEW_DIRECT, 3L * Long.BYTES);
      device.kernels().launch(BUILD_DIRECT_KERNEL, LaunchShape.tilesFor(rows), stream,
          new KernelArgs().address(viewAddress).address(heads));
      return span;
    }

    /**
     * Marks the table's direct map as the identity (JoinTableView.direct_identity: build row r
     * holds the key min + r), in the view's host image at {@code hostViewAt} and its device
     * copy, so that generated probes take the key's offset as its row without reading the map.
     */
    private void markIdentity(ArrowBuf staged, long hostViewAt, long viewAddress) {
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_DIRECT_IDENTITY, 1);
      queued = true;
      stream.copyHostToDevice(staged.memoryAddress() + hostViewAt
          + CudaJoinTable.VIEW_DIRECT_IDENTITY, viewAddress + CudaJoinTable.VIEW_DIRECT_IDENTITY,
          Long.BYTES);
      stream.synchronize();
      queued = false;
    }

    /**
     * Makes the probe filter ({@link ProbeFilter}) of a table without a direct map whose {@code
     * keys} distinct keys are few enough: writes its fields into the view as {@link #directMap}
     * does and queues the kernel that sets its bits from each distinct key's filter hash
     * (hash.cuh CombineFilterHash). Under memory pressure the table has none: probes then walk
     * the slots for every key.
     */
    private void probeFilter(ArrowBuf staged, long hostViewAt, long viewAddress, long heads,
        long keys) {
      ProbeFilter filter = ProbeFilter.forSlots(keys);
      if (filter == null) {
        return;
      }
      DeviceBuffer bits;
      try {
        bits = DeviceBuffer.allocate(pool, Integer.BYTES * filter.words());
      } catch (PoolExhaustedException | OutOfMemoryException e) {
        LOG.debug("Tessera: no probe filter for the join table (memory is short): {}",
            e.getMessage());
        return;
      }
      owned.add(bits);
      stream.fill(bits.address(), bits.size(), (byte) 0);
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_FILTER, bits.address());
      staged.setLong(hostViewAt + CudaJoinTable.VIEW_FILTER_SHIFT, filter.shift());
      stream.copyHostToDevice(staged.memoryAddress() + hostViewAt + CudaJoinTable.VIEW_FILTER,
          viewAddress + CudaJoinTable.VIEW_FILTER, 2L * Long.BYTES);
      device.kernels().launch(BUILD_FILTER_KERNEL, LaunchShape.tilesFor(rows), stream,
          new KernelArgs().address(viewAddress).address(heads));
    }

    /**
     * Copies build column {@code c} into the table's memory and writes its InputColumn at
     * {@code at} of the staging buffer. Returns its data bytes when it is a string column, else 0.
     */
    private long copyColumn(int c, ArrowBuf staged, long at) {
      DeviceColumn column = input.column(c);
      if (column.isEncoded()) {
        throw new IllegalStateException("Tessera bug: a join table built from an encoded column");
      }
      long dataBytes = column.dataBytes();
      DeviceBuffer data = own(dataBytes);
      stream.copyDeviceToDevice(column.data().address(), data.address(), dataBytes);
      long validityAddress = 0;
      if (column.validity() != null) {
        long bytes = Validity.bytesFor(rows);
        DeviceBuffer validity = own(bytes);
        stream.copyDeviceToDevice(column.validity().address(), validity.address(), bytes);
        validityAddress = validity.address();
      }
      long offsetsAddress = 0;
      if (column.type().isString()) {
        long bytes = Integer.BYTES * (rows + 1L);
        DeviceBuffer offsets = own(bytes);
        stream.copyDeviceToDevice(column.offsets().address(), offsets.address(), bytes);
        offsetsAddress = offsets.address();
        copiedOffsets[c] = offsetsAddress;
      }
      ProgramPlan.writeInputColumn(staged, at, column, data.address(), validityAddress,
          offsetsAddress);
      return column.type().isString() ? dataBytes : 0;
    }
  }

  /**
   * The chains of equal keys: next[r] = the next larger build row with row r's key (-1: none),
   * groupSizes[h] = the rows of the key whose smallest row is h (0 for other rows), and how many
   * distinct non-NULL keys there are. Checks what the kernels reported: a head is the smallest
   * row of its key, and duplicates were flagged exactly when some key repeats.
   */
  record Chains(int[] next, int[] groupSizes, int distinctKeys) {
    static Chains of(int[] heads, boolean duplicatesFlagged) {
      int rows = heads.length;
      int[] next = new int[rows];
      int[] sizes = new int[rows];
      int[] last = new int[rows]; // per head: the chain's current last row
      Arrays.fill(next, NO_ROW);
      boolean duplicates = false;
      int distinct = 0;
      for (int r = 0; r < rows; r++) {
        int h = heads[r];
        if (h == NO_ROW) {
          continue;
        }
        if (h < 0 || h > r || (h < r && sizes[h] == 0) || (h == r && sizes[h] != 0)) {
          throw new IllegalStateException(BUILD_HEADS_KERNEL + " gave build row " + r
              + " the head " + h + ", which is not the smallest row of its key: a kernel bug");
        }
        if (h != r) {
          next[last[h]] = r;
          duplicates = true;
        } else {
          distinct++;
        }
        last[h] = r;
        sizes[h]++;
      }
      if (duplicates != duplicatesFlagged) {
        throw new IllegalStateException(BUILD_INSERT_KERNEL + " reported duplicates="
            + duplicatesFlagged + " but the heads say " + duplicates + ": a kernel bug");
      }
      return new Chains(next, sizes, distinct);
    }
  }

  // ---- expand ---------------------------------------------------------------------------------

  @Override
  public List<ColumnBatch<DeviceColumn>> expand(JoinTable table, ColumnBatch<DeviceColumn> probe,
      int[] probeKeys, boolean leftOuter, int maxRowsPerBatch, ArenaPool pool, GpuStream stream) {
    if (maxRowsPerBatch < 1) {
      throw new IllegalArgumentException("maxRowsPerBatch must be positive: " + maxRowsPerBatch);
    }
    CudaJoinTable cuda = CudaJoinTable.of(table);
    checkProbeKeys(cuda.schema(), probe, probeKeys);
    if (probe.rowCount() == 0) {
      return List.of();
    }
    // Batches of at most 2^30 rows (int32 row indexes and offsets); a caller asking for larger
    // ones still gets batches of at most what it asked for.
    int batchRows = Math.min(maxRowsPerBatch, CudaJoinExpand.MAX_ROWS_PER_BATCH);
    return new CudaJoinExpand(device, staging, cuda, probe, probeKeys, leftOuter, batchRows, pool,
        CudaBackend.cudaStream(stream)).run();
  }

  private static void checkProbeKeys(JoinTableSchema schema, ColumnBatch<DeviceColumn> probe,
      int[] probeKeys) {
    if (probeKeys.length != schema.keyTypes().size()) {
      throw new IllegalArgumentException("the table has " + schema.keyTypes().size()
          + " key columns, the probe names " + Arrays.toString(probeKeys));
    }
    for (int k = 0; k < probeKeys.length; k++) {
      if (probeKeys[k] < 0 || probeKeys[k] >= probe.columns().size()) {
        throw new IllegalArgumentException("probe key " + k + " is column " + probeKeys[k]
            + " of a batch of " + probe.columns().size());
      }
      ColumnType probeType = probe.column(probeKeys[k]).type();
      if (probeType.isString() != schema.keyTypes().get(k).isString()) {
        throw new IllegalArgumentException("probe key column " + probeKeys[k] + " is "
            + probeType + ", the table's key " + k + " is " + schema.keyTypes().get(k));
      }
      checkKeyType(probeType);
    }
    for (int c = 0; c < probe.columns().size(); c++) {
      if (probe.column(c).rowCount() != probe.rowCount()) {
        throw new IllegalArgumentException("probe column " + c + " has "
            + probe.column(c).rowCount() + " rows, the batch " + probe.rowCount());
      }
    }
  }
}
