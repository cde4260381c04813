package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import java.util.ArrayList;
import dev.tessera.spark.TesseraRuntime;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.ColumnarToRowTransition;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The transition out of the GPU: copies each device batch back to pinned staging memory and hands
 * its rows, as UnsafeRows, to Spark's next CPU operator. Spark leaves a
 * {@link ColumnarToRowTransition} and the plan below it alone when it inserts its own transitions.
 */
public final class DeviceToHostExec extends TesseraUnaryExec implements ColumnarToRowTransition {
  private static final long serialVersionUID = 1L;

  public DeviceToHostExec(SparkPlan child) {
    super(child);
  }

  @Override
  public Seq<Attribute> output() {
    return child().output();
  }

  @Override
  public Partitioning outputPartitioning() {
    return child().outputPartitioning();
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return child().outputOrdering();
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
    private static final Logger LOG = LoggerFactory.getLogger(DeviceToHostExec.class);
    private final Iterator<ColumnarBatch> input;
    private final List<Attribute> attributes;
    private final UnsafeProjection toUnsafe;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final GpuStream stream = backend.newStream();
    private ColumnarBatch current;
    /** A device batch being downloaded in parts (pinned memory ran out), and the next part. */
    private ColumnarBatch parts;
    private int partFrom;
    private int partRows;
    private final boolean[] warned = new boolean[1];
    private Iterator<InternalRow> rows = java.util.Collections.emptyIterator();

    Rows(Iterator<ColumnarBatch> input, List<Attribute> attributes, StructType schema,
        Map<String, SQLMetric> metrics) {
      this.input = input;
      this.attributes = attributes;
      this.toUnsafe = UnsafeProjection.create(schema);
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(stream);
      TaskResources.closeAtTaskEnd(this::closeCurrent);
      TaskResources.closeAtTaskEnd(() -> {
        if (parts != null) {
          parts.close();
          parts = null;
        }
      });
    }

    @Override
    public boolean hasNext() {
      while (!rows.hasNext()) {
        closeCurrent();
        if (parts != null) {
          nextPart(System.nanoTime());
          continue;
        }
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
      boolean keep = false;
      try {
        ColumnBatch<DeviceColumn> view = DeviceBatches.view(deviceBatch);
        try {
          host = MemoryPressure.waitingForOthers(backend, null,
              () -> ColumnTransfer.toHost(view, backend.stagingAllocator(), stream));
        } catch (PoolExhaustedException e) {
          // Not in pinned memory at once: keep the device batch and download it in parts.
          if (view.rowCount() <= 8) {
            throw MemoryPressure.oneRowDoesNotFit("for the download to the host", e);
          }
          MemoryPressure.warnOnce(LOG, warned, "Tessera: pinned staging memory ran out while"
              + " downloading a batch of {} rows; it downloads it in parts, which is slower"
              + " (logged once per task; raise {} to avoid it): {}", view.rowCount(),
              TesseraConf.PINNED_CAP_BYTES.key(), e.getMessage());
          parts = deviceBatch;
          keep = true;
          partFrom = 0;
          partRows = Math.max(8, (view.rowCount() / 2) & ~7);
          nextPart(started);
          return;
        }
      } finally {
        if (!keep) {
          deviceBatch.close();
        }
      }
      show(host, started);
    }

    /** Downloads the next part of {@link #parts}, halving the part while it does not fit. */
    private void nextPart(long started) {
      ColumnBatch<DeviceColumn> view = DeviceBatches.view(parts);
      while (true) {
        int to = Math.min(view.rowCount(), partFrom + partRows);
        List<HostColumn> columns = new ArrayList<>();
        try {
          for (DeviceColumn c : view.columns()) {
            int from = partFrom;
            columns.add(MemoryPressure.waitingForOthers(backend, null,
                () -> MemoryPressure.toHostRange(c, from, to, backend.stagingAllocator(),
                    stream)));
          }
        } catch (PoolExhaustedException e) {
          columns.forEach(HostColumn::close);
          if (partRows <= 8) {
            throw MemoryPressure.oneRowDoesNotFit("for the download to the host", e);
          }
          partRows = Math.max(8, (partRows / 2) & ~7);
          continue;
        }
        ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, to - partFrom);
        partFrom = to;
        if (partFrom >= view.rowCount()) {
          parts.close();
          parts = null;
        }
        show(host, started);
        return;
      }
    }

    private void show(ColumnBatch<HostColumn> host, long started) {
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
