package dev.tessera.spark.plugin;

import dev.tessera.TesseraExtensions;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.cache.TesseraCachedBatchSerializer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.sql.execution.columnar.InMemoryRelation$;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of {@link dev.tessera.TesseraPlugin}: fails the application at startup on a bad
 * {@code spark.tessera.*} setting, and adds {@link TesseraExtensions} to
 * {@code spark.sql.extensions} so that the plugin alone activates the plan rewrite, and Tessera's
 * cache format as {@code spark.sql.cache.serializer} (see {@link #installCacheSerializer}).
 *
 * <p>That works because Spark creates the SparkContext, and with it the plugins, before the
 * SparkSession, and the session reads {@code spark.sql.extensions} from the context's own
 * SparkConf, which is the object {@link PluginContext#conf()} returns.
 *
 * <p>It also keeps the driver's view of the executors' devices ({@link ExecutorDevices}): each
 * executor plugin reports its {@link ExecutorDeviceState} through the plugin's messaging, and an
 * executor Spark removes is forgotten. Planning on a cluster reads it (see RuntimeReadiness).
 */
public final class TesseraDriverPlugin implements DriverPlugin {
  /** Spark's setting listing the session extensions every new SparkSession applies. */
  static final String SQL_EXTENSIONS = "spark.sql.extensions";
  /** Spark's static setting naming the CachedBatchSerializer of df.cache() and CACHE TABLE. */
  static final String CACHE_SERIALIZER = "spark.sql.cache.serializer";

  private static final Logger LOG = LoggerFactory.getLogger(TesseraDriverPlugin.class);

  /** The executors' devices of the driver plugin running in this JVM (between init and shutdown). */
  private static final AtomicReference<ExecutorDevices> ACTIVE = new AtomicReference<>();

  private ExecutorDevices devices;

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext pluginContext) {
    SparkConf conf = pluginContext.conf();
    TesseraConf.from(conf); // throws IllegalArgumentException naming a bad key or value
    String before = conf.get(SQL_EXTENSIONS, "");
    String after = withExtension(before, TesseraExtensions.class.getName());
    if (!after.equals(before)) {
      conf.set(SQL_EXTENSIONS, after);
    }
    installCacheSerializer(conf, TesseraConf.from(conf).get(TesseraConf.CACHE_ENABLED));
    devices = new ExecutorDevices(!sc.isLocal());
    sc.addSparkListener(new ForgetRemovedExecutors(devices));
    ACTIVE.set(devices);
    LOG.info("Tessera: driver plugin active; {}={}", SQL_EXTENSIONS, after);
    return Collections.emptyMap();
  }

  /**
   * Makes Tessera's cache format Spark's (static) {@code spark.sql.cache.serializer}, unless the
   * user chose another class or turned the cache off. Spark keeps the serializer it first made in
   * a JVM-wide field; it is cleared so that this application's setting holds even where an
   * earlier SparkContext of the same JVM (a test, a notebook kernel) cached with another.
   */
  static void installCacheSerializer(SparkConf conf, boolean enabled) {
    String ours = TesseraCachedBatchSerializer.class.getName();
    String set = conf.get(CACHE_SERIALIZER, null);
    if (!enabled) {
      LOG.info("Tessera: {} is false: cached tables use {}", TesseraConf.CACHE_ENABLED.key(),
          set == null ? "Spark's default serializer" : set);
    } else if (set != null && !set.equals(ours)) {
      LOG.warn("Tessera: {} is set to {}, so cached tables keep that format and GPU plans read"
          + " them through the host", CACHE_SERIALIZER, set);
    } else {
      conf.set(CACHE_SERIALIZER, ours);
    }
    InMemoryRelation$.MODULE$.clearSerializer();
  }

  /** Records an executor's {@link ExecutorDeviceState}; other messages are a bug. */
  @Override
  public Object receive(Object message) {
    if (message instanceof ExecutorDeviceState state) {
      devices.record(state);
      return Boolean.TRUE;
    }
    throw new IllegalArgumentException("Tessera: unexpected plugin message " + message);
  }

  @Override
  public void shutdown() {
    ACTIVE.compareAndSet(devices, null);
    InMemoryRelation$.MODULE$.clearSerializer(); // the next SparkContext of this JVM chooses anew
  }

  /**
   * Whether a Tessera driver plugin runs in this JVM: then, on a cluster, the executors open
   * their own GPUs through the executor plugin.
   */
  public static boolean isActiveInThisJvm() {
    return ACTIVE.get() != null;
  }

  /**
   * What the executors of the driver plugin running in this JVM reported about their devices,
   * or null when no Tessera driver plugin runs here.
   */
  public static ExecutorDevices executorDevices() {
    return ACTIVE.get();
  }

  /** {@code current} (a comma-separated class list) with {@code className} appended once. */
  static String withExtension(String current, String className) {
    List<String> classes = Arrays.stream(current.split(","))
        .map(String::trim)
        .filter(s -> !s.isEmpty())
        .collect(Collectors.toList());
    if (classes.contains(className)) {
      return String.join(",", classes);
    }
    return Stream.concat(classes.stream(), Stream.of(className)).collect(Collectors.joining(","));
  }

  /** Drops an executor's device state when Spark removes the executor. */
  private static final class ForgetRemovedExecutors extends SparkListener {
    private final ExecutorDevices devices;

    ForgetRemovedExecutors(ExecutorDevices devices) {
      this.devices = devices;
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
      devices.remove(removed.executorId());
    }
  }
}
