package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.kernels.FilterProjectKernel;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.FilterProjectStep;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Filters and projects on the GPU: one fused kernel launch per device batch evaluates every
 * filter and projection of the chain of Spark nodes it replaced.
 */
public final class TesseraFilterProjectExec extends TesseraDeviceExec {
  private static final long serialVersionUID = 1L;
  private final Program program;
  private final List<Attribute> output;
  private final List<FilterProjectStep> steps;

  public TesseraFilterProjectExec(SparkPlan child, Program program, List<Attribute> output,
      List<FilterProjectStep> steps) {
    super(child);
    this.program = program;
    this.output = List.copyOf(output);
    this.steps = List.copyOf(steps);
  }

  public Program program() {
    return program;
  }

  public List<FilterProjectStep> steps() {
    return steps;
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  public Partitioning outputPartitioning() {
    return child().outputPartitioning();
  }

  @Override
  protected String[] metricNames() {
    return new String[] {ExecMetrics.OUTPUT_ROWS, ExecMetrics.OUTPUT_BATCHES,
        ExecMetrics.KERNEL_TIME};
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    Program p = program;
    List<Attribute> out = output;
    List<Attribute> in = CollectionConverters.asJava(child().output());
    List<FilterProjectStep> s = steps;
    Map<String, SQLMetric> m = metricMap();
    return child().executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) ->
            (Iterator<ColumnarBatch>) new Runner(batches, p, in, out, s, m)).rdd();
  }

  @Override
  public SparkPlan withNewChildInternal(SparkPlan newChild) {
    return new TesseraFilterProjectExec(newChild, program, output, steps);
  }

  @Override
  protected List<Object> arguments() {
    return List.of(program, output, steps);
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraFilterProjectExec " + steps + " -> " + output;
  }

  /** Runs the kernel on each input batch, closing it, and passes the result on. */
  private static final class Runner implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final Program program;
    private final List<Attribute> inputAttributes;
    private final List<Attribute> output;
    private final List<FilterProjectStep> steps;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend = TesseraRuntime.backend();
    private final GpuStream stream = backend.newStream();
    private final FilterProjectKernel kernel = backend.filterProjectKernel();

    Runner(Iterator<ColumnarBatch> input, Program program, List<Attribute> inputAttributes,
        List<Attribute> output, List<FilterProjectStep> steps, Map<String, SQLMetric> metrics) {
      this.input = input;
      this.program = program;
      this.inputAttributes = inputAttributes;
      this.output = output;
      this.steps = steps;
      this.metrics = metrics;
      TaskResources.closeAtTaskEnd(stream);
    }

    @Override
    public boolean hasNext() {
      return input.hasNext();
    }

    @Override
    public ColumnarBatch next() {
      try (ColumnarBatch in = input.next()) {
        ColumnBatch<DeviceColumn> result;
        try {
          result = kernel.run(program, DeviceBatches.view(in), backend.deviceMemory(), stream);
        } catch (RowErrorException e) {
          throw replayOnCpu(in, e);
        }
        metrics.get(ExecMetrics.KERNEL_TIME).add(kernel.lastKernelNanos());
        metrics.get(ExecMetrics.OUTPUT_ROWS).add(result.rowCount());
        metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
        return DeviceBatches.wrap(result, output);
      }
    }

    private RuntimeException replayOnCpu(ColumnarBatch in, RowErrorException error) {
      return SparkReplay.raiseForDeviceBatch(in, inputAttributes, steps, error, backend, stream);
    }
  }
}
