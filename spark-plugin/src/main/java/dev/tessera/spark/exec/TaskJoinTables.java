package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import dev.tessera.spark.expr.PipelineCompiler;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.joins.EmptyHashedRelation$;
import org.apache.spark.sql.execution.joins.HashedRelation;

/**
 * The join tables one task of a pipeline node probes: a reference to each build side's device
 * table, shared by the executor's tasks ({@link JoinTableCache}), and Spark's relations (for
 * replaying a batch on the CPU). Closing it releases the references.
 */
final class TaskJoinTables implements AutoCloseable {
  /**
   * One build side as the tasks find it: its broadcast, the table's name in the cache, and
   * whether it is Spark's EmptyHashedRelation (no build rows at all: see
   * {@link PipelineCompiler#overEmptyBuildSides}).
   */
  record Source(String cacheKey, Broadcast<HashedRelation> relation, boolean empty)
      implements Serializable {}

  private final List<JoinTableCache.Handle> handles;
  private final List<Broadcast<HashedRelation>> relations;

  private TaskJoinTables(List<JoinTableCache.Handle> handles,
      List<Broadcast<HashedRelation>> relations) {
    this.handles = handles;
    this.relations = relations;
  }

  /**
   * On the driver: the broadcasts of the build sides (Spark runs them if it has not yet), by
   * table. A table's cache name is its broadcast's and the shape of the table built from it: one
   * reused broadcast may serve an inner join (which carries payload) and a semi join (which does
   * not).
   */
  @SuppressWarnings("unchecked")
  static List<Source> sources(List<SparkPlan> builds, List<JoinProbe> probes, SparkContext sc) {
    List<Source> sources = new ArrayList<>(builds.size());
    for (int t = 0; t < builds.size(); t++) {
      Broadcast<HashedRelation> relation = (Broadcast<HashedRelation>) (Broadcast<?>)
          builds.get(t).executeBroadcast();
      JoinProbe probe = probes.get(t);
      String shape = probe.buildKeys() + " " + java.util.Arrays.toString(probe.payload());
      sources.add(new Source(JoinTableCache.key(sc.applicationId(), relation.id()) + " " + shape,
          relation, relation.value() == EmptyHashedRelation$.MODULE$));
    }
    return sources;
  }

  /**
   * On the driver: {@code pipeline} as it runs over these build sides (Spark's joins skip the
   * stream keys of an empty one).
   */
  static Pipeline pipelineOver(Pipeline pipeline, List<Source> sources) {
    Set<Integer> empty = new HashSet<>();
    for (int t = 0; t < sources.size(); t++) {
      if (sources.get(t).empty()) {
        empty.add(t);
      }
    }
    return empty.isEmpty() ? pipeline : PipelineCompiler.overEmptyBuildSides(pipeline, empty);
  }

  /** In a task: every build side's table, built from its broadcast by the first task to ask. */
  static TaskJoinTables acquire(List<Source> sources, List<JoinProbe> probes, Backend backend,
      GpuStream stream) {
    List<JoinTableCache.Handle> handles = new ArrayList<>(sources.size());
    List<Broadcast<HashedRelation>> relations = new ArrayList<>(sources.size());
    try {
      for (int t = 0; t < sources.size(); t++) {
        Source source = sources.get(t);
        JoinProbe probe = probes.get(t);
        handles.add(JoinTableCache.acquire(source.cacheKey(),
            () -> build(source.relation().value(), probe, backend, stream)));
        relations.add(source.relation());
      }
    } catch (RuntimeException e) {
      handles.forEach(JoinTableCache.Handle::close);
      throw e;
    }
    return new TaskJoinTables(handles, relations);
  }

  /** Spark's broadcast relation -> host columns -> device -> join table. */
  private static JoinTable build(HashedRelation relation, JoinProbe probe, Backend backend,
      GpuStream stream) {
    List<ColumnType> types = probe.schema().buildColumnTypes();
    try (ColumnBatch<HostColumn> host = BuildSideColumns.collect(relation.asReadOnlyCopy(),
            probe.buildKeys(), probe.payload(), types, backend.stagingAllocator());
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream)) {
      stream.synchronize();
      return backend.hashJoinKernel().build(probe.schema(), device, backend.deviceMemory(),
          stream);
    }
  }

  JoinTable table(int t) {
    return handles.get(t).table();
  }

  /** The tables {@code ordinals} names, in that order (a program's tables). */
  List<JoinTable> select(List<Integer> ordinals) {
    return ordinals.stream().map(this::table).toList();
  }

  /** Whether any of these tables has a build key more than once. */
  boolean anyRepeatedKeys(List<Integer> ordinals) {
    return ordinals.stream().anyMatch(t -> !table(t).uniqueKeys());
  }

  /** Spark's relations, by table (for the CPU replay of a batch). */
  List<HashedRelation> relations() {
    return relations.stream().map(Broadcast::value).toList();
  }

  @Override
  public void close() {
    handles.forEach(JoinTableCache.Handle::close);
  }
}
