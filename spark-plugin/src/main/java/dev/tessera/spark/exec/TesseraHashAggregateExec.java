package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.spark.TesseraRuntime;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.errors.QueryExecutionErrors;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Hash aggregation on the GPU: one aggregation state per task takes every device batch of the
 * partition, and the groups are emitted once at the end as one device batch.
 */
public final class TesseraHashAggregateExec extends TesseraUnaryExec {
  private static final long serialVersionUID = 1L;
  private final AggregateSpec spec;
  private final List<Attribute> output;
  private final String description;

  /**
   * @param spec the aggregation over the child's columns (keys first)
   * @param output the attributes of the keys, then of the functions
   * @param description the Spark aggregate this replaces, for plans and explain
   */
  public TesseraHashAggregateExec(SparkPlan child, AggregateSpec spec, List<Attribute> output,
      String description) {
    super(child);
    this.spec = spec;
    this.output = List.copyOf(output);
    this.description = description;
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  public boolean supportsColumnar() {
    return true;
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME};
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new IllegalStateException("TesseraHashAggregateExec produces device batches only");
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    AggregateSpec s = spec;
    List<Attribute> out = output;
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> List.of(aggregate(batches, s, out, m)).iterator())
        .rdd();
  }

  private static ColumnarBatch aggregate(Iterator<ColumnarBatch> batches, AggregateSpec spec,
      List<Attribute> output, Map<String, SQLMetric> metrics) {
    Backend backend = TesseraRuntime.backend();
    HashAggregateKernel kernel = backend.hashAggregateKernel();
    long started = System.nanoTime();
    try (GpuStream stream = backend.newStream();
        HashAggregateKernel.Aggregation aggregation =
            kernel.open(spec, backend.deviceMemory(), stream)) {
      while (batches.hasNext()) {
        try (ColumnarBatch batch = batches.next()) {
          aggregation.update(DeviceBatches.view(batch));
        }
      }
      ColumnBatch<DeviceColumn> groups;
      try {
        groups = aggregation.finish();
      } catch (RowErrorException e) {
        throw sparkError(e);
      }
      metrics.get(ExecMetrics.KERNEL_TIME).add(System.nanoTime() - started);
      metrics.get(ExecMetrics.OUTPUT_ROWS).add(groups.rowCount());
      metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
      return DeviceBatches.wrap(groups, output);
    }
  }

  /** Spark's error for an overflowing sum, as Spark's own Sum raises it under ANSI. */
  private static RuntimeException sparkError(RowErrorException e) {
    if (e.error() == RowError.ARITHMETIC_OVERFLOW) {
      return (RuntimeException) QueryExecutionErrors.arithmeticOverflowError("long overflow",
          "try_sum", null);
    }
    return e;
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new TesseraHashAggregateExec(newChild, spec, output, description);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(spec, output, description);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraHashAggregateExec " + description + " -> " + output;
  }

}
