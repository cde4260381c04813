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
 * A new batch whose rows are rows of device columns, listed by index on the device: a join's
 * expansion (probe rows and build rows) and the top-k's first rows (of the rows it held and a
 * new batch) gather their output this way. {@value #GATHER_KERNEL} writes each fixed-width
 * column and every validity bitmap; a string column gets its offsets and bytes from
 * filter_project.cu's string kernels. A column without NULLs gives its bitmap back (as the host
 * reference does).
 */
final class CudaGather {
  static final String GATHER_KERNEL = "tessera_join_gather";
  private static final int TILE_STATUS_BYTES = Long.BYTES;
  /** Offsets of a string column are int32 (Arrow's layout). */
  private static final long MAX_STRING_BYTES = Integer.MAX_VALUE;

  /**
   * One output column: row o is row {@code sourceRows[o]} (int32 on the device; -1 gives NULL)
   * of the source column described by {@code first} (a program.cuh InputColumn on the device),
   * or, from {@code split} on, row {@code sourceRows[o] - split} of {@code second}.
   */
  record Column(ColumnType type, long first, long second, int split, long sourceRows) {
    /** A column gathered from one source. */
    static Column of(ColumnType type, long source, long sourceRows) {
      return new Column(type, source, source, Integer.MAX_VALUE, sourceRows);
    }
  }

  private final CudaDevice device;
  private final BufferAllocator staging;
  private final ArenaPool pool;
  private final CudaStream stream;
  private final int rows;
  private final List<Column> columns;
  private final DeviceBuffer[] data;
  private final DeviceBuffer[] validity;
  private final DeviceBuffer[] offsets;
  private final List<AutoCloseable> temporaries = new ArrayList<>();
  private boolean queued;

  private CudaGather(CudaDevice device, BufferAllocator staging, ArenaPool pool,
      CudaStream stream, int rows, List<Column> columns) {
    this.device = device;
    this.staging = staging;
    this.pool = pool;
    this.stream = stream;
    this.rows = rows;
    this.columns = List.copyOf(columns);
    this.data = new DeviceBuffer[columns.size()];
    this.validity = new DeviceBuffer[columns.size()];
    this.offsets = new DeviceBuffer[columns.size()];
  }

  /**
   * The gathered batch of {@code rows} rows, in new buffers from {@code pool}; waits for it. The
   * sources and the row lists stay the caller's, and must stay valid until this returns.
   */
  static ColumnBatch<DeviceColumn> gather(CudaDevice device, BufferAllocator staging,
      ArenaPool pool, CudaStream stream, int rows, List<Column> columns) {
    return new CudaGather(device, staging, pool, stream, rows, columns).write();
  }

  private ColumnBatch<DeviceColumn> write() {
    try {
      ColumnBatch<DeviceColumn> batch = execute();
      Closing.closeAll(temporaries, null);
      return batch;
    } catch (RuntimeException | Error e) {
      if (queued) {
        stream.synchronizeAfter(e);
        queued = false;
      }
      for (DeviceBuffer[] buffers : List.of(data, validity, offsets)) {
        for (DeviceBuffer buffer : buffers) {
          if (buffer != null && !buffer.isClosed()) {
            temporaries.add(buffer);
          }
        }
      }
      Closing.closeAll(temporaries, e);
      throw e;
    }
  }

