package dev.tessera.spark.exec;

import dev.tessera.spark.TesseraRuntime;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.Dependency;
import org.apache.spark.OneToOneDependency;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * The rows of a GPU plan, or, in a task whose executor has no usable device runtime, of the
 * Spark plan it replaced ({@link CpuFallbackExec}). The two have the same partitions; a task
 * computes only one of them, so the inputs they share are read once.
 */
final class CpuFallbackRDD extends RDD<InternalRow> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(CpuFallbackRDD.class);
  /** Whether this JVM has said that its tasks run the Spark plans. */
  private static final AtomicBoolean LOGGED = new AtomicBoolean();

  private RDD<InternalRow> gpu;
  private RDD<InternalRow> cpu;

  CpuFallbackRDD(RDD<InternalRow> gpu, RDD<InternalRow> cpu) {
    super(gpu.context(), dependencies(gpu, cpu), ClassTag$.MODULE$.apply(InternalRow.class));
    this.gpu = gpu;
    this.cpu = cpu;
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
    if (TesseraRuntime.isUsable()) {
      return gpu.iterator(s.gpu(), context);
    }
    if (LOGGED.compareAndSet(false, true)) {
      LOG.info("Tessera: no usable device runtime in this executor ({}); its tasks run Spark's"
          + " plans in place of the GPU ones", TesseraRuntime.unusableReason());
    }
    return cpu.iterator(s.cpu(), context);
  }

  @Override
  public void clearDependencies() {
    super.clearDependencies();
    gpu = null;
    cpu = null;
  }
}
