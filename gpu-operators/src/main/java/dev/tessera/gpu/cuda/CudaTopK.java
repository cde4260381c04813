package dev.tessera.gpu.cuda;

import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.ArenaPool;
import dev.tessera.gpu.memory.DeviceBuffer;
import dev.tessera.gpu.sort.RunningTopK;
import dev.tessera.gpu.sort.SortKey;
import dev.tessera.gpu.sort.TopKKernel;
import dev.tessera.gpu.sort.TopKSpec;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The CUDA top-k (top_k.cu): for each batch, the candidates are the rows held (in order) and the
 * batch's; the sort kernel takes them 1,024 at a time and keeps each tile's first k (Crystal's
 * bitonic top-k; once k rows are held, candidates after the last of them are set aside unsorted),
 * the merge kernel merges those runs in pairs (keeping the first k) until one is left, and
 * {@link CudaGather} gathers its rows into the new rows held. Ties of the sort keys go by
 * arrival, so the result is exactly the host reference's.
 *
 * <p>One fixed-width sort key is read once per candidate as a 64-bit word in the key's order (the
 * {@code _ordered} kernels); several keys or a string key are compared through their columns.
 */
final class CudaTopK implements TopKKernel {
  static final String SORT_KERNEL = "tessera_topk_sort_tiles";
  static final String MERGE_KERNEL = "tessera_topk_merge";
  static final String ORDERED_SORT_KERNEL = "tessera_topk_sort_tiles_ordered";
  static final String ORDERED_MERGE_KERNEL = "tessera_topk_merge_ordered";
  static final String POSITIONS_KERNEL = "tessera_topk_positions";
  /** top_k.cu: SortKeyView's size (at most TopKSpec.MAX_KEYS of them). */
  static final int SORT_KEY_BYTES = 112;
  /** top_k.cu kSortTile and kSortThreads. */
  static final int SORT_TILE = 1024;
  static final int SORT_THREADS = 256;
  /** top_k.cu: a run's element, a position (PositionOrder) or an OrderedKey. */
  static final int POSITION_BYTES = Integer.BYTES;
  static final int ORDERED_KEY_BYTES = 16;
  /** Candidates of one step: the merge indexes them with 32-bit integers. */
  static final int MAX_CANDIDATES = 1 << 30;
  private static final int INPUT_COLUMN_BYTES = ProgramPlan.INPUT_COLUMN_BYTES;
  // SortKeyView: InputColumn held, InputColumn batch, int descending, int nulls_first, reserved.
  private static final int KEY_HELD = 0;
  private static final int KEY_BATCH = INPUT_COLUMN_BYTES;
  private static final int KEY_DESCENDING = 2 * INPUT_COLUMN_BYTES;
  private static final int KEY_NULLS_FIRST = KEY_DESCENDING + Integer.BYTES;

  private final CudaDevice device;
  private final BufferAllocator staging;

  CudaTopK(CudaBackend backend) {
    this.device = backend.device();
    this.staging = backend.stagingAllocator();
  }

  @Override
  public Running open(TopKSpec spec, ArenaPool pool, GpuStream stream) {
    return new CudaRunning(spec, pool, CudaBackend.cudaStream(stream));
  }

  private final class CudaRunning extends RunningTopK {
    private final ArenaPool pool;
    private final CudaStream stream;
    /** Whether the ordered-key kernels apply: one sort key, of a fixed-width type. */
    private final boolean ordered;

    CudaRunning(TopKSpec spec, ArenaPool pool, CudaStream stream) {
      super(spec);
      this.pool = pool;
      this.stream = stream;
      this.ordered = spec.keys().size() == 1
          && !spec.columnTypes().get(spec.keys().get(0).column()).isString();
    }

    @Override
    protected ColumnBatch<DeviceColumn> step(ColumnBatch<DeviceColumn> held,
        ColumnBatch<DeviceColumn> batch) {
      long candidates = (long) (held == null ? 0 : held.rowCount()) + batch.rowCount();
      if (candidates > MAX_CANDIDATES) {
        throw new IllegalArgumentException("a top-k step takes at most " + MAX_CANDIDATES
            + " rows (held and new); got a batch of " + batch.rowCount()
            + " rows: lower spark.tessera.batchSizeBytes");
      }
      return new Step(held, batch, (int) candidates).run();
    }

    @Override
    protected ColumnBatch<DeviceColumn> empty() {
      List<DeviceColumn> columns = new ArrayList<>();
      try {
        for (var type : spec.columnTypes()) {
          DeviceBuffer data = DeviceBuffer.allocate(pool, 0);
          DeviceBuffer offsets = null;
          try {
            if (type.isString()) {
              offsets = DeviceBuffer.allocate(pool, Integer.BYTES);
              stream.fill(offsets.address(), Integer.BYTES, (byte) 0);
            }
          } catch (RuntimeException e) {
            data.close();
            throw e;
          }
          columns.add(new DeviceColumn(type, 0, 0, data, null, offsets, 0));
        }
        stream.synchronize();
      } catch (RuntimeException e) {
        columns.forEach(DeviceColumn::close);
        throw e;
      }
      return new ColumnBatch<>(columns, 0);
    }

    /** One batch's step: the first k of the rows held and the batch's, gathered. */
    private final class Step {
      private final ColumnBatch<DeviceColumn> held;
      private final ColumnBatch<DeviceColumn> batch;
      private final int heldRows;
      private final int candidates;
      private final List<AutoCloseable> temporaries = new ArrayList<>();