  private ColumnBatch<DeviceColumn> execute() {
    int count = columns.size();
    LaunchShape tiles = LaunchShape.tilesFor(rows);
    // Work: per output column its status (null count, string bytes, string tile counter, kept
    // rows for the string kernels), zeroed with the string tile states; then string temporaries.
    Sections work = new Sections();
    long statusAt = work.add(4L * Long.BYTES * count);
    long[] stringTileStatusAt = new long[count];
    for (int c = 0; c < count; c++) {
      if (columns.get(c).type().isString()) {
        stringTileStatusAt[c] = work.add((long) TILE_STATUS_BYTES * tiles.gridBlocks());
      }
    }
    long zeroed = work.size();
    long[] lengthsAt = new long[count];
    long[] sourcesAt = new long[count];
    for (int c = 0; c < count; c++) {
      if (columns.get(c).type().isString()) {
        lengthsAt[c] = work.add((long) Integer.BYTES * rows);
        sourcesAt[c] = work.add((long) Long.BYTES * rows);
      }
    }
    DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
    long workAddress = workBuffer.address();
    long statusBytes = 4L * Long.BYTES * count;
    ArrowBuf host = temporary(staging.buffer(Math.max(Long.BYTES, statusBytes)));

    queued = true;
    stream.fill(workAddress, zeroed, (byte) 0);
    // The string kernels read the row count from the device: each string status's 4th word.
    for (int c = 0; c < count; c++) {
      host.setLong((long) Long.BYTES * c, rows);
    }
    KernelModule kernels = device.kernels();
    for (int c = 0; c < count; c++) {
      Column column = columns.get(c);
      ColumnType type = column.type();
      long status = workAddress + statusAt + 4L * Long.BYTES * c;
      validity[c] = DeviceBuffer.allocate(pool, Validity.bytesFor(rows));
      stream.fill(validity[c].address(), validity[c].size(), (byte) 0);
      if (type.isString()) {
        offsets[c] = DeviceBuffer.allocate(pool, Integer.BYTES * (rows + 1L));
        stream.copyHostToDevice(host.memoryAddress() + (long) Long.BYTES * c,
            status + 3L * Long.BYTES, Long.BYTES);
      } else {
        data[c] = DeviceBuffer.allocate(pool, type.fixedDataBytes(rows));
      }
      kernels.launch(GATHER_KERNEL, tiles, stream, new KernelArgs()
          .address(column.first())
          .address(column.second())
          .i32(column.split())
          .address(column.sourceRows())
          .i64(rows)
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

    int[] nulls = new int[count];
    long[] stringBytes = new long[count];
    for (int c = 0; c < count; c++) {
      long at = 4L * Long.BYTES * c;
      long n = host.getLong(at);
      if (n < 0 || n > rows) {
        throw new IllegalStateException(GATHER_KERNEL + " reported " + n
            + " nulls in output column " + c + " of " + rows + " rows: a kernel bug");
      }
      nulls[c] = (int) n;
      if (columns.get(c).type().isString()) {
        stringBytes[c] = host.getLong(at + Long.BYTES);
        if (stringBytes[c] < 0 || stringBytes[c] > MAX_STRING_BYTES) {
          throw new IllegalStateException("a string column holds at most 2 GiB of text");
        }
      }
    }
    for (int c = 0; c < count; c++) {
      if (columns.get(c).type().isString()) {
        data[c] = DeviceBuffer.allocate(pool, stringBytes[c]);
        if (stringBytes[c] > 0) {
          queued = true;
          kernels.launch(CudaFilterProject.STRING_GATHER_KERNEL, tiles, stream,
              new KernelArgs()
                  .address(offsets[c].address())
                  .address(workAddress + sourcesAt[c])
                  .address(data[c].address())
                  .i32(rows));
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
    List<DeviceColumn> out = new ArrayList<>(columns.size());
    try {
      for (int c = 0; c < columns.size(); c++) {
        ColumnType type = columns.get(c).type();
        if (nulls[c] == 0) {
          DeviceBuffer unused = validity[c];
          validity[c] = null;
          unused.close();
        }
        long dataBytes = type.isString() ? stringBytes[c] : type.fixedDataBytes(rows);
        out.add(new DeviceColumn(type, rows, nulls[c], data[c], validity[c], offsets[c],
            dataBytes));
        data[c] = null;
        validity[c] = null;
        offsets[c] = null;
      }
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
    return new ColumnBatch<>(out, rows);
  }

  private <T extends AutoCloseable> T temporary(T resource) {
    temporaries.add(resource);
    return resource;
  }
}
