package dev.tessera.spark.exec;

import dev.tessera.gpu.memory.PoolExhaustedException;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.spark.Dependency;
import org.apache.spark.OneToOneDependency;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * The rows of a GPU plan, or, in a task whose executor has no usable device runtime, of the
 * Spark plan it replaced ({@link CpuFallbackExec}). The two have the same partitions; a task
 * computes only one of them, so the inputs they share are read once. A task whose GPU plan runs
 * out of device memory before its first row (an operator could neither split its work nor wait
 * for other tasks: see {@link MemoryPressure}) switches to the Spark plan too, reading its
 * partition's inputs again, instead of failing.
 */
final class CpuFallbackRDD extends RDD<InternalRow> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(CpuFallbackRDD.class);
  /** Whether this JVM has said that its tasks run the Spark plans. */
  private static final AtomicBoolean LOGGED = new AtomicBoolean();

  private RDD<InternalRow> gpu;
  private RDD<InternalRow> cpu;
  private final SQLMetric fallbackTasks;

  /** @param fallbackTasks counts the tasks that ran {@code cpu} */
  CpuFallbackRDD(RDD<InternalRow> gpu, RDD<InternalRow> cpu, SQLMetric fallbackTasks) {
    super(gpu.context(), dependencies(gpu, cpu), ClassTag$.MODULE$.apply(InternalRow.class));
    this.gpu = gpu;
    this.cpu = cpu;
    this.fallbackTasks = fallbackTasks;
  }

  private static Seq<Dependency<?>> dependencies(RDD<InternalRow> gpu, RDD<InternalRow> cpu) {
    List<Dependency<?>> deps = List.of(new OneToOneDependency<>(gpu),
        new OneToOneDependency<>(cpu));
    return CollectionConverters.asScala(deps).toSeq();
  }

  /** A partition of both plans: the same index, each plan's own partition object. */
  private record Split(int index, Partition gpu, Partition cpu) implements Partition {
    private static final long serialVersionUID = 1L;
  }

  @Override
  public Partition[] getPartitions() {
    // On the driver: a task's partition carries both, as executors cannot compute partitions.
    Partition[] g = gpu.partitions();
    Partition[] c = cpu.partitions();
    Partition[] splits = new Partition[g.length];
    for (int i = 0; i < g.length; i++) {
      splits[i] = new Split(i, g[i], c[i]);
    }
    return splits;
  }

  @Override
  public Seq<String> getPreferredLocations(Partition split) {
    return gpu.preferredLocations(((Split) split).gpu());
  }

  @Override
  public Iterator<InternalRow> compute(Partition split, TaskContext context) {
    Split s = (Split) split;
    RDD<InternalRow> sparkPlan = cpu;
    if (TesseraRuntime.isUsable()) {
      return new SparkPlanWhenMemoryRunsOut(gpu.iterator(s.gpu(), context),
          () -> {
            fallbackTasks.add(1);
            return sparkPlan.iterator(s.cpu(), context);
          }, context);
    }
    if (LOGGED.compareAndSet(false, true)) {
      LOG.info("Tessera: no usable device runtime in this executor ({}); its tasks run Spark's"
          + " plans in place of the GPU ones", TesseraRuntime.unusableReason());
    }
    fallbackTasks.add(1);
    return cpu.iterator(s.cpu(), context);
  }

  /**
   * The GPU plan's rows, or, when device memory runs out before the first of them, the Spark
   * plan's. After a row has gone on, the error stands: the Spark plan would repeat that row.
   */
  private static final class SparkPlanWhenMemoryRunsOut extends AbstractIterator<InternalRow> {
    private Iterator<InternalRow> rows;
    private final Supplier<Iterator<InternalRow>> sparkPlan;
    private final TaskContext context;
    private boolean produced;
    private boolean onCpu;

    SparkPlanWhenMemoryRunsOut(Iterator<InternalRow> gpuRows,
        Supplier<Iterator<InternalRow>> sparkPlan, TaskContext context) {
      this.rows = gpuRows;
      this.sparkPlan = sparkPlan;
      this.context = context;
    }

    @Override
    public boolean hasNext() {
      try {
        return rows.hasNext();
      } catch (RuntimeException e) {
        switchOrRethrow(e);
        return rows.hasNext();
      }
    }

    @Override
    public InternalRow next() {
      InternalRow row;
      try {
        row = rows.next();
      } catch (RuntimeException e) {
        switchOrRethrow(e);
        row = rows.next();
      }
      produced = true;
      return row;
    }

    private void switchOrRethrow(RuntimeException e) {
      PoolExhaustedException shortage = memoryShortage(e);
      if (onCpu || produced || shortage == null) {
        throw e;
      }
      LOG.warn("Tessera: task {} (stage {}) ran out of device memory in a GPU step before its"
          + " first row, even in parts; it runs Spark's plan for that step instead (raise {} to"
          + " keep it on the GPU): {}", context.taskAttemptId(), context.stageId(),
          TesseraConf.DEVICE_CAP_BYTES.key(), shortage.getMessage());
      onCpu = true;
      rows = sparkPlan.get();
    }

    private static PoolExhaustedException memoryShortage(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof PoolExhaustedException p) {
          return p;
        }
      }
      return null;
    }
  }

  @Override
  public void clearDependencies() {
    super.clearDependencies();
    gpu = null;
    cpu = null;
  }
}
