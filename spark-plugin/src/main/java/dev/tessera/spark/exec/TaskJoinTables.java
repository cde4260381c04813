package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.memory.DeviceStore;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.expr.JoinProbe;
import dev.tessera.spark.expr.Pipeline;
import dev.tessera.spark.expr.PipelineCompiler;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.joins.EmptyHashedRelation$;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The join tables one task of a pipeline node probes: a lease on each build side's device table,
 * an entry of the executor's device store ({@link TesseraRuntime#deviceStore()}) that its tasks
 * share (DESIGN.md §3, "Joins": built once per broadcast and executor), and Spark's relations
 * (for replaying a batch on the CPU). Closing it releases the leases; the store keeps an idle
 * table for the query's later tasks while its cap allows.
 */
final class TaskJoinTables implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TaskJoinTables.class);
  /**
   * One build side as the tasks find it: its broadcast, the table's key in the store, and
   * whether it is Spark's EmptyHashedRelation (no build rows at all: see
   * {@link PipelineCompiler#overEmptyBuildSides}).
   */
  record Source(String cacheKey, Broadcast<HashedRelation> relation, boolean empty)
      implements Serializable {}

  private final List<DeviceStore.Lease<JoinTable>> leases;
  private final List<Broadcast<HashedRelation>> relations;

  private TaskJoinTables(List<DeviceStore.Lease<JoinTable>> leases,
      List<Broadcast<HashedRelation>> relations) {
    this.leases = leases;
    this.relations = relations;
  }

  /**
   * On the driver: the broadcasts of the build sides (Spark runs them if it has not yet), by
   * table. A table's key in the store is its broadcast's and the shape of the table built from
   * it: one reused broadcast may serve an inner join (which carries payload) and a semi join
   * (which does not).
   */
  @SuppressWarnings("unchecked")
  static List<Source> sources(List<SparkPlan> builds, List<JoinProbe> probes, SparkContext sc) {
    List<Source> sources = new ArrayList<>(builds.size());
    for (int t = 0; t < builds.size(); t++) {
      Broadcast<HashedRelation> relation = (Broadcast<HashedRelation>) (Broadcast<?>)
          builds.get(t).executeBroadcast();
      JoinProbe probe = probes.get(t);
      String shape = probe.buildKeys() + " " + java.util.Arrays.toString(probe.payload());
      sources.add(new Source(key(sc.applicationId(), relation.id()) + " " + shape,
          relation, relation.value() == EmptyHashedRelation$.MODULE$));
    }
    return sources;
  }

  /**
   * A broadcast's part of a store key: its id with the application's, since broadcast ids start
   * again at 0 in each SparkContext, and a local JVM may run one after another. Prefixed, so that
   * these keys never meet another owner's in the store.
   */
  static String key(String applicationId, long broadcastId) {
    return "join table " + applicationId + "/" + broadcastId;
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

  /**
   * In a task: every build side's table, built from its broadcast by the first of the executor's
   * tasks to ask, in {@code backend}'s memory (the runtime's backend, whose store keeps it).
   *
   * <p>First the tables that are built already or that no task is building (building those),
   * then the ones other tasks are building, waiting for them: so when a query's tasks start
   * together, each of its tables is built by a different task at the same time, rather than all
   * tasks waiting on one task's builds one after another (SSB 4.1 at scale factor 10: its four
   * tables).
   */
  static TaskJoinTables acquire(List<Source> sources, List<JoinProbe> probes, Backend backend,
      GpuStream stream) {
    List<DeviceStore.Lease<JoinTable>> leases =
        new ArrayList<>(Collections.nCopies(sources.size(), null));
    try {
      DeviceStore store = sources.isEmpty() ? null : TesseraRuntime.deviceStore();
      for (boolean wait : new boolean[] {false, true}) {
        for (int t = 0; t < sources.size(); t++) {
          if (leases.get(t) != null) {
            continue;
          }
          Source source = sources.get(t);
          JoinProbe probe = probes.get(t);
          Supplier<JoinTable> build = () -> build(source, source.relation().value(), probe,
              backend, stream);
          leases.set(t, wait ? store.acquire(source.cacheKey(), build, JoinTable::deviceBytes)
              : store.acquireUnlessBuilding(source.cacheKey(), build, JoinTable::deviceBytes));
        }
      }
    } catch (RuntimeException e) {
      leases.stream().filter(Objects::nonNull).forEach(DeviceStore.Lease::close);
      throw e;
    }
    return new TaskJoinTables(leases, sources.stream().map(Source::relation).toList());
  }

  /**
   * Starts {@link #acquire} on a thread of its own, so that the task reads and uploads its first
   * input batch while its join tables are built: a build (Spark's rows turned into columns) took
   * up to 70 ms at SSB scale factor 10, and every task of the query waited for it before it
   * read any input. Where there are no tables it acquires nothing and starts no thread.
   */
  static Pending acquireInBackground(List<Source> sources, List<JoinProbe> probes,
      Backend backend) {
    if (sources.isEmpty()) {
      return new Pending(CompletableFuture.completedFuture(
          new Acquired(new TaskJoinTables(List.of(), List.of()), 0)));
    }
    return new Pending(CompletableFuture.supplyAsync(() -> {
      long started = System.nanoTime();
      try (GpuStream stream = backend.newStream()) {
        return new Acquired(acquire(sources, probes, backend, stream),
            System.nanoTime() - started);
      }
    }, BUILDERS));
  }

  /** A task's tables, and how long getting them took (building them or waiting for a build). */
  record Acquired(TaskJoinTables tables, long nanos) {}

  /** A task's join tables under way ({@link #acquireInBackground}); closed at the task's end. */
  static final class Pending implements AutoCloseable {
    private final CompletableFuture<Acquired> future;

    Pending(CompletableFuture<Acquired> future) {
      this.future = future;
    }

    /**
     * The tables, waiting for them if they are still under way (not interruptibly: a killed task
     * ends once the build it waits for has). Adds the time the acquisition took to
     * {@code acquiring} and the time this waited for it to {@code waiting}; call once.
     */
    TaskJoinTables get(SQLMetric acquiring, SQLMetric waiting) {
      long started = System.nanoTime();
      Acquired acquired;
      try {
        acquired = future.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        } else if (e.getCause() instanceof Error err) {
          throw err;
        }
        throw e;
      } finally {
        waiting.add(System.nanoTime() - started);
      }
      acquiring.add(acquired.nanos());
      return acquired.tables();
    }

    /** Releases the tables' leases: now, or when an acquisition still under way ends. */
    @Override
    public void close() {
      future.whenComplete((acquired, error) -> {
        if (acquired != null) {
          acquired.tables().close();
        }
      });
    }
  }

  /** The threads that acquire tasks' join tables ({@link #acquireInBackground}). */
  private static final ExecutorService BUILDERS = Executors.newCachedThreadPool(runnable -> {
    Thread thread = new Thread(runnable, "tessera-join-tables");
    thread.setDaemon(true);
    return thread;
  });

  /**
   * Spark's broadcast relation -> host columns -> device -> join table. Logs the time of each
   * step (once per table and executor): every task of the query waits for the slowest build.
   */
  private static JoinTable build(Source source, HashedRelation relation, JoinProbe probe,
      Backend backend, GpuStream stream) {
    List<ColumnType> types = probe.schema().buildColumnTypes();
    long started = System.nanoTime();
    try (ColumnBatch<HostColumn> host = BuildSideColumns.collect(relation.asReadOnlyCopy(),
            probe.buildKeys(), probe.payload(), types, backend.stagingAllocator())) {
      long collected = System.nanoTime();
      try (ColumnBatch<DeviceColumn> device =
          ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream)) {
        stream.synchronize();
        long uploaded = System.nanoTime();
        JoinTable table = backend.hashJoinKernel().build(probe.schema(), device,
            backend.deviceMemory(), stream);
        LOG.info("Tessera: built the join table of {} ({} rows, {} device bytes) in {} ms:"
            + " host columns {} ms, upload {} ms, table {} ms", source.cacheKey(),
            host.rowCount(), table.deviceBytes(), millis(System.nanoTime() - started),
            millis(collected - started), millis(uploaded - collected),
            millis(System.nanoTime() - uploaded));
        return table;
      }
    }
  }

  private static String millis(long nanos) {
    return String.format("%.1f", nanos / 1e6);
  }

  JoinTable table(int t) {
    return leases.get(t).value();
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
    leases.forEach(DeviceStore.Lease::close);
  }
}
