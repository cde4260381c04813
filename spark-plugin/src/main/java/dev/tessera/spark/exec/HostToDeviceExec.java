package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.HostColumnBuilder;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The transition into the GPU: reads its child's Spark columnar batches (a Parquet or cache scan,
 * or Spark's own row-to-columnar conversion), copies the columns the GPU nodes above read into
 * pinned staging buffers, coalescing small batches up to the target batch size, and uploads them.
 */
public final class HostToDeviceExec extends TesseraDeviceExec {
  private static final long serialVersionUID = 1L;
  private final int[] ordinals;
  private final long targetBatchBytes;

  /**
   * @param ordinals the child's output columns to upload, in this node's output order
   * @param targetBatchBytes the staging bytes after which a device batch is sent
   */
  public HostToDeviceExec(SparkPlan child, int[] ordinals, long targetBatchBytes) {
    super(child);
    this.ordinals = ordinals.clone();
    this.targetBatchBytes = targetBatchBytes;
  }

  @Override
  public Seq<Attribute> output() {
    List<Attribute> in = CollectionConverters.asJava(child().output());
    List<Attribute> out = new ArrayList<>(ordinals.length);
    for (int o : ordinals) {
      out.add(in.get(o));
    }
    return CollectionConverters.asScala(out).toSeq();
  }

  @Override
  public Partitioning outputPartitioning() {
    return OutputPartitioning.through(child().outputPartitioning(), List.of(),
        CollectionConverters.asJava(output()));
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return child().outputOrdering(); // batches keep the rows' order
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES, ExecMetrics.BYTES_TO_DEVICE,
        ExecMetrics.COPY_TIME};
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
    int[] columns = ordinals;
    long target = targetBatchBytes;
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) ->
            (Iterator<ColumnarBatch>) new Uploader(batches, columns, types, attributes, target, m))
        .rdd();
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new HostToDeviceExec(newChild, ordinals, targetBatchBytes);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(ordinals, targetBatchBytes);
  }

  @Override
  public String simpleString(int maxFields) {
    return "HostToDeviceExec " + CollectionConverters.asJava(output());
  }

  /** Pulls Spark batches, fills staging builders up to the target size, uploads each batch. */
  private static final class Uploader implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final int[] ordinals;
    private final List<ColumnType> types;
    private final List<Attribute> attributes;
    private final long targetBytes;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final GpuStream stream = backend.newStream();

    Uploader(Iterator<ColumnarBatch> input, int[] ordinals, List<ColumnType> types,
        List<Attribute> attributes, long targetBytes, Map<String, SQLMetric> metrics) {
      this.input = input;
      this.ordinals = ordinals;
      this.types = types;
      this.attributes = attributes;
      this.targetBytes = targetBytes;
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(stream);
    }

    @Override
    public boolean hasNext() {
      return input.hasNext();
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      List<HostColumnBuilder> builders = new ArrayList<>(types.size());
      long started = System.nanoTime();
      try {
        for (ColumnType t : types) {
          builders.add(new HostColumnBuilder(t, 4096, backend.stagingAllocator()));
        }
        int rows = 0;
        long bytes = 0;
        while (input.hasNext() && (rows == 0 || bytes < targetBytes)) {
          ColumnarBatch batch = input.next();
          int n = batch.numRows();
          bytes = 0;
          for (int c = 0; c < ordinals.length; c++) {
            SparkColumnReader.append(batch.column(ordinals[c]), n, types.get(c), builders.get(c));
            bytes += builders.get(c).bytesUsed();
          }
          rows += n;
        }
        return upload(builders, rows, started);
      } finally {
        builders.forEach(HostColumnBuilder::close);
      }
    }

    private ColumnarBatch upload(List<HostColumnBuilder> builders, int rows, long started) {
      List<HostColumn> columns = new ArrayList<>(builders.size());
      for (HostColumnBuilder b : builders) {
        columns.add(b.build());
      }
      try (ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, rows)) {
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
        try {
          stream.synchronize(); // the staging buffers are released when this block ends
        } catch (RuntimeException e) {
          device.close();
          throw e;
        }
        long bytes = 0;
        for (HostColumn c : columns) {
          bytes += c.dataBytes();
        }
        metrics.get(ExecMetrics.BYTES_TO_DEVICE).add(bytes);
        metrics.get(ExecMetrics.COPY_TIME).add(System.nanoTime() - started);
        metrics.get(ExecMetrics.OUTPUT_ROWS).add(rows);
        metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
        return DeviceBatches.wrap(device, attributes);
      }
    }
  }
}
