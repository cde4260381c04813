package dev.tessera.spark;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.codegen.KernelDiskCache;
import dev.tessera.gpu.cuda.CudaAvailability;
import dev.tessera.gpu.memory.DeviceStore;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The device runtime of this JVM: the one {@link Backend} its queries share, and the
 * {@link DeviceStore} that owns the long-lived data in its device memory (broadcast join tables,
 * the device copies of cached tables: DESIGN.md §2). Opened once per JVM
 * (by the executor plugin on the executor's GPU, or lazily by the session extension in a local
 * driver) and closed when the executor shuts down.
 *
 * <p>Opening never throws and never substitutes one backend for another: with
 * {@code spark.tessera.backend=cuda} and no usable CUDA device it logs one warning and reports the
 * runtime not usable, so every query runs on Spark's CPU operators, correctly. The host reference
 * backend is used only when it is asked for by name, and the log says so.
 */
public final class TesseraRuntime {
  private static final Logger LOG = LoggerFactory.getLogger(TesseraRuntime.class);
  private static final Object LOCK = new Object();

  /** What opening produced: a backend, or the reason there is none. Null while not open. */
  private static volatile Opened opened;

  /**
   * {@code conf} is the configuration it opened under: its read-once settings are in force.
   * {@code store} and {@code semaphore} are null exactly when {@code backend} is.
   */
  private record Opened(Backend backend, DeviceStore store, GpuSemaphore semaphore,
      String unusableReason, TesseraConf conf) {}

  private TesseraRuntime() {}

  /**
   * Opens the runtime under {@code conf} (backend, memory caps) on CUDA device
   * {@code deviceOrdinal}, unless it is already open, in which case this does nothing.
   *
   * @return true when this call opened it (usable or not), false when it was already open
   */
  public static boolean open(TesseraConf conf, int deviceOrdinal) {
    synchronized (LOCK) {
      if (opened != null) {
        return false;
      }
      opened = openBackend(conf.backend(), conf, deviceOrdinal);
      return true;
    }
  }

  private static Opened openBackend(BackendKind kind, TesseraConf conf, int deviceOrdinal) {
    if (kind == BackendKind.CUDA) {
      CudaAvailability cuda = CudaAvailability.get();
      if (!cuda.isAvailable()) {
        LOG.warn("Tessera: no usable CUDA device ({}); all queries run on Spark's CPU operators."
            + " Set {}=host-reference only for testing.", cuda.unavailableReason(),
            TesseraConf.BACKEND.key());
        return new Opened(null, null, null,
            "no usable CUDA device (" + cuda.unavailableReason() + ")", conf);
      }
    }
    String kernelCache = conf.get(TesseraConf.CODEGEN_CACHE_DIR);
    KernelDiskCache.use(kernelCache.isEmpty() ? null : Path.of(kernelCache));
    Backend backend;
    try {
      backend = Backends.open(kind, conf.runtimeOptions(deviceOrdinal));
    } catch (RuntimeException e) {
      // A device that is busy, too small for the configured caps, or gone: the queries still
      // have Spark's CPU operators, so this is a warning, not a failure of the executor.
      String reason = "the " + kind.configValue() + " backend could not be opened on device "
          + deviceOrdinal + ": " + e.getMessage();
      LOG.warn("Tessera: {}; all queries run on Spark's CPU operators.", reason, e);
      return new Opened(null, null, null, reason, conf);
    }
    if (kind == BackendKind.HOST_REFERENCE) {
      LOG.info("Tessera: using the host reference backend (plain Java on the CPU, not a GPU),"
          + " as {}=host-reference asks; it is meant only for testing.",
          TesseraConf.BACKEND.key());
    } else {
      LOG.info("Tessera: opened {}", backend.description());
    }
    DeviceStore store = new DeviceStore("executor device store", storeCapBytes(conf, backend));
    LOG.info("Tessera: {}", store.stats());
    GpuSemaphore semaphore = new GpuSemaphore(concurrentTasks(conf, backend));
    LOG.info("Tessera: at most {} tasks hold GPU memory at once ({})", semaphore.limit(),
        conf.get(TesseraConf.CONCURRENT_GPU_TASKS) > 0 ? TesseraConf.CONCURRENT_GPU_TASKS.key()
            : "automatic, from the device pool and " + TesseraConf.BATCH_SIZE_BYTES.key());
    return new Opened(backend, store, semaphore, null, conf);
  }

