package dev.tessera.gpu.cuda;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * One {@link CudaHashJoin#expand} over a non-empty probe batch (hash_join.cu's expansion):
 * {@value CudaHashJoin#EXPAND_COUNT_KERNEL} finds each probe row's key group and, by an
 * order-preserving scan, its first output row; then per output batch of at most
 * maxRowsPerBatch rows, {@value CudaHashJoin#EXPAND_ROWS_KERNEL} lists the (probe row, build
 * row) of each output row and {@value CudaHashJoin#GATHER_KERNEL} gathers every output column
 * (the probe's columns, then the table's payloads); string columns get their offsets and bytes
 * from filter_project.cu's string kernels. Owns every buffer until the batches take them.
 */
final class CudaJoinExpand {
  /** Rows of one output batch: int32 row indexes, and offsets of rows + 1 entries. */
  static final int MAX_ROWS_PER_BATCH = 1 << 30;
  private static final int TILE_STATUS_BYTES = Long.BYTES;
  private static final int INPUT_COLUMN_BYTES = ProgramPlan.INPUT_COLUMN_BYTES;
  /** Offsets of a string column are int32 (Arrow's layout). */
  private static final long MAX_STRING_BYTES = Integer.MAX_VALUE;

  private final CudaDevice device;
  private final BufferAllocator staging;
  private final CudaJoinTable table;
  private final ColumnBatch<DeviceColumn> probe;
  private final int[] probeKeys;
  private final boolean leftOuter;
  private final int maxRowsPerBatch;
  private final ArenaPool pool;
  private final CudaStream stream;
  private final int rows;
  private final List<ColumnType> outputTypes = new ArrayList<>();
  private final List<AutoCloseable> temporaries = new ArrayList<>();
  private final List<ColumnBatch<DeviceColumn>> results = new ArrayList<>();
  private boolean queued;

  // Set by count(): the plan (probe InputColumns) and the per-probe-row heads and starts.
  private long probeColumnsAddress;
  private long headsAddress;
  private long startsAddress;

  CudaJoinExpand(CudaDevice device, BufferAllocator staging, CudaJoinTable table,
      ColumnBatch<DeviceColumn> probe, int[] probeKeys, boolean leftOuter, int maxRowsPerBatch,
      ArenaPool pool, CudaStream stream) {
    this.device = device;
    this.staging = staging;
    this.table = table;
    this.probe = probe;
    this.probeKeys = probeKeys.clone();
    this.leftOuter = leftOuter;
    this.maxRowsPerBatch = maxRowsPerBatch;
    this.pool = pool;
    this.stream = stream;
    this.rows = probe.rowCount();
    for (DeviceColumn column : probe.columns()) {
      outputTypes.add(column.type());
    }
    outputTypes.addAll(table.schema().payloadTypes());
  }

  List<ColumnBatch<DeviceColumn>> run() {
    try {
      long total = count();
      for (long begin = 0; begin < total; begin += maxRowsPerBatch) {
        int batchRows = (int) Math.min(maxRowsPerBatch, total - begin);
        results.add(new OutputBatch(begin, batchRows).write());
      }
      Closing.closeAll(temporaries, null);
      return List.copyOf(results);
    } catch (RuntimeException | Error e) {
      if (queued) {
        stream.synchronizeAfter(e);
      }
      for (ColumnBatch<DeviceColumn> batch : results) {
        try {
          batch.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      Closing.closeAll(temporaries, e);
      throw e;
    }
  }

  private <T extends AutoCloseable> T temporary(T resource) {
    temporaries.add(resource);
    return resource;
  }

  /** Heads, starts and the total of output rows. */
  private long count() {
    LaunchShape tiles = LaunchShape.tilesFor(rows);
    Sections plan = new Sections();
    long columnsAt = plan.add((long) INPUT_COLUMN_BYTES * probe.columns().size());
    long keysAt = plan.add((long) INPUT_COLUMN_BYTES * probeKeys.length);
    Sections work = new Sections();
    long counterAt = work.add(2L * Long.BYTES); // tile counter, total
    long tileStatusAt = work.add((long) TILE_STATUS_BYTES * tiles.gridBlocks());
    long zeroed = work.size();
    long headsAt = work.add((long) Integer.BYTES * rows);
    long startsAt = work.add((long) Long.BYTES * rows);
    DeviceBuffer planBuffer = temporary(DeviceBuffer.allocate(pool, plan.size()));
    DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
    long readbackAt = Sections.alignUp(plan.size());
    ArrowBuf host = temporary(staging.buffer(readbackAt + Long.BYTES));

    for (int c = 0; c < probe.columns().size(); c++) {
      writeInputColumn(host, columnsAt + (long) INPUT_COLUMN_BYTES * c, probe.column(c));
    }
    for (int k = 0; k < probeKeys.length; k++) {
      writeInputColumn(host, keysAt + (long) INPUT_COLUMN_BYTES * k, probe.column(probeKeys[k]));
    }
    long planAddress = planBuffer.address();
    long workAddress = workBuffer.address();
    probeColumnsAddress = planAddress + columnsAt;
    headsAddress = workAddress + headsAt;
    startsAddress = workAddress + startsAt;

    queued = true;
    stream.copyHostToDevice(host.memoryAddress(), planAddress, plan.size());
    stream.fill(workAddress, zeroed, (byte) 0);
    device.kernels().launch(CudaHashJoin.EXPAND_COUNT_KERNEL, tiles, stream, new KernelArgs()
        .address(table.viewAddress())
        .address(planAddress + keysAt)
        .i32(leftOuter ? 1 : 0)
        .i32(rows)
        .address(headsAddress)
        .address(startsAddress)
        .address(workAddress + counterAt)
        .address(workAddress + tileStatusAt)
        .address(workAddress + counterAt + Long.BYTES));
    stream.copyDeviceToHost(workAddress + counterAt + Long.BYTES,
        host.memoryAddress() + readbackAt, Long.BYTES);
    stream.synchronize();
    queued = false;
    long total = host.getLong(readbackAt);
    long bound = (long) rows * Math.max(1, table.buildRows());
    if (total < 0 || total > bound) {
      throw new IllegalStateException(CudaHashJoin.EXPAND_COUNT_KERNEL + " reported " + total
          + " output rows, outside [0, " + bound + "]: a kernel bug");
    }
    return total;
  }

  /** program.cuh struct InputColumn: data, validity, offsets, type, reserved. */
  private static void writeInputColumn(ArrowBuf host, long at, DeviceColumn column) {
    if (column.isEncoded()) {
      throw new IllegalStateException("Tessera bug: a join expands an encoded column");
    }
    ProgramPlan.writeInputColumn(host, at, column);
  }

  /** Output rows [begin, begin + rows) as one batch. */
  private final class OutputBatch {
    private final long begin;
    private final int batchRows;
    private final int columns = outputTypes.size();
    private final DeviceBuffer[] data = new DeviceBuffer[columns];
    private final DeviceBuffer[] validity = new DeviceBuffer[columns];
    private final DeviceBuffer[] offsets = new DeviceBuffer[columns];
    private final List<AutoCloseable> batchTemporaries = new ArrayList<>();

    OutputBatch(long begin, int batchRows) {
      this.begin = begin;
      this.batchRows = batchRows;
    }

    ColumnBatch<DeviceColumn> write() {
      try {
        ColumnBatch<DeviceColumn> batch = execute();
        Closing.closeAll(batchTemporaries, null);
        return batch;
      } catch (RuntimeException | Error e) {
        if (queued) {
          stream.synchronizeAfter(e);
          queued = false;
        }
        for (DeviceBuffer[] buffers : List.of(data, validity, offsets)) {
          for (DeviceBuffer buffer : buffers) {
            if (buffer != null && !buffer.isClosed()) {
              batchTemporaries.add(buffer);
            }
          }
        }
        Closing.closeAll(batchTemporaries, e);
        throw e;
      }
    }

    private ColumnBatch<DeviceColumn> execute() {
      int probeColumns = probe.columns().size();
      LaunchShape tiles = LaunchShape.tilesFor(batchRows);
      // Work: per output column its status (null count, string bytes, string tile counter, kept
      // rows for the string kernels), zeroed with the string tile states; then row indexes and
      // string temporaries.
      Sections work = new Sections();
      long statusAt = work.add(4L * Long.BYTES * columns);
      long[] stringTileStatusAt = new long[columns];
      for (int c = 0; c < columns; c++) {
        if (outputTypes.get(c).isString()) {
          stringTileStatusAt[c] = work.add((long) TILE_STATUS_BYTES * tiles.gridBlocks());
        }
      }
      long zeroed = work.size();
      long probeRowsAt = work.add((long) Integer.BYTES * batchRows);
      long buildRowsAt = work.add((long) Integer.BYTES * batchRows);
      long[] lengthsAt = new long[columns];
      long[] sourcesAt = new long[columns];
      for (int c = 0; c < columns; c++) {
        if (outputTypes.get(c).isString()) {
          lengthsAt[c] = work.add((long) Integer.BYTES * batchRows);
          sourcesAt[c] = work.add((long) Long.BYTES * batchRows);
        }
      }
      DeviceBuffer workBuffer = batchTemporary(DeviceBuffer.allocate(pool, work.size()));
      long workAddress = workBuffer.address();
      long statusBytes = 4L * Long.BYTES * columns;
      ArrowBuf host = batchTemporary(staging.buffer(Math.max(Long.BYTES, statusBytes)));

      queued = true;
      stream.fill(workAddress, zeroed, (byte) 0);
      // The string kernels read the row count from the device: each string status's 4th word.
      for (int c = 0; c < columns; c++) {
        host.setLong((long) Long.BYTES * c, batchRows);
      }
      KernelModule kernels = device.kernels();
      kernels.launch(CudaHashJoin.EXPAND_ROWS_KERNEL, LaunchShape.tilesFor(rows), stream,
          new KernelArgs()
              .address(table.viewAddress())
              .address(headsAddress)
              .address(startsAddress)
              .i32(rows)
              .i32(leftOuter ? 1 : 0)
              .i64(begin)
              .i64(begin + batchRows)
              .address(workAddress + probeRowsAt)
              .address(workAddress + buildRowsAt));
      for (int c = 0; c < columns; c++) {
        ColumnType type = outputTypes.get(c);
        long status = workAddress + statusAt + 4L * Long.BYTES * c;
        validity[c] = DeviceBuffer.allocate(pool, Validity.bytesFor(batchRows));
        stream.fill(validity[c].address(), validity[c].size(), (byte) 0);
        if (type.isString()) {
          offsets[c] = DeviceBuffer.allocate(pool, Integer.BYTES * (batchRows + 1L));
          stream.copyHostToDevice(host.memoryAddress() + (long) Long.BYTES * c,
              status + 3L * Long.BYTES, Long.BYTES);
        } else {
          data[c] = DeviceBuffer.allocate(pool, type.fixedDataBytes(batchRows));
        }
        boolean fromProbe = c < probeColumns;
        long source = fromProbe ? probeColumnsAddress + (long) INPUT_COLUMN_BYTES * c
            : table.payloadColumnsAddress() + (long) INPUT_COLUMN_BYTES * (c - probeColumns);
        kernels.launch(CudaHashJoin.GATHER_KERNEL, tiles, stream, new KernelArgs()
            .address(source)
            .address(workAddress + (fromProbe ? probeRowsAt : buildRowsAt))
            .i64(batchRows)
            .address(type.isString() ? 0 : data[c].address())
            .address(validity[c].address())
            .address(type.isString() ? workAddress + lengthsAt[c] : 0)
            .address(type.isString() ? workAddress + sourcesAt[c] : 0)
            .address(status));
        if (type.isString()) {
          kernels.launch(CudaFilterProject.STRING_OFFSETS_KERNEL, tiles, stream, new KernelArgs()
              .address(workAddress + lengthsAt[c])
              .address(offsets[c].address())
              .address(status + 3L * Long.BYTES)
              .address(status + 2L * Long.BYTES)
              .address(workAddress + stringTileStatusAt[c])
              .address(status + Long.BYTES));
        }
      }
      // The host buffer's row counts were copied before this overwrites them (stream order).
      stream.copyDeviceToHost(workAddress + statusAt, host.memoryAddress(), statusBytes);
      stream.synchronize();
      queued = false;

      int[] nulls = new int[columns];
      long[] stringBytes = new long[columns];
      for (int c = 0; c < columns; c++) {
        long at = 4L * Long.BYTES * c;
        long n = host.getLong(at);
        if (n < 0 || n > batchRows) {
          throw new IllegalStateException(CudaHashJoin.GATHER_KERNEL + " reported " + n
              + " nulls in output column " + c + " of " + batchRows + " rows: a kernel bug");
        }
        nulls[c] = (int) n;
        if (outputTypes.get(c).isString()) {
          stringBytes[c] = host.getLong(at + Long.BYTES);
          if (stringBytes[c] < 0 || stringBytes[c] > MAX_STRING_BYTES) {
            throw new IllegalStateException("a string column holds at most 2 GiB of text");
          }
        }
      }
      for (int c = 0; c < columns; c++) {
        if (outputTypes.get(c).isString()) {
          data[c] = DeviceBuffer.allocate(pool, stringBytes[c]);
          if (stringBytes[c] > 0) {
            queued = true;
            kernels.launch(CudaFilterProject.STRING_GATHER_KERNEL, tiles, stream,
                new KernelArgs()
                    .address(offsets[c].address())
                    .address(workAddress + sourcesAt[c])
                    .address(data[c].address())
                    .i32(batchRows));
          }
        }
      }
      if (queued) {
        stream.synchronize();
        queued = false;
      }
      return assemble(nulls, stringBytes);
    }

    /** The batch's columns; a column without nulls gives its bitmap back (as the host does). */
    private ColumnBatch<DeviceColumn> assemble(int[] nulls, long[] stringBytes) {
      List<DeviceColumn> out = new ArrayList<>(columns);
      try {
        assembleInto(out, nulls, stringBytes);
      } catch (RuntimeException e) {
        for (DeviceColumn column : out) {
          try {
            column.close();
          } catch (RuntimeException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        throw e;
      }
      return new ColumnBatch<>(out, batchRows);
    }

    private void assembleInto(List<DeviceColumn> out, int[] nulls, long[] stringBytes) {
      for (int c = 0; c < columns; c++) {
        ColumnType type = outputTypes.get(c);
        if (nulls[c] == 0) {
          DeviceBuffer unused = validity[c];
          validity[c] = null;
          unused.close();
        }
        long dataBytes = type.isString() ? stringBytes[c] : type.fixedDataBytes(batchRows);
        out.add(new DeviceColumn(type, batchRows, nulls[c], data[c], validity[c], offsets[c],
            dataBytes));
        data[c] = null;
        validity[c] = null;
        offsets[c] = null;
      }
    }

    private <T extends AutoCloseable> T batchTemporary(T resource) {
      batchTemporaries.add(resource);
      return resource;
    }
  }
}
