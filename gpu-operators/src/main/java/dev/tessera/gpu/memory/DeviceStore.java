package dev.tessera.gpu.memory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of long-lived device data (DESIGN.md §2): objects that outlive the task that
 * built them, such as broadcast join tables and the device copies of cached tables, so that the
 * next task finds them instead of building them again, and so that one cap bounds them all.
 *
 * <p>Entries are found by key and reference counted: {@link #acquire} hands out a {@link Lease},
 * and an entry is closed only when no lease holds it. The first task to ask for a key builds its
 * entry; tasks asking meanwhile wait for that build instead of building their own. When the
 * entries' bytes exceed the cap, the least recently used entries that no lease holds are closed
 * (and built again when a task asks). Referenced entries are never closed under a task, so the
 * total may exceed the cap while tasks hold them; the excess goes when their leases do.
 *
 * <p>Thread-safe. Every object built is closed exactly once: on eviction, on removal, or when the
 * store closes. Objects are closed outside the store's lock, so that a slow free does not hold up
 * other tasks. Knows nothing of Spark: the caller chooses the keys.
 */
public final class DeviceStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DeviceStore.class);

  private final String name;
  private final long capBytes;

  // Guarded by this.
  /** Entries {@link #acquire} finds, least recently used first. */
  private final LinkedHashMap<Object, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
  /** Built entries not closed yet: those above and removed ones that leases still hold. */
  private final Set<Entry> live = Collections.newSetFromMap(new IdentityHashMap<>());
  private long bytes;
  private long hits;
  private long misses;
  private long evictions;
  private boolean closed;

  /** One key's object; all fields but key and built are guarded by the store. */
  private static final class Entry {
    final Object key;
    /** Completed with the object once built, or with the failure of its build. */
    final CompletableFuture<AutoCloseable> built = new CompletableFuture<>();
    /** Null until built. */
    AutoCloseable value;
    long bytes;
    int references;
    /** No longer in the store's map of entries: closed when its last lease goes. */
    boolean detached;
    boolean closed;

    Entry(Object key) {
      this.key = key;
    }
  }

  /**
   * @param name what the store holds, for the log ("executor device store")
   * @param capBytes the most bytes its unreferenced entries may hold together
   */
  public DeviceStore(String name, long capBytes) {
    if (capBytes < 0) {
      throw new IllegalArgumentException("a device store's cap is 0 or more, not " + capBytes);
    }
    this.name = Objects.requireNonNull(name, "name");
    this.capBytes = capBytes;
  }

  public long capBytes() {
    return capBytes;
  }

  /**
   * Whether an entry of {@code bytes} could be kept at all: one larger than the whole cap would
   * be closed as soon as its last lease goes, so a caller that knows the size beforehand may as
   * well not store it.
   */
  public boolean fits(long bytes) {
    return bytes <= capBytes;
  }

  /**
   * A lease on the entry of {@code key}, built with {@code build} if the store has none: a task
   * asking while another builds it waits for that build, and gets its failure if it fails (the
   * failed entry is gone, so a later call builds again).
   *
   * @param key equal keys (by {@code equals}) name the same object
   * @param bytesOf the device bytes an object built holds, counted against the cap
   * @throws IllegalStateException when the store is closed, or the thread is interrupted while
   *     it waits for another task's build
   */
  public <T extends AutoCloseable> Lease<T> acquire(Object key, Supplier<T> build,
      ToLongFunction<T> bytesOf) {
    return acquire(key, build, bytesOf, true);
  }

  /**
   * As {@link #acquire}, but returns null instead of waiting while another thread builds the
   * entry of {@code key}: a task that needs several entries takes or builds the others first, so
   * that the executor's tasks build different entries at once rather than one after another.
   */
  public <T extends AutoCloseable> Lease<T> acquireUnlessBuilding(Object key, Supplier<T> build,
      ToLongFunction<T> bytesOf) {
    return acquire(key, build, bytesOf, false);
  }

  private <T extends AutoCloseable> Lease<T> acquire(Object key, Supplier<T> build,
      ToLongFunction<T> bytesOf, boolean waitForBuild) {
    Objects.requireNonNull(key, "key");
    Entry entry;
    boolean builder;
    synchronized (this) {
      checkOpen();
      entry = entries.get(key); // also makes it the most recently used
      if (!waitForBuild && entry != null && !entry.built.isDone()) {
        return null;
      }
      builder = entry == null;
      if (builder) {
        entry = new Entry(key);
        entries.put(key, entry);
        misses++;
      } else {
        hits++;
      }
      entry.references++;
    }
    @SuppressWarnings("unchecked")
    T value = builder ? buildInto(entry, build, bytesOf) : (T) awaitBuild(entry);
    return new Lease<>(entry, value);
  }

  private <T extends AutoCloseable> T buildInto(Entry entry, Supplier<T> build,
      ToLongFunction<T> bytesOf) {
    T value = null;
    try {
      value = Objects.requireNonNull(build.get(), "a device store entry was built as null");
      long size = bytesOf.applyAsLong(value);
      if (size < 0) {
        throw new IllegalArgumentException("an entry of " + size + " bytes");
      }
      publish(entry, value, size);
      return value;
    } catch (Throwable t) {
      buildFailed(entry, value, t);
      throw t;
    }
  }

  /** Makes a built object the entry's, then evicts down to the cap (never this entry: held). */
  private void publish(Entry entry, AutoCloseable value, long size) {
    List<AutoCloseable> evicted = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException(name + " closed while " + entry.key + " was built");
      }
      entry.value = value;
      entry.bytes = size;
      live.add(entry);
      bytes += size;
      if (!entry.detached) {
        entries.get(entry.key); // most recently used from now, not from when its build began
        evictOverCap(evicted);
      }
    }
    entry.built.complete(value);
    closeEvicted(evicted, "it is over its cap");
  }

  private void buildFailed(Entry entry, AutoCloseable value, Throwable failure) {
    synchronized (this) {
      if (!entry.detached) {
        entries.remove(entry.key, entry);
        entry.detached = true;
      }
      entry.closed = true;
    }
    if (value != null) {
      closeQuietly(value);
    }
    entry.built.completeExceptionally(failure);
  }

  private Object awaitBuild(Entry entry) {
    try {
      return entry.built.get();
    } catch (ExecutionException e) {
      // The builder's own exception, so that callers see its type (an exhausted pool, say).
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException("building " + entry.key + " failed", cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      release(entry);
      throw new IllegalStateException("interrupted while waiting for " + name + " to build "
          + entry.key, e);
    }
  }

  private void release(Entry entry) {
    List<AutoCloseable> toClose = new ArrayList<>();
    int evicted = 0;
    synchronized (this) {
      if (--entry.references > 0 || entry.closed || entry.value == null) {
        return;
      }
      if (entry.detached) {
        closeEntry(entry, toClose);
      } else {
        evicted = evictOverCap(toClose);
      }
    }
    if (evicted > 0) {
      closeEvicted(toClose, "it is over its cap");
    } else {
      toClose.forEach(DeviceStore::closeQuietly);
    }
  }

  /**
   * Drops the entries whose keys {@code keys} matches (the data they hold is gone, as on
   * unpersist): unreferenced ones are closed now, referenced ones when their last lease goes;
   * {@link #acquire} finds none of them any more. Returns how many matched.
   */
  public int removeIf(Predicate<Object> keys) {
    List<AutoCloseable> toClose = new ArrayList<>();
    int matched = 0;
    synchronized (this) {
      for (Iterator<Entry> it = entries.values().iterator(); it.hasNext(); ) {
        Entry e = it.next();
        if (keys.test(e.key)) {
          it.remove();
          e.detached = true;
          matched++;
          if (e.references == 0 && e.value != null) {
            closeEntry(e, toClose);
          }
        }
      }
    }
    toClose.forEach(DeviceStore::closeQuietly);
    return matched;
  }

  /**
   * Closes every entry no lease holds, whatever the cap (device memory ran out: they are built
   * again when a task asks). Counted as evictions; returns how many were closed.
   */
  public int evictIdle() {
    List<AutoCloseable> toClose = new ArrayList<>();
    synchronized (this) {
      for (Iterator<Entry> it = entries.values().iterator(); it.hasNext(); ) {
        Entry e = it.next();
        if (e.references == 0 && e.value != null) {
          it.remove();
          evict(e, toClose);
        }
      }
    }
    closeEvicted(toClose, "device memory ran out");
    return toClose.size();
  }

  /** Evicts least recently used unreferenced entries while the total exceeds the cap. */
  private int evictOverCap(List<AutoCloseable> toClose) {
    int evicted = 0;
    for (Iterator<Entry> it = entries.values().iterator(); bytes > capBytes && it.hasNext(); ) {
      Entry e = it.next();
      if (e.references == 0 && e.value != null) {
        it.remove();
        evict(e, toClose);
        evicted++;
      }
    }
    return evicted;
  }

  private void evict(Entry e, List<AutoCloseable> toClose) {
    e.detached = true;
    evictions++;
    closeEntry(e, toClose);
  }

  /** Marks a built entry closed and takes it off the books; the caller closes its object. */
  private void closeEntry(Entry e, List<AutoCloseable> toClose) {
    e.closed = true;
    live.remove(e);
    bytes -= e.bytes;
    toClose.add(e.value);
  }

  /** Closes evicted objects, then logs one line with the store's state (if any went). */
  private void closeEvicted(List<AutoCloseable> evicted, String why) {
    if (evicted.isEmpty()) {
      return;
    }
    evicted.forEach(DeviceStore::closeQuietly);
    LOG.info("Tessera: evicted {} entries, as {}; {}", evicted.size(), why, stats());
  }

  /** The store's state now. */
  public synchronized Stats stats() {
    return new Stats(name, capBytes, live.size(), bytes, hits, misses, evictions);
  }

  /**
   * Closes every entry, held or not (the runtime is closing, and its device memory with it):
   * leases still open no longer close anything. Later calls to {@link #acquire} fail.
   */
  @Override
  public void close() {
    List<AutoCloseable> toClose = new ArrayList<>();
    Stats last;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      last = stats();
      for (Entry e : entries.values()) {
        e.detached = true; // one still building is closed by its builder (publish sees closed)
      }
      entries.clear();
      for (Entry e : new ArrayList<>(live)) {
        closeEntry(e, toClose);
      }
    }
    toClose.forEach(DeviceStore::closeQuietly);
    LOG.info("Tessera: closing; {}", last);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(name + " is closed");
    }
  }

  /** A failure to free one entry is logged: the others must still be freed. */
  private static void closeQuietly(AutoCloseable value) {
    try {
      value.close();
    } catch (Exception e) {
      LOG.warn("Tessera: closing a device store entry failed", e);
    }
  }

  /** A task's reference to an entry; closing it (once or more) releases the reference. */
  public final class Lease<T extends AutoCloseable> implements AutoCloseable {
    private final Entry entry;
    private final T value;
    private final AtomicBoolean released = new AtomicBoolean();

    private Lease(Entry entry, T value) {
      this.entry = entry;
      this.value = value;
    }

    /** The entry's object: the store owns it, so do not close it. */
    public T value() {
      if (released.get()) {
        throw new IllegalStateException("a device store lease used after close");
      }
      return value;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        release(entry);
      }
    }
  }

  /**
   * A store's state, for metrics and the log.
   *
   * @param name the store's, as it was created
   * @param capBytes its cap
   * @param entries objects built and not closed yet (including removed ones still leased)
   * @param bytes their bytes together
   * @param hits acquires that found their key (built, or being built by another task)
   * @param misses acquires that built
   * @param evictions entries closed to honour the cap or under memory pressure
   */
  public record Stats(String name, long capBytes, int entries, long bytes, long hits,
      long misses, long evictions) {
    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%s: %d entries, %s of %s, %d hits, %d misses,"
          + " %d evictions", name, entries, size(bytes), size(capBytes), hits, misses, evictions);
    }

    private static String size(long b) {
      if (b < 1024) {
        return b + " B";
      }
      int unit = (63 - Long.numberOfLeadingZeros(b)) / 10; // 1 = KiB, 2 = MiB, ...
      return String.format(Locale.ROOT, "%.1f %siB", b / (double) (1L << (10 * unit)),
          "KMGTPE".charAt(unit - 1));
    }
  }
}
