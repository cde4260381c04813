package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.kernels.FilterProjectKernel;
import dev.tessera.spark.TesseraRuntime;
import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A broadcast hash join on the GPU. The stream side comes as device batches; the build side is
 * Spark's own broadcast (a HashedRelation, whichever exchange, query stage or reused exchange
 * made it), which each executor turns into one device join table per broadcast, shared by its
 * tasks ({@link JoinTableCache}).
 *
 * <p>Which way a batch goes is known only once the table is built: when no build key repeats
 * (or the join is a semi or anti join, which needs only whether a match exists) one fused
 * program probes, filters and projects ({@link Plan#probe}); otherwise the 1:N expand runs
 * between a program that computes the stream keys and one that filters and projects the joined
 * rows.
 */
public final class TesseraBroadcastHashJoinExec extends SparkPlan {
  private static final long serialVersionUID = 1L;

  /** How the join's output relates to its stream side. */
  public enum Kind {
    INNER, LEFT_OUTER, LEFT_SEMI, LEFT_ANTI;

    boolean matchOnly() {
      return this == LEFT_SEMI || this == LEFT_ANTI;
    }
  }

  /**
   * What the rewrite compiled.
   *
   * @param kind the join, seen from the stream side
   * @param schema the join table: the build keys' types, then the payload columns' types
   * @param buildKeys the build keys, bound to the build side's output
   * @param payload the build side's output columns the table carries, by ordinal
   * @param probe the fused program over a stream batch: probe, filter, project to the output
   * @param keys over a stream batch: its columns, then the stream keys (for expand)
   * @param expanded over an expanded batch (keys' output, then the payload): the condition, if
   *     any, and the projection to the output
   * @param maxRowsPerBatch the most rows of one expanded batch
   */
  public record Plan(Kind kind, JoinTableSchema schema, List<Expression> buildKeys, int[] payload,
      Program probe, Program keys, Program expanded, int maxRowsPerBatch)
      implements Serializable {}

  private final SparkPlan stream;
  private final SparkPlan build;
  private final Plan plan;
  private final List<Attribute> output;
  private final String description;
  private transient Map<String, SQLMetric> metrics;

  public TesseraBroadcastHashJoinExec(SparkPlan stream, SparkPlan build, Plan plan,
      List<Attribute> output, String description) {
    this.stream = stream;
    this.build = build;
    this.plan = plan;
    this.output = List.copyOf(output);
    this.description = description;
  }

  public SparkPlan stream() {
    return stream;
  }

  public SparkPlan build() {
    return build;
  }

  public Plan plan() {
    return plan;
  }

  @Override
  public Seq<SparkPlan> children() {
    return CollectionConverters.asScala(List.of(stream, build)).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new TesseraBroadcastHashJoinExec(children.apply(0), children.apply(1), plan, output,
        description);
  }

  @Override
  public Seq<Attribute> output() {
    return CollectionConverters.asScala(output).toSeq();
  }

  @Override
  public Partitioning outputPartitioning() {
    return stream.outputPartitioning();
  }

  @Override
  public boolean supportsColumnar() {
    return true;
  }

  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    return ExecMetrics.toScala(metricMap());
  }

  private synchronized Map<String, SQLMetric> metricMap() {
    if (metrics == null) {
      metrics = ExecMetrics.create(sparkContext(), new String[] {ExecMetrics.OUTPUT_ROWS,
          ExecMetrics.OUTPUT_BATCHES, ExecMetrics.KERNEL_TIME});
    }
    return metrics;
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new IllegalStateException("TesseraBroadcastHashJoinExec produces device batches only");
  }

  @Override
  @SuppressWarnings("unchecked")
  public RDD<ColumnarBatch> doExecuteColumnar() {
    Broadcast<HashedRelation> relation = (Broadcast<HashedRelation>) (Broadcast<?>)
        build.executeBroadcast();
    String tableKey = JoinTableCache.key(sparkContext().applicationId(), relation.id());
    Plan p = plan;
    List<Attribute> out = output;
    List<ColumnType> buildTypes = new ArrayList<>(p.schema().keyTypes());
    buildTypes.addAll(p.schema().payloadTypes());
    Map<String, SQLMetric> m = metricMap();
    return stream.executeColumnar().toJavaRDD().mapPartitions(
        (Iterator<ColumnarBatch> batches) -> {
          Backend backend = TesseraRuntime.backend();
          GpuStream gpu = backend.newStream();
          JoinTableCache.Handle table;
          try {
            table = JoinTableCache.acquire(tableKey,
                () -> buildTable(relation.value(), p, buildTypes, backend, gpu));
          } catch (RuntimeException e) {
            gpu.close();
            throw e;
          }
          TaskResources.closeAtTaskEnd(() -> {
            try (gpu) {
              table.close();
            }
          });
          return (Iterator<ColumnarBatch>) new Runner(batches, p, table.table(), out, m, backend,
              gpu);
        }).rdd();
  }

  /** Spark's broadcast relation -> host columns -> device -> join table. */
  private static JoinTable buildTable(HashedRelation relation, Plan p, List<ColumnType> types,
      Backend backend, GpuStream gpu) {
    HashedRelation readOnly = relation.asReadOnlyCopy();
    try (ColumnBatch<HostColumn> host = BuildSideColumns.collect(readOnly, p.buildKeys(),
            p.payload(), types, backend.stagingAllocator());
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), gpu)) {
      gpu.synchronize();
      return backend.hashJoinKernel().build(p.schema(), device, backend.deviceMemory(), gpu);
    }
  }

  @Override
  public int productArity() {
    return 5;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> stream;
      case 1 -> build;
      case 2 -> plan;
      case 3 -> output;
      case 4 -> description;
      default -> throw new IndexOutOfBoundsException(String.valueOf(n));
    };
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof TesseraBroadcastHashJoinExec;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TesseraBroadcastHashJoinExec j && stream.equals(j.stream)
        && build.equals(j.build) && plan.probe().equals(j.plan.probe())
        && plan.kind() == j.plan.kind() && output.equals(j.output);
  }

  @Override
  public int hashCode() {
    return stream.hashCode() * 31 + build.hashCode();
  }

  @Override
  public String simpleString(int maxFields) {
    return "TesseraBroadcastHashJoinExec " + description + " -> " + output;
  }

  /** Joins each stream batch (closing it) and passes the joined batches on. */
  private static final class Runner implements Iterator<ColumnarBatch> {
    private final Iterator<ColumnarBatch> input;
    private final Plan plan;
    private final JoinTable table;
    private final List<Attribute> output;
    private final Map<String, SQLMetric> metrics;
    private final Backend backend;
    private final GpuStream gpu;
    private final FilterProjectKernel kernel;
    private final Deque<ColumnBatch<DeviceColumn>> ready = new ArrayDeque<>();

    Runner(Iterator<ColumnarBatch> input, Plan plan, JoinTable table, List<Attribute> output,
        Map<String, SQLMetric> metrics, Backend backend, GpuStream gpu) {
      this.input = input;
      this.plan = plan;
      this.table = table;
      this.output = output;
      this.metrics = metrics;
      this.backend = backend;
      this.gpu = gpu;
      this.kernel = backend.filterProjectKernel();
      TaskResources.closeAtTaskEnd(() -> ready.forEach(ColumnBatch::close));
    }

    @Override
    public boolean hasNext() {
      while (ready.isEmpty() && input.hasNext()) {
        try (ColumnarBatch in = input.next()) {
          join(DeviceBatches.view(in));
        }
      }
      return !ready.isEmpty();
    }

    @Override
    public ColumnarBatch next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      ColumnBatch<DeviceColumn> result = ready.removeFirst();
      metrics.get(ExecMetrics.OUTPUT_ROWS).add(result.rowCount());
      metrics.get(ExecMetrics.OUTPUT_BATCHES).add(1);
      return DeviceBatches.wrap(result, output);
    }

    private void join(ColumnBatch<DeviceColumn> batch) {
      List<JoinTable> tables = List.of(table);
      if (table.uniqueKeys() || plan.kind().matchOnly()) {
        ready.addLast(run(plan.probe(), tables, batch));
        return;
      }
      int streamColumns = batch.columns().size();
      int[] keyColumns = new int[plan.schema().keyTypes().size()];
      Arrays.setAll(keyColumns, i -> streamColumns + i);
      try (ColumnBatch<DeviceColumn> keyed = run(plan.keys(), List.of(), batch)) {
        List<ColumnBatch<DeviceColumn>> expanded = backend.hashJoinKernel().expand(table, keyed,
            keyColumns, plan.kind() == Kind.LEFT_OUTER, plan.maxRowsPerBatch(),
            backend.deviceMemory(), gpu);
        try {
          for (ColumnBatch<DeviceColumn> e : expanded) {
            ready.addLast(run(plan.expanded(), List.of(), e));
          }
        } finally {
          expanded.forEach(ColumnBatch::close);
        }
      }
    }

    private ColumnBatch<DeviceColumn> run(Program program, List<JoinTable> tables,
        ColumnBatch<DeviceColumn> batch) {
      ColumnBatch<DeviceColumn> result = kernel.run(program, tables, batch,
          backend.deviceMemory(), gpu);
      metrics.get(ExecMetrics.KERNEL_TIME).add(kernel.lastKernelNanos());
      return result;
    }
  }
}