      Step(ColumnBatch<DeviceColumn> held, ColumnBatch<DeviceColumn> batch, int candidates) {
        this.held = held;
        this.batch = batch;
        this.heldRows = held == null ? 0 : held.rowCount();
        this.candidates = candidates;
      }

      ColumnBatch<DeviceColumn> run() {
        try {
          ColumnBatch<DeviceColumn> result = select();
          Closing.closeAll(temporaries, null);
          return result;
        } catch (RuntimeException | Error e) {
          stream.synchronizeAfter(e);
          Closing.closeAll(temporaries, e);
          throw e;
        }
      }

      private ColumnBatch<DeviceColumn> select() {
        int columns = spec.columnTypes().size();
        int keys = spec.keys().size();
        int k = spec.limit();
        int tiles = (candidates + SORT_TILE - 1) / SORT_TILE;
        int firstStride = Math.min(k, SORT_TILE);
        int elementBytes = ordered ? ORDERED_KEY_BYTES : POSITION_BYTES;
        int kept = Math.min(k, candidates);
        // The plan: the keys, then every column's InputColumn among the rows held and the batch.
        Sections plan = new Sections();
        long keysAt = plan.add((long) SORT_KEY_BYTES * keys);
        long heldAt = plan.add((long) INPUT_COLUMN_BYTES * columns);
        long batchAt = plan.add((long) INPUT_COLUMN_BYTES * columns);
        Sections work = new Sections();
        long runsAt = work.add((long) elementBytes * tiles * firstStride);
        long otherRunsAt = work.add((long) elementBytes * tiles * firstStride);
        long positionsAt = ordered ? work.add((long) Integer.BYTES * kept) : -1;
        DeviceBuffer planBuffer = temporary(DeviceBuffer.allocate(pool, plan.size()));
        DeviceBuffer workBuffer = temporary(DeviceBuffer.allocate(pool, work.size()));
        ArrowBuf host = temporary(staging.buffer(plan.size()));
        host.setZero(0, plan.size());
        for (int c = 0; c < columns; c++) {
          DeviceColumn fromBatch = batch.column(c);
          DeviceColumn fromHeld = held == null ? fromBatch : held.column(c);
          ProgramPlan.writeInputColumn(host, heldAt + (long) INPUT_COLUMN_BYTES * c, fromHeld);
          ProgramPlan.writeInputColumn(host, batchAt + (long) INPUT_COLUMN_BYTES * c, fromBatch);
        }
        for (int i = 0; i < keys; i++) {
          SortKey key = spec.keys().get(i);
          long at = keysAt + (long) SORT_KEY_BYTES * i;
          host.setBytes(at + KEY_HELD, host, heldAt + (long) INPUT_COLUMN_BYTES * key.column(),
              INPUT_COLUMN_BYTES);
          host.setBytes(at + KEY_BATCH, host, batchAt + (long) INPUT_COLUMN_BYTES * key.column(),
              INPUT_COLUMN_BYTES);
          host.setInt(at + KEY_DESCENDING, key.descending() ? 1 : 0);
          host.setInt(at + KEY_NULLS_FIRST, key.nullsFirst() ? 1 : 0);
        }
        long planAddress = planBuffer.address();
        long keysAddress = planAddress + keysAt;
        long in = workBuffer.address() + runsAt;
        long out = workBuffer.address() + otherRunsAt;
        stream.copyHostToDevice(host.memoryAddress(), planAddress, plan.size());
        KernelModule kernels = device.kernels();
        kernels.launch(ordered ? ORDERED_SORT_KERNEL : SORT_KERNEL,
            new LaunchShape(tiles, SORT_THREADS, 0), stream, new KernelArgs()
                .address(keysAddress)
                .i32(keys)
                .i32(heldRows)
                .i32(candidates)
                .i32(k)
                .i32(firstStride)
                .address(in));
        long span = SORT_TILE;
        int stride = firstStride;
        for (long runs = tiles; runs > 1; runs = (runs + 1) / 2) {
          int outStride = (int) Math.min(k, 2 * span);
          long slots = runs * stride;
          kernels.launch(ordered ? ORDERED_MERGE_KERNEL : MERGE_KERNEL,
              LaunchShape.tilesFor(slots), stream, new KernelArgs()
              .address(keysAddress)
              .i32(keys)
              .i32(heldRows)
              .i32(candidates)
              .i32(k)
              .i64(span)
              .i32(stride)
              .address(in)
              .i32(outStride)
              .address(out));
          long swap = in;
          in = out;
          out = swap;
          span *= 2;
          stride = outStride;
        }
        long positions = in;
        if (ordered) {
          positions = workBuffer.address() + positionsAt;
          kernels.launch(POSITIONS_KERNEL, LaunchShape.tilesFor(kept), stream, new KernelArgs()
              .address(in)
              .i32(kept)
              .address(positions));
        }
        List<CudaGather.Column> gathered = new ArrayList<>(columns);
        for (int c = 0; c < columns; c++) {
          gathered.add(new CudaGather.Column(spec.columnTypes().get(c),
              planAddress + heldAt + (long) INPUT_COLUMN_BYTES * c,
              planAddress + batchAt + (long) INPUT_COLUMN_BYTES * c, heldRows, positions));
        }
        // The gather waits for its result, so the plan and the runs can go when it returns.
        return CudaGather.gather(device, staging, pool, stream, kept, gathered);
      }

      private <T extends AutoCloseable> T temporary(T resource) {
        temporaries.add(resource);
        return resource;
      }
    }
  }
}
