package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.memory.DeviceStore;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.cache.CachedColumnKey;
import dev.tessera.spark.cache.TesseraCachedBatch;
import dev.tessera.spark.cache.TesseraCachedBatchSerializer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.InputAdapter;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.WholeStageCodegenExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.Function2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The scan of a table cached in Tessera's format, for the GPU node above it: where an upload
 * ({@link HostToDeviceExec}) would copy the rows Spark's cache scan decodes, this node hands the
 * GPU the device copies of the cached columns, still GPU-FOR / GPU-DFOR encoded (the kernels
 * decode them as they load them). The copies live in the executor's device store, uploaded on a
 * miss and shared by every task and query until evicted or the table is unpersisted. Its child is
 * Spark's cache scan, which it reads the relation, the pruning predicates and the output from;
 * Spark's batch pruning applies as it does for that scan.
 */
public final class TesseraCacheScanExec extends DeviceInputExec {
  private static final long serialVersionUID = 1L;

  /**
   * @param scan Spark's scan of the cached table (possibly in its query stage or codegen wrapper)
   * @param ordinals the scan's output columns to read, in this node's output order
   */
  public TesseraCacheScanExec(SparkPlan scan, int[] ordinals) {
    super(scan, ordinals);
  }

  /**
   * Spark's scan of a table in Tessera's format under {@code plan} (itself or through the
   * wrappers Spark puts over it), or null.
   */
  public static InMemoryTableScanExec tesseraCacheScan(SparkPlan plan) {
    SparkPlan node = plan;
    while (true) {
      if (node instanceof ColumnarToRowExec c) {
        node = c.child();
      } else if (node instanceof InputAdapter a) {
        node = a.child();
      } else if (node instanceof WholeStageCodegenExec w) {
        node = w.child();
      } else if (node instanceof QueryStageExec q) {
        node = q.plan();
      } else {
        break;
      }
    }
    if (node instanceof InMemoryTableScanExec scan
        && scan.relation().cacheBuilder().serializer() instanceof TesseraCachedBatchSerializer
        && scan.relation().cacheBuilder().serializer()
            .supportsColumnarOutput(scan.relation().schema())) {
      return scan;
    }
    return null;
  }

