package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The transition into the GPU: reads its child's Spark columnar batches (a Parquet or cache scan,
 * or Spark's own row-to-columnar conversion), copies the columns the GPU nodes above read into
 * pinned staging buffers, coalescing small batches up to the target batch size, and uploads them.
 */
public final class HostToDeviceExec extends DeviceInputExec {
  private static final long serialVersionUID = 1L;
  private final long targetBatchBytes;
  private final boolean dictionaryIds;

  /**
   * @param ordinals the child's output columns to upload, in this node's output order
   * @param targetBatchBytes the staging bytes after which a device batch is sent
   * @param dictionaryIds whether dictionary-encoded columns are sent as their ids and entries and
   *     decoded on the device (spark.tessera.upload.dictionaryIds.enabled)
   */
  public HostToDeviceExec(SparkPlan child, int[] ordinals, long targetBatchBytes,
      boolean dictionaryIds) {
    super(child, ordinals);
    this.targetBatchBytes = targetBatchBytes;
    this.dictionaryIds = dictionaryIds;
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES, ExecMetrics.BYTES_TO_DEVICE,
        ExecMetrics.DICTIONARY_COLUMNS, ExecMetrics.INPUT_TIME, ExecMetrics.STAGING_TIME,
        ExecMetrics.TRANSFER_TIME,
        ExecMetrics.BATCH_SPLITS, ExecMetrics.MEMORY_WAITS, ExecMetrics.GPU_WAIT_TIME};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    List<Attribute> attributes = CollectionConverters.asJava(output());
    List<ColumnType> types = new ArrayList<>();
    for (Attribute a : attributes) {
      try {
        types.add(SparkTypes.columnType(a.dataType()));
      } catch (Unsupported e) {
        throw new IllegalStateException("Tessera bug: planned an upload of " + a.sql(), e);
      }
    }
    int[] columns = ordinals();
    long target = targetBatchBytes;
    boolean ids = dictionaryIds;
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> (Iterator<ColumnarBatch>) new Uploader(batches,
            columns, types, attributes, target, ids, m))
        .rdd();
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new HostToDeviceExec(newChild, ordinals(), targetBatchBytes, dictionaryIds);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(ordinals(), targetBatchBytes, dictionaryIds);
  }

  @Override
  public String simpleString(int maxFields) {
    return "HostToDeviceExec " + CollectionConverters.asJava(output());
  }

  /**
   * Pulls Spark batches, fills staging builders up to the target size (counting string bytes: a
   * large Spark batch is cut into several device batches), uploads each batch. When memory runs
   * out (DESIGN.md §2) it waits for other tasks to free some, then splits: a staged batch that
   * does not fit on the device is uploaded in halves, down to one row, and later batches are
   * built no larger than what fitted. (Staging never runs out: beyond the pinned cap it is
   * pageable, see StagingAllocators.)
   *
   * <p>Where enabled (spark.tessera.upload.dictionaryIds.enabled), a column whose
   * first rows in a staged batch come dictionary-encoded from Spark's Parquet reader is staged as
   * ids and entries for the whole batch ({@link DictionaryIds}) and decoded on the device after
   * the transfer.
   *
   * <p>Its time is reported in three parts, so the slowest step of the way in is visible: the
   * input's (Spark decoding Parquet, reading a shuffle, converting rows), the staging copy's, and
   * the transfer's.
   */
  private static final class Uploader implements Iterator<ColumnarBatch> {
    private static final Logger LOG = LoggerFactory.getLogger(HostToDeviceExec.class);
    /** Rows of the first chunk appended from a Spark batch, before the row width is known. */
    private static final int FIRST_CHUNK_ROWS = 64;

    private final Iterator<ColumnarBatch> input;
    private final int[] ordinals;
    private final List<ColumnType> types;
    /** Each string column's dictionary entries decoded so far (Parquet's, shared by batches). */
    private final DictionaryStrings[] strings;
    /**
     * Per column, its staging as dictionary ids (where enabled and the type allows),
     * used for a staged batch whose first Spark batch is dictionary-encoded; else null.
     */
    private final DictionaryIds[] dictionaryIds;
    private final List<Attribute> attributes;
    private final long targetBytes;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final GpuStream stream = backend.newStream();
    /** The Spark batch being read and the next row of it to stage (Spark owns the batch). */
    private ColumnarBatch current;
    private int currentRow;
    /** Staged batches waiting for their upload (halves of one that did not fit), in order. */
    private final Deque<StagedBatch> staged = new ArrayDeque<>();
    /** The most rows a device batch gets: lowered when a batch did not fit. */
    private int maxRows = Integer.MAX_VALUE;
    /**
     * The rows and each column's text bytes of the last batch staged: the next one is staged
     * into buffers of that size (with a margin), rather than grown from a few rows each time.
     */
    private int lastRows;
    private long[] lastTextBytes;
    private final boolean[] warned = new boolean[1];
    /** Time spent in the input's hasNext and next so far: what staging's time leaves out. */
    private long inputNanos;

    Uploader(Iterator<ColumnarBatch> input, int[] ordinals, List<ColumnType> types,
        List<Attribute> attributes, long targetBytes, boolean stageDictionaryIds,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.ordinals = ordinals;
      this.types = types;
      this.strings = new DictionaryStrings[types.size()];
      this.dictionaryIds = new DictionaryIds[types.size()];
      for (int c = 0; c < strings.length; c++) {
        ColumnType type = types.get(c);
        strings[c] = type.isString() ? new DictionaryStrings() : null;
        dictionaryIds[c] = stageDictionaryIds && DictionaryIds.stageable(type)
            ? new DictionaryIds(type, backend.stagingAllocator()) : null;
      }
      this.attributes = attributes;
      this.targetBytes = targetBytes;
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(stream);
      TaskResources.closeAtTaskEnd(() -> {
        staged.forEach(StagedBatch::close);
        staged.clear();
        for (DictionaryIds ids : dictionaryIds) {
          if (ids != null) {
            ids.close();
          }
        }
      });
    }

    @Override
    public boolean hasNext() {
      while (!staged.isEmpty() && staged.peekFirst().rowCount() == 0) {
        staged.removeFirst().close(); // an empty half: nothing to send
      }
      if (!staged.isEmpty() || current != null && currentRow < current.numRows()) {
        return true;
      }
      // Only now: asking a Spark reader for its next batch may overwrite the current one.
      return inputHasNext();
    }

    /** The input's hasNext, timed: a Spark reader decodes its next batch there. */
    private boolean inputHasNext() {
      long started = System.nanoTime();
      boolean more = input.hasNext();
      inputTime(started);
      return more;
    }

    private ColumnarBatch inputNext() {
      long started = System.nanoTime();
      ColumnarBatch batch = input.next();
      inputTime(started);
      return batch;
    }

    private void inputTime(long started) {
      long nanos = System.nanoTime() - started;
      inputNanos += nanos;
      metrics.get(ExecMetrics.INPUT_TIME).add(nanos);
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      if (staged.isEmpty()) {
        staged.addFirst(stage());
      }
      return upload();
    }

    /** Stages rows from the input up to the target size (and {@link #maxRows}). */
    private StagedBatch stage() {
      long started = System.nanoTime();
      long inputBefore = inputNanos;
      HostColumnBuilder[] builders = new HostColumnBuilder[types.size()];
      try {
        int initial = (int) Math.min(maxRows, Math.max(1024, lastRows + lastRows / 8L));
        int rows = 0;
        long bytes = 0;
        while (rows < maxRows && (rows == 0 || bytes < targetBytes)) {
          if (current == null || currentRow >= current.numRows()) {
            if (!inputHasNext()) {
              break;
            }
            current = inputNext();
            currentRow = 0;
            continue;
          }
          int left = Math.min(current.numRows() - currentRow, maxRows - rows);
          int chunk = rows == 0 ? Math.min(left, FIRST_CHUNK_ROWS)
              : (int) Math.max(1, Math.min(left, (targetBytes - bytes) / Math.max(1, bytes / rows)));
          bytes = 0;
          for (int c = 0; c < ordinals.length; c++) {
            bytes += appendChunk(c, current.column(ordinals[c]), currentRow, chunk, initial,
                builders);
          }
          currentRow += chunk;
          rows += chunk;
        }
        List<HostColumn> columns = new ArrayList<>(types.size());
        List<HostColumn> dictionaries = new ArrayList<>(types.size());
        try {
          for (int c = 0; c < types.size(); c++) {
            if (dictionaryIds[c] != null && dictionaryIds[c].started()) {
              HostColumn[] idsAndEntries = dictionaryIds[c].finish();
              columns.add(idsAndEntries[0]);
              dictionaries.add(idsAndEntries[1]);
            } else {
              columns.add(builder(c, initial, builders).build());
              dictionaries.add(null);
            }
          }
        } catch (RuntimeException e) {
          columns.forEach(HostColumn::close);
          dictionaries.stream().filter(d -> d != null).forEach(HostColumn::close);
          throw e;
        }
        lastRows = rows;
        lastTextBytes = new long[columns.size()];
        for (int c = 0; c < columns.size(); c++) {
          lastTextBytes[c] = columns.get(c).type().isString() ? columns.get(c).dataBytes() : 0;
        }
        return new StagedBatch(new ColumnBatch<>(columns, rows), dictionaries);
      } finally {
        for (HostColumnBuilder b : builders) {
          if (b != null) {
            b.close();
          }
        }
        for (DictionaryIds ids : dictionaryIds) {
          if (ids != null) {
            ids.close(); // only a batch that failed is still under way here
          }
        }
        long input = inputNanos - inputBefore;
        metrics.get(ExecMetrics.STAGING_TIME).add(System.nanoTime() - started - input);
      }
    }

    /**
     * Appends rows [from, from + count) of column {@code c}'s Spark vector to the staged batch:
     * as dictionary ids where the batch's first rows of the column came dictionary-encoded,
     * else as values. Returns the column's staging bytes so far.
     */
    private long appendChunk(int c, ColumnVector vector, int from, int count, int initial,
        HostColumnBuilder[] builders) {
      DictionaryIds ids = dictionaryIds[c];
      if (ids != null && (ids.started()
          || builders[c] == null && DictionaryIds.dictionaryEncoded(vector))) {
        if (!ids.started()) {
          ids.start(initial);
        }
        ids.append(vector, from, count);
        return ids.bytesUsed();
      }
      HostColumnBuilder out = builder(c, initial, builders);
      SparkColumnReader.append(vector, from, from + count, types.get(c), out, strings[c]);
      return out.bytesUsed();
    }

    /** Column {@code c}'s builder of values, made at its first use. */
    private HostColumnBuilder builder(int c, int initial, HostColumnBuilder[] builders) {
      if (builders[c] == null) {
        long text = lastTextBytes == null ? 8L * initial
            : lastTextBytes[c] + lastTextBytes[c] / 8;
        builders[c] = new HostColumnBuilder(types.get(c), initial, text,
            backend.stagingAllocator());
      }
      return builders[c];
    }

    /** Uploads the first staged batch, splitting it in halves while it does not fit. */
    private ColumnarBatch upload() {
      GpuAdmission.admitCurrentTask(metrics.get(ExecMetrics.GPU_WAIT_TIME));
      long started = System.nanoTime();
      while (true) {
        StagedBatch host = staged.peekFirst();
        ColumnBatch<DeviceColumn> device;
        try {
          device = MemoryPressure.waitingForOthers(backend,
              metrics.get(ExecMetrics.MEMORY_WAITS), () -> toDevice(host));
        } catch (PoolExhaustedException e) {
          if (host.rowCount() <= 1) {
            throw MemoryPressure.oneRowDoesNotFit("for its upload to the device", e);
          }
          split(e);
          int half = host.rowCount() / 2;
          maxRows = Math.max(1, half);
          StagedBatch first = MemoryPressure.waitingForOthers(backend,
              metrics.get(ExecMetrics.MEMORY_WAITS),
              () -> host.slice(0, half, backend.stagingAllocator()));
          StagedBatch second;
          try {
            second = MemoryPressure.waitingForOthers(backend,
                metrics.get(ExecMetrics.MEMORY_WAITS),
                () -> host.slice(half, host.rowCount(), backend.stagingAllocator()));
          } catch (RuntimeException e2) {
            first.close();
            throw e2;
          }
          staged.removeFirst().close();
          staged.addFirst(second);
          staged.addFirst(first);
          continue;
        }
        staged.removeFirst();
        try (host) {
          metrics.get(ExecMetrics.BYTES_TO_DEVICE).add(host.dataBytes());
          metrics.get(ExecMetrics.TRANSFER_TIME).add(System.nanoTime() - started);
          metrics.get(ExecMetrics.OUTPUT_ROWS).add(host.rowCount());
          metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
          return DeviceBatches.wrap(device, attributes);
        }
      }
    }

    /**
     * The staged batch on the device: its columns copied, and each column staged as dictionary
     * ids decoded there from its entries.
     */
    private ColumnBatch<DeviceColumn> toDevice(StagedBatch host) {
      ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(host.columns(), backend.deviceMemory(), stream);
      List<DeviceColumn> entries = new ArrayList<>();
      try {
        for (int c = 0; c < types.size(); c++) {
          if (host.dictionary(c) != null) {
            entries.add(ColumnTransfer.toDeviceAsync(host.dictionary(c), backend.deviceMemory(),
                stream));
          }
        }
        stream.synchronize(); // the staging buffers may be released after this
        return entries.isEmpty() ? device : decoded(host, device, entries);
      } catch (RuntimeException e) {
        device.close();
        throw e;
      } finally {
        entries.forEach(DeviceColumn::close);
      }
    }

    /**
     * {@code device} with each column that holds dictionary ids replaced by its values, decoded
     * from {@code entries} (in column order); closes {@code device}'s id columns.
     */
    private ColumnBatch<DeviceColumn> decoded(StagedBatch host, ColumnBatch<DeviceColumn> device,
        List<DeviceColumn> entries) {
      List<DeviceColumn> ids = new ArrayList<>(entries.size());
      for (int c = 0; c < types.size(); c++) {
        if (host.dictionary(c) != null) {
          ids.add(device.column(c));
        }
      }
      ColumnBatch<DeviceColumn> values = backend.dictionaryKernel().decode(ids, entries,
          device.rowCount(), backend.deviceMemory(), stream);
      List<DeviceColumn> columns = new ArrayList<>(types.size());
      int next = 0;
      for (int c = 0; c < types.size(); c++) {
        columns.add(host.dictionary(c) != null ? values.column(next++) : device.column(c));
      }
      ids.forEach(DeviceColumn::close);
      metrics.get(ExecMetrics.DICTIONARY_COLUMNS).add(entries.size());
      return new ColumnBatch<>(columns, device.rowCount());
    }

    private void split(PoolExhaustedException e) {
      metrics.get(ExecMetrics.BATCH_SPLITS).add(1);
      MemoryPressure.warnOnce(LOG, warned, "Tessera: device memory ran out while uploading a"
          + " batch to the device; it sends smaller batches, which is slower (logged once per"
          + " task; raise {} or lower {} to avoid it): {}", TesseraConf.DEVICE_CAP_BYTES.key(),
          TesseraConf.BATCH_SIZE_BYTES.key(), e.getMessage());
    }
  }
}
