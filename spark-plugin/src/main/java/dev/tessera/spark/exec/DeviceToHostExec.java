package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.spark.TesseraRuntime;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.ColumnarToRowTransition;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The transition out of the GPU: copies each device batch back to pinned staging memory and hands
 * its rows, as UnsafeRows, to Spark's next CPU operator. Tessera's transition pass puts it where
 * Spark put a ColumnarToRowExec over a GPU node, and like that one it is a
 * {@link ColumnarToRowTransition}.
 */
public final class DeviceToHostExec extends TesseraPassThroughExec
    implements ColumnarToRowTransition {
  private static final long serialVersionUID = 1L;

  public DeviceToHostExec(SparkPlan child) {
    super(child);
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.BYTES_TO_HOST,
        ExecMetrics.COPY_TIME};
  }

  @Override
  public RDD<InternalRow> doExecute() {
    List<Attribute> attributes = CollectionConverters.asJava(child().output());
    StructType schema = DataTypeUtils.fromAttributes(child().output());
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) ->
            (Iterator<InternalRow>) new Rows(batches, attributes, schema, m)).rdd();
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new DeviceToHostExec(newChild);
  }

  /** Downloads one batch at a time and walks its rows. */
  private static final class Rows implements Iterator<InternalRow> {
    private final Iterator<ColumnarBatch> input;
    private final List<Attribute> attributes;
    private final UnsafeProjection toUnsafe;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final GpuStream stream = backend.newStream();
    private ColumnarBatch current;
    private Iterator<InternalRow> rows = java.util.Collections.emptyIterator();

    Rows(Iterator<ColumnarBatch> input, List<Attribute> attributes, StructType schema,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.attributes = attributes;
      this.toUnsafe = UnsafeProjection.create(schema);
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(stream);
      TaskResources.closeAtTaskEnd(this::closeCurrent);
    }

    @Override
    public boolean hasNext() {
      while (!rows.hasNext()) {
        closeCurrent();
        if (!input.hasNext()) {
          return false;
        }
        download(input.next());
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      metrics.get(ExecMetrics.OUTPUT_ROWS).add(1);
      return toUnsafe.apply(rows.next());
    }

    private void download(ColumnarBatch deviceBatch) {
      long started = System.nanoTime();
      ColumnBatch<HostColumn> host;
      try (deviceBatch) {
        host = ColumnTransfer.toHost(DeviceBatches.view(deviceBatch), backend.stagingAllocator(),
            stream);
      }
      ColumnVector[] vectors = new ColumnVector[host.columns().size()];
      long bytes = 0;
      for (int i = 0; i < vectors.length; i++) {
        vectors[i] = HostColumnVector.owning(attributes.get(i).dataType(), host.column(i));
        bytes += host.column(i).dataBytes();
      }
      metrics.get(ExecMetrics.BYTES_TO_HOST).add(bytes);
      metrics.get(ExecMetrics.COPY_TIME).add(System.nanoTime() - started);
      current = new ColumnarBatch(vectors, host.rowCount());
      rows = current.rowIterator();
    }

    private void closeCurrent() {
      if (current != null) {
        current.close();
        current = null;
      }
    }
  }
}
