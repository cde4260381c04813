package dev.tessera.gpu.cuda;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
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
 * row) of each output row and {@link CudaGather} gathers every output column (the probe's
 * columns, then the table's payloads). Owns every buffer until the batches take them.
 */
final class CudaJoinExpand {
  /** Rows of one output batch: int32 row indexes, and offsets of rows + 1 entries. */
  static final int MAX_ROWS_PER_BATCH = 1 << 30;
  private static final int TILE_STATUS_BYTES = Long.BYTES;
  private static final int INPUT_COLUMN_BYTES = ProgramPlan.INPUT_COLUMN_BYTES;

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

    OutputBatch(long begin, int batchRows) {
      this.begin = begin;
      this.batchRows = batchRows;
    }

    /** The (probe row, build row) of each output row, then every output column gathered. */
    ColumnBatch<DeviceColumn> write() {
      Sections work = new Sections();
      long probeRowsAt = work.add((long) Integer.BYTES * batchRows);
      long buildRowsAt = work.add((long) Integer.BYTES * batchRows);
      DeviceBuffer workBuffer = DeviceBuffer.allocate(pool, work.size());
      try {
        long workAddress = workBuffer.address();
        device.kernels().launch(CudaHashJoin.EXPAND_ROWS_KERNEL, LaunchShape.tilesFor(rows),
            stream, new KernelArgs()
                .address(table.viewAddress())
                .address(headsAddress)
                .address(startsAddress)
                .i32(rows)
                .i32(leftOuter ? 1 : 0)
                .i64(begin)
                .i64(begin + batchRows)
                .address(workAddress + probeRowsAt)
                .address(workAddress + buildRowsAt));
        int probeColumns = probe.columns().size();
        List<CudaGather.Column> columns = new ArrayList<>(outputTypes.size());
        for (int c = 0; c < outputTypes.size(); c++) {
          boolean fromProbe = c < probeColumns;
          long source = fromProbe ? probeColumnsAddress + (long) INPUT_COLUMN_BYTES * c
              : table.payloadColumnsAddress() + (long) INPUT_COLUMN_BYTES * (c - probeColumns);
          columns.add(CudaGather.Column.of(outputTypes.get(c), source,
              workAddress + (fromProbe ? probeRowsAt : buildRowsAt)));
        }
        // The gather waits for its results, so the row lists can go when it returns.
        return CudaGather.gather(device, staging, pool, stream, batchRows, columns);
      } catch (RuntimeException | Error e) {
        stream.synchronizeAfter(e); // the expansion may still be writing the row lists
        throw e;
      } finally {
        workBuffer.close();
      }
    }
  }
}