  private InMemoryTableScanExec scan() {
    InMemoryTableScanExec scan = tesseraCacheScan(child());
    if (scan == null) {
      throw new IllegalStateException("Tessera bug: no cache scan under " + child().nodeName());
    }
    return scan;
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.CACHE_ENCODED_BYTES, ExecMetrics.CACHE_PLAIN_BYTES,
        ExecMetrics.DEVICE_STORE_HITS, ExecMetrics.DEVICE_STORE_MISSES,
        ExecMetrics.BYTES_TO_DEVICE, ExecMetrics.COPY_TIME, ExecMetrics.GPU_WAIT_TIME};
  }

  /**
   * The metrics of {@link #metricNames()} and, per output column, the bytes read as stored and
   * uncompressed (the table-wide encodings and bit widths: {@code CacheSummary}).
   */
  @Override
  protected Map<String, SQLMetric> createMetrics() {
    Map<String, SQLMetric> metrics = super.createMetrics();
    List<Attribute> attributes = CollectionConverters.asJava(output());
    for (int i = 0; i < attributes.size(); i++) {
      for (boolean stored : new boolean[] {true, false}) {
        metrics.put(ExecMetrics.cachedColumnKey(i, stored),
            ExecMetrics.cachedColumn(sparkContext(), attributes.get(i).name(), stored));
      }
    }
    return metrics;
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    InMemoryTableScanExec scan = scan();
    List<Attribute> cached = CollectionConverters.asJava(scan.relation().output());
    List<Attribute> scanOutput = CollectionConverters.asJava(scan.output());
    List<Attribute> attributes = CollectionConverters.asJava(output());
    int[] ordinals = ordinals();
    int[] columns = new int[ordinals.length];
    for (int i = 0; i < ordinals.length; i++) {
      columns[i] = indexOf(cached, scanOutput.get(ordinals[i]));
    }
    RDD<CachedBatch> buffers = scan.relation().cacheBuilder().cachedColumnBuffers();
    Function2<Object, scala.collection.Iterator<CachedBatch>,
        scala.collection.Iterator<CachedBatch>> prune = conf().inMemoryPartitionPruning()
            ? scan.relation().cacheBuilder().serializer()
                .buildFilter(scan.predicates(), scan.relation().output())
            : null;
    int rddId = buffers.id();
    Map<String, SQLMetric> m = metricMap();
    return buffers.toJavaRDD().mapPartitionsWithIndex(
        (Integer partition, Iterator<CachedBatch> batches) -> {
          Iterator<CachedBatch> kept = prune == null ? batches
              : CollectionConverters.asJava(
                  prune.apply(partition, CollectionConverters.asScala(batches)));
          return (Iterator<ColumnarBatch>) new Reader(kept, rddId, partition, columns,
              attributes, m);
        }, true).rdd();
  }

  private static int indexOf(List<Attribute> cached, Attribute a) {
    for (int c = 0; c < cached.size(); c++) {
      if (cached.get(c).exprId().equals(a.exprId())) {
        return c;
      }
    }
    throw new IllegalStateException("Tessera bug: " + a + " is not a cached column");
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new TesseraCacheScanExec(newChild, ordinals());
  }

  @Override
  protected List<Object> arguments() {
    return List.of(ordinals());
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraCacheScanExec " + CollectionConverters.asJava(output());
  }

  /** One task's device batches: each cached batch's columns, from the device store. */
  private static final class Reader implements Iterator<ColumnarBatch> {
    private final Iterator<CachedBatch> batches;
    private final int rddId;
    private final int partition;
    private final int[] columns;
    private final List<Attribute> attributes;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final DeviceStore store = TesseraRuntime.deviceStore();
    private GpuStream stream;

    Reader(Iterator<CachedBatch> batches, int rddId, int partition, int[] columns,
        List<Attribute> attributes, Map<String, SQLMetric> metrics) {
      this.batches = batches;
      this.rddId = rddId;
      this.partition = partition;
      this.columns = columns;
      this.attributes = attributes;
      this.metrics = metrics;
      CachedColumnKey.releaseUnpersisted(store);
    }

    @Override
    public boolean hasNext() {
      return batches.hasNext();
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      TesseraCachedBatch batch = (TesseraCachedBatch) batches.next();
      GpuAdmission.admitCurrentTask(metrics.get(ExecMetrics.GPU_WAIT_TIME));
      List<DeviceColumn> read = new ArrayList<>(columns.length);
      try {
        for (int i = 0; i < columns.length; i++) {
          read.add(column(batch, i));
        }
      } catch (RuntimeException e) {
        read.forEach(DeviceColumn::close);
        throw e;
      }
      metrics.get(ExecMetrics.OUTPUT_ROWS).add(batch.numRows());
      metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
      return DeviceBatches.wrap(new ColumnBatch<>(read, batch.numRows()), attributes);
    }

    /**
     * Output column {@code i} of {@code batch} on the device: the store's copy (uploaded on a
     * miss), or, for a column larger than the store's whole cap, a copy for this batch alone.
     */
    private DeviceColumn column(TesseraCachedBatch batch, int i) {
      int c = columns[i];
      EncodedColumn encoded = batch.column(c);
      metrics.get(ExecMetrics.CACHE_ENCODED_BYTES).add(encoded.encodedBytes());
      metrics.get(ExecMetrics.CACHE_PLAIN_BYTES).add(encoded.plainBytes());
      metrics.get(ExecMetrics.cachedColumnKey(i, true)).add(encoded.encodedBytes());
      metrics.get(ExecMetrics.cachedColumnKey(i, false)).add(encoded.plainBytes());
      if (!store.fits(encoded.encodedBytes())) {
        DeviceEncodedColumn own = upload(encoded);
        return own.borrow(own);
      }
      CachedColumnKey key = new CachedColumnKey(batch.id(), c, rddId, partition);
      boolean[] uploaded = {false};
      DeviceStore.Lease<DeviceEncodedColumn> lease;
      try {
        lease = store.acquire(key, () -> {
          uploaded[0] = true;
          return upload(encoded);
        }, DeviceEncodedColumn::deviceBytes);
      } catch (PoolExhaustedException e) {
        // The pool is full: make room from what no task reads, and try once more.
        store.evictIdle();
        lease = store.acquire(key, () -> {
          uploaded[0] = true;
          return upload(encoded);
        }, DeviceEncodedColumn::deviceBytes);
      }
      metrics.get(uploaded[0] ? ExecMetrics.DEVICE_STORE_MISSES : ExecMetrics.DEVICE_STORE_HITS)
          .add(1);
      return lease.value().borrow(lease);
    }

    private DeviceEncodedColumn upload(EncodedColumn encoded) {
      if (stream == null) {
        stream = backend.newStream();
        GpuStream s = stream;
        TaskResources.closeAtTaskEnd(s::close);
      }
      long started = System.nanoTime();
      DeviceEncodedColumn copy = DeviceEncodedColumn.upload(encoded, backend.deviceMemory(),
          backend.stagingAllocator(), stream);
      metrics.get(ExecMetrics.COPY_TIME).add(System.nanoTime() - started);
      metrics.get(ExecMetrics.BYTES_TO_DEVICE).add(copy.deviceBytes());
      return copy;
    }
  }
}