  /** {@link TesseraConf#CONCURRENT_GPU_TASKS}, 0 (automatic) resolved from the device pool. */
  static int concurrentTasks(TesseraConf conf, Backend backend) {
    int set = conf.get(TesseraConf.CONCURRENT_GPU_TASKS);
    return set > 0 ? set : GpuSemaphore.automaticLimit(backend.deviceMemory().capBytes(),
        conf.batchSizeBytes());
  }

  /** {@link TesseraConf#CACHE_DEVICE_BYTES}, 0 (automatic) being half the device pool's cap. */
  static long storeCapBytes(TesseraConf conf, Backend backend) {
    long set = conf.get(TesseraConf.CACHE_DEVICE_BYTES);
    return set > 0 ? set : backend.deviceMemory().capBytes() / 2;
  }

  /** Whether the runtime has been opened in this JVM (whether or not it is usable). */
  public static boolean isOpen() {
    return opened != null;
  }

  /**
   * The configuration the runtime was opened under (usable or not), or null while it is not open
   * in this JVM. Its read-once settings (backend, memory caps) are the ones in force.
   */
  public static TesseraConf openedWith() {
    Opened current = opened;
    return current == null ? null : current.conf();
  }

  /** Whether queries may use the runtime: it is open and has a backend. */
  public static boolean isUsable() {
    Opened current = opened;
    return current != null && current.backend() != null;
  }

  /** Why queries may not use the runtime, or null when they may. */
  public static String unusableReason() {
    Opened current = opened;
    if (current == null) {
      return "the Tessera runtime is not open in this JVM";
    }
    return current.unusableReason();
  }

  /**
   * The backend, for operators to run on.
   *
   * @throws IllegalStateException when the runtime is not usable, saying why
   */
  public static Backend backend() {
    Opened current = opened;
    if (current == null || current.backend() == null) {
      throw new IllegalStateException("Tessera's runtime is not usable: " + unusableReason());
    }
    return current.backend();
  }

  /**
   * The executor's device store, for data that outlives a task (a broadcast's join table, a
   * cached table's device copy): entries live in {@link #backend()}'s device memory.
   *
   * @throws IllegalStateException when the runtime is not usable, saying why
   */
  public static DeviceStore deviceStore() {
    Opened current = opened;
    if (current == null || current.store() == null) {
      throw new IllegalStateException("Tessera's runtime is not usable: " + unusableReason());
    }
    return current.store();
  }

  /**
   * The executor's admission to the GPU: tasks take a permit before they first take device
   * memory.
   *
   * @throws IllegalStateException when the runtime is not usable, saying why
   */
  public static GpuSemaphore semaphore() {
    Opened current = opened;
    if (current == null || current.semaphore() == null) {
      throw new IllegalStateException("Tessera's runtime is not usable: " + unusableReason());
    }
    return current.semaphore();
  }

  /**
   * The device store whose entries live in {@code backend}'s memory, or null when the runtime
   * does not own that backend (one a test opened itself). For freeing idle entries when one of
   * its pools runs out.
   */
  public static DeviceStore deviceStoreOf(Backend backend) {
    Opened current = opened;
    return current != null && current.backend() == backend ? current.store() : null;
  }

  /**
   * Closes the backend, if any; the next {@link #open} opens afresh. Everything allocated from it
   * must have been closed; a failure to close is logged, not thrown, because this runs while the
   * executor shuts down.
   */
  public static void close() {
    // Under the lock, so that a later open cannot take the device before this one lets it go.
    synchronized (LOCK) {
      Opened closing = opened;
      opened = null;
      if (closing != null && closing.backend() != null) {
        try {
          // The store's entries live in the backend's device memory: they go first.
          closing.store().close();
          closing.backend().close();
        } catch (RuntimeException e) {
          LOG.warn("Tessera: closing {} failed", closing.backend().description(), e);
        }
      }
    }
  }
}
