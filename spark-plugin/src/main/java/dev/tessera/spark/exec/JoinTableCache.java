package dev.tessera.spark.exec;

import dev.tessera.gpu.join.JoinTable;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The join tables of this executor, one per broadcast (DESIGN.md §3, "Joins"): the first task
 * that probes a broadcast builds its table, the executor's other tasks share it. Each task holds
 * a reference while it runs. A table nobody references stays for the next tasks of the query (a
 * later stage or wave), up to {@link #MAX_IDLE} such tables, the oldest going first; the rest
 * close when the runtime does ({@link #closeAll}), before its device memory goes.
 */
public final class JoinTableCache {
  /** Idle tables kept: a few queries' worth of dimension tables. */
  static final int MAX_IDLE = 8;

  private static final Map<String, Entry> ENTRIES = new HashMap<>();
  private static final Deque<String> IDLE = new ArrayDeque<>();

  private JoinTableCache() {}

  /** A task's reference to a shared table; closing it releases the reference. */
  public static final class Handle implements AutoCloseable {
    private final String broadcastId;
    private final JoinTable table;
    private boolean closed;

    private Handle(String broadcastId, JoinTable table) {
      this.broadcastId = broadcastId;
      this.table = table;
    }

    public JoinTable table() {
      return table;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        release(broadcastId);
      }
    }
  }

  private static final class Entry {
    JoinTable table;
    int references;
  }

  /**
   * A reference to the table of broadcast {@code broadcastId}, built with {@code build} if this
   * executor has none yet. Tasks asking at once wait for one build.
   *
   * @param broadcastId names the broadcast uniquely in this JVM: see {@link #key}
   */
  public static Handle acquire(String broadcastId, Supplier<JoinTable> build) {
    Entry entry;
    synchronized (JoinTableCache.class) {
      entry = ENTRIES.computeIfAbsent(broadcastId, id -> new Entry());
      entry.references++;
      IDLE.remove(broadcastId);
    }
    try {
      synchronized (entry) {
        if (entry.table == null) {
          entry.table = build.get();
        }
        return new Handle(broadcastId, entry.table);
      }
    } catch (RuntimeException | Error e) {
      release(broadcastId);
      throw e;
    }
  }

  private static synchronized void release(String broadcastId) {
    Entry entry = ENTRIES.get(broadcastId);
    if (entry == null || --entry.references > 0) {
      return;
    }
    if (entry.table == null) { // its build failed: nothing to keep
      ENTRIES.remove(broadcastId);
      return;
    }
    IDLE.addLast(broadcastId);
    while (IDLE.size() > MAX_IDLE) {
      ENTRIES.remove(IDLE.removeFirst()).table.close();
    }
  }

  /**
   * The cache key of a broadcast: its id with the application's, since broadcast ids start again
   * at 0 in each SparkContext, and a local JVM may run one after another.
   */
  public static String key(String applicationId, long broadcastId) {
    return applicationId + "/" + broadcastId;
  }

  /**
   * Closes the tables no task references (memory ran out: they are rebuilt when a task asks
   * again); returns how many were closed.
   */
  public static synchronized int evictIdle() {
    int evicted = 0;
    while (!IDLE.isEmpty()) {
      ENTRIES.remove(IDLE.removeFirst()).table.close();
      evicted++;
    }
    return evicted;
  }

  /** Closes every table; no task may hold one (the runtime is closing). */
  public static synchronized void closeAll() {
    for (Entry e : ENTRIES.values()) {
      if (e.table != null) {
        e.table.close();
      }
    }
    ENTRIES.clear();
    IDLE.clear();
  }

  /** Tables this executor holds, referenced or idle (for tests). */
  public static synchronized int size() {
    return ENTRIES.size();
  }
}
