package dev.tessera.spark;

import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.spark.expr.ExpressionRules;
import dev.tessera.spark.rewrite.ExecRule;
import dev.tessera.spark.rewrite.GpuRules;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.internal.SQLConf;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Tessera's settings: the definitions (every {@code spark.tessera.*} key, registered in one list
 * that docs/configs.md is generated from) and an immutable, validated snapshot of one
 * configuration, read with typed getters.
 *
 * <p>A snapshot is taken from the SparkConf when the plugin starts and from the session's SQLConf
 * each time a query is planned. A session refuses a bad value when it is set (see
 * {@link SqlConfRegistration} and {@link SetCommandCheck}); what still gets stored (an unknown key
 * set with {@code spark.conf.set}) fails the next query. Any {@code spark.tessera.*} key that is
 * not registered is an error: a typo must not silently leave a setting at its default.
 */
public final class TesseraConf {
  /** Every Tessera key starts with this. */
  public static final String PREFIX = "spark.tessera.";

  // The registry comes first: the entries below register themselves in it as the class loads.
  private static final ConfRegistry REGISTRY = new ConfRegistry();

  public static final ConfEntry<Boolean> ENABLED = REGISTRY.register(
      ConfEntry.key("spark.tessera.enabled")
          .doc("Whether Tessera rewrites query plans to run on the GPU. When false, every query"
              + " runs on Spark's CPU operators. Can be changed per session at run time with"
              + " spark.conf.set.")
          .booleanConf()
          .createWithDefault(true));

  public static final ConfEntry<ExplainLevel> EXPLAIN = REGISTRY.register(
      ConfEntry.key("spark.tessera.explain")
          .doc("Logs, at WARN, which plan nodes run on the GPU and why the others stay on the CPU,"
              + " one report per query (under adaptive execution, per query stage, its header"
              + " naming the stage): NONE logs nothing; NOT_ON_GPU the nodes that cannot run on"
              + " the GPU, each with every reason, and under each the expressions that keep it"
              + " there; ALL also the nodes on the GPU (with the steps that could not be fused"
              + " into the GPU node below them, and why) and those on the CPU by design (a"
              + " shuffle, a scan, the projection that finishes a GPU aggregate). Can be changed"
              + " per session.")
          .type(ConfValueType.caseInsensitiveEnum(ExplainLevel.class, "an explain level"))
          .createWithDefault(ExplainLevel.NONE));

  public static final ConfEntry<BackendKind> BACKEND = REGISTRY.register(
      ConfEntry.key("spark.tessera.backend")
          .doc("The device runtime: cuda runs on the executor's NVIDIA GPU; host-reference runs"
              + " the same operators as plain Java on the CPU and is meant only for testing."
              + " Without a usable CUDA device, cuda logs a warning and every query runs on"
              + " Spark's CPU operators; Tessera never switches to host-reference by itself.")
          .type(ConfValueType.BACKEND)
          .readOncePerJvm()
          .createWithDefault(BackendKind.CUDA));

  public static final ConfEntry<Long> BATCH_SIZE_BYTES = REGISTRY.register(
      ConfEntry.key("spark.tessera.batchSizeBytes")
          .doc("Target size of a batch of rows copied to the device. Larger batches keep"
              + " transfers efficient; smaller ones use less device memory.")
          .bytesConf()
          .check(v -> v > 0, "greater than 0")
          .createWithDefault(128L << 20));

  public static final ConfEntry<Boolean> UPLOAD_DICTIONARY_IDS = REGISTRY.register(
      ConfEntry.key("spark.tessera.upload.dictionaryIds.enabled")
          .doc("Whether a column (other than a boolean) that Spark's Parquet reader hands over"
              + " dictionary-encoded is uploaded as its dictionary ids and entries and decoded on"
              + " the device, instead of each value decoded on the CPU as it is staged."
              + " Off, every value is decoded on the CPU.")
          .booleanConf()
          .createWithDefault(true));

  public static final ConfEntry<Long> DEVICE_CAP_BYTES = REGISTRY.register(
      ConfEntry.key("spark.tessera.memory.deviceCapBytes")
          .doc("The most device memory Tessera's pool may take on each GPU. 0 means automatic:"
              + " 80% of the device's free memory when the runtime opens.")
          .bytesConf()
          .check(v -> v >= 0, "0 (automatic) or more")
          .readOncePerJvm()
          .createWithDefault(0L));

  public static final ConfEntry<Long> PINNED_CAP_BYTES = REGISTRY.register(
      ConfEntry.key("spark.tessera.memory.pinnedCapBytes")
          .doc("The most pinned (page-locked) host memory Tessera's staging pool may take per"
              + " executor, for copies to and from the device. 0 means automatic: room for two"
              + " batches (spark.tessera.batchSizeBytes) per core of the executor's host, at"
              + " least 1 GiB, since every running task stages its own batch. Staging beyond"
              + " it comes from pageable memory, which works but copies more slowly.")
          .bytesConf()
          .check(v -> v >= 0, "0 (automatic) or more")
          .readOncePerJvm()
          .createWithDefault(0L));

  public static final ConfEntry<Integer> CONCURRENT_GPU_TASKS = REGISTRY.register(
      ConfEntry.key("spark.tessera.concurrentGpuTasks")
          .doc("The most tasks of an executor that hold GPU memory at once. A task is admitted"
              + " before it first takes device memory (its first upload, a cached table's"
              + " columns, or a join's table) and keeps its place until it ends; the others"
              + " read and stage their input meanwhile, then wait. 0 means automatic: as many as"
              + " the device pool (spark.tessera.memory.deviceCapBytes) holds 4 batches of"
              + " spark.tessera.batchSizeBytes for, at least 1.")
          .intConf()
          .check(v -> v >= 0, "0 (automatic) or more")
          .readOncePerJvm()
          .createWithDefault(0));

  public static final ConfEntry<Boolean> INCOMPATIBLE_OPS = REGISTRY.register(
      ConfEntry.key("spark.tessera.incompatibleOps.enabled")
          .doc("Whether operations whose GPU result can differ from Spark's in a known, documented"
              + " way run on the GPU anyway. Off, they stay on the CPU and explain names the"
              + " difference. Today: min and max of FLOAT and DOUBLE, where a group holding both"
              + " -0.0 and 0.0 gives whichever Spark met first, and the GPU may give the other."
              + " Can be changed per session.")
          .booleanConf()
          .createWithDefault(false));

  public static final ConfEntry<Boolean> CODEGEN_ENABLED = REGISTRY.register(
      ConfEntry.key("spark.tessera.codegen.enabled")
          .doc("Whether pipelines (filter-and-project, join probes, and the update of a hash"
              + " aggregate) run on CUDA as kernels generated for each pipeline (PTX written by"
              + " Tessera and compiled in-process: values in registers, rows the filter drops"
              + " skip the rest) instead of the program interpreter."
              + " Pipelines the generator does not cover, and kernels the compiler rejects,"
              + " use the interpreter, with the reason in the log. Off, every pipeline runs"
              + " on the interpreter. Read when the executor opens the GPU.")
          .booleanConf()
          .readOncePerJvm()
          .createWithDefault(true));

  public static final ConfEntry<String> CODEGEN_CACHE_DIR = REGISTRY.register(
      ConfEntry.key("spark.tessera.codegen.cacheDir")
          .doc("A folder where executors keep the generated kernels they compile (one file per"
              + " kernel, named by a hash of its PTX, the compiler and its options), so that an"
              + " executor started later on the same host loads them instead of compiling them"
              + " again (50-200 ms each for the SSB queries' kernels). Empty: none kept. Entries"
              + " are not evicted; delete the folder to reclaim it.")
          .type(ConfValueType.FOLDER)
          .readOncePerJvm()
          .createWithDefault(""));

  public static final ConfEntry<Boolean> CACHE_ENABLED = REGISTRY.register(
      ConfEntry.key("spark.tessera.cache.enabled")
          .doc("Whether df.cache() and CACHE TABLE store tables in Tessera's GPU-FOR format"
              + " (Tessera's CachedBatchSerializer, which the plugin installs as Spark's static"
              + " spark.sql.cache.serializer unless that is set to another class) and GPU plans"
              + " scan the executor's device-resident copy of them. Read when the application"
              + " starts.")
          .booleanConf()
          .readOncePerJvm()
          .createWithDefault(true));

  public static final ConfEntry<Long> CACHE_DEVICE_BYTES = REGISTRY.register(
      ConfEntry.key("spark.tessera.cache.deviceBytes")
          .doc("The most device memory the executor's device store may hold for long-lived"
              + " data: the device copies of cached tables and the broadcast join tables. Past"
              + " it, the least recently used entries no task is reading are evicted (and"
              + " uploaded or rebuilt again when a query needs them). 0 means automatic: half of"
              + " the device pool's cap (spark.tessera.memory.deviceCapBytes).")
          .bytesConf()
          .check(v -> v >= 0, "0 (automatic) or more")
          .readOncePerJvm()
          .createWithDefault(0L));

  public static final ConfEntry<Integer> CACHE_BATCH_ROWS = REGISTRY.register(
      ConfEntry.key("spark.tessera.cache.batchRows")
          .doc("Rows per cached batch in Tessera's cache format (Spark's own serializer uses"
              + " spark.sql.inMemoryColumnarStorage.batchSize, 10,000 rows; a GPU scan wants far"
              + " larger batches, one kernel launch each, and a partition's rows in as few of"
              + " them as its heap allows). Rounded up to a multiple of 512, the kernels' tile."
              + " A batch closes earlier, at a multiple of 512 rows, once its values take half"
              + " the executor's heap per core, since every running task builds one at once."
              + " Read when a table is cached.")
          .intConf()
          .check(v -> v > 0, "greater than 0")
          .createWithDefault(1 << 22));

  private static final String EXEC_PREFIX = PREFIX + "exec.";
  private static final String EXPRESSION_PREFIX = PREFIX + "expression.";
  private static final String ENABLED_SUFFIX = ".enabled";

  static {
    // The per-operator switches come from the table of rules (GpuRules builds its table without
    // reading these settings, so either class may load first).
    for (ExecRule<?> rule : GpuRules.standard().execRules()) {
      registerExec(rule.name(), rule.description());
    }
    for (ExpressionRules.Rule<?> rule : GpuRules.standard().expressionRules()) {
      registerExpression(rule.name(), rule.description());
    }
  }

  /** The key of the switch for exec {@code simpleName}, e.g. spark.tessera.exec.FilterExec.enabled. */
  public static String execEnabledKey(String simpleName) {
    return EXEC_PREFIX + simpleName + ENABLED_SUFFIX;
  }

  /** The key of the switch for expression {@code simpleName}, e.g. ...expression.Add.enabled. */
  public static String expressionEnabledKey(String simpleName) {
    return EXPRESSION_PREFIX + simpleName + ENABLED_SUFFIX;
  }

  /**
   * Registers (once; later calls return the first entry) the switch that lets the Spark exec
   * {@code simpleName} run on the GPU.
   *
   * @param description what the exec does in a query, e.g. "WHERE and HAVING conditions"
   */
  public static ConfEntry<Boolean> registerExec(String simpleName, String description) {
    String key = execEnabledKey(simpleName);
    return REGISTRY.registerIfAbsent(key, () -> ConfEntry.key(key)
        .doc("Whether " + simpleName + " (" + description + ") may run on the GPU.")
        .booleanConf()
        .createWithDefault(true));
  }

  /**
   * Registers (once) the switch that lets the Catalyst expression {@code simpleName} run on the
   * GPU; an expression that is switched off keeps the node that holds it on the CPU.
   *
   * @param description what the expression computes, e.g. "a + b"
   */
  public static ConfEntry<Boolean> registerExpression(String simpleName, String description) {
    String key = expressionEnabledKey(simpleName);
    return REGISTRY.registerIfAbsent(key, () -> ConfEntry.key(key)
        .doc("Whether the expression " + simpleName + " (`" + description
            + "`) may run on the GPU.")
        .booleanConf()
        .createWithDefault(true));
  }

  /** Every registered setting, in registration order (the order of docs/configs.md). */
  public static List<ConfEntry<?>> entries() {
    return REGISTRY.entries();
  }

  /** Whether {@code key} is a per-operator switch (exec or expression). */
  public static boolean isOperatorSwitch(String key) {
    return (key.startsWith(EXEC_PREFIX) || key.startsWith(EXPRESSION_PREFIX))
        && key.endsWith(ENABLED_SUFFIX);
  }

  // ---- snapshots ----

  private final Map<String, Object> values;

  private TesseraConf(Map<String, Object> values) {
    this.values = values;
  }

  /** A snapshot of {@code settings}; keys outside spark.tessera.* are ignored. */
  public static TesseraConf from(Map<String, String> settings) {
    Map<String, Object> parsed = new HashMap<>();
    for (Map.Entry<String, String> setting : settings.entrySet()) {
      String key = setting.getKey();
      if (!key.startsWith(PREFIX)) {
        continue;
      }
      ConfEntry<?> entry = REGISTRY.lookup(key);
      if (entry == null) {
        throw unknownKey(key, setting.getValue());
      }
      parsed.put(key, entry.parse(setting.getValue()));
    }
    return new TesseraConf(Collections.unmodifiableMap(parsed));
  }

  /**
   * Checks one setting as it is about to be stored.
   *
   * @throws IllegalArgumentException naming the key when it is not a Tessera setting (suggesting
   *     the closest one) or the value is not accepted (listing the accepted values)
   */
  public static void validate(String key, String value) {
    ConfEntry<?> entry = REGISTRY.lookup(key);
    if (entry == null) {
      throw unknownKey(key, value);
    }
    entry.parse(value);
  }

  /** A snapshot of a session's settings (those set on the SparkConf included). */
  public static TesseraConf from(SQLConf conf) {
    return from(CollectionConverters.asJava(conf.getAllConfs()));
  }

  /** A snapshot of the application's SparkConf, as the plugin sees it at startup. */
  public static TesseraConf from(SparkConf conf) {
    Map<String, String> settings = new HashMap<>();
    for (Tuple2<String, String> setting : conf.getAll()) {
      settings.put(setting._1(), setting._2());
    }
    return from(settings);
  }

  private static IllegalArgumentException unknownKey(String key, String value) {
    StringBuilder message = new StringBuilder(String.format(
        "%s (set to '%s') is not a Tessera setting", key, value));
    String closest = REGISTRY.closestKey(key);
    if (closest != null) {
      message.append("; did you mean ").append(closest).append("? ");
    } else if (key.startsWith(EXEC_PREFIX) || key.startsWith(EXPRESSION_PREFIX)) {
      boolean exec = key.startsWith(EXEC_PREFIX);
      message.append("; the ").append(exec ? "execs" : "expressions")
          .append(" with a switch are ")
          .append(namesUnder(exec ? EXEC_PREFIX : EXPRESSION_PREFIX));
    } else {
      message.append("; the settings are ").append(REGISTRY.entries().stream()
          .map(ConfEntry::key)
          .filter(k -> !k.startsWith(EXEC_PREFIX) && !k.startsWith(EXPRESSION_PREFIX))
          .collect(Collectors.joining(", ")))
          .append(", and the per-operator switches ").append(execEnabledKey("<Exec>"))
          .append(" and ").append(expressionEnabledKey("<Expression>"));
    }
    if (closest == null) {
      message.append(". ");
    }
    return new IllegalArgumentException(message
        .append("Every setting is described in docs/configs.md.").toString());
  }

  private static String namesUnder(String prefix) {
    return REGISTRY.entries().stream()
        .map(ConfEntry::key)
        .filter(k -> k.startsWith(prefix) && k.endsWith(ENABLED_SUFFIX))
        .map(k -> k.substring(prefix.length(), k.length() - ENABLED_SUFFIX.length()))
        .collect(Collectors.joining(", "));
  }

  // ---- getters ----

  /** The value of {@code entry} in this snapshot, or its default. */
  @SuppressWarnings("unchecked")
  public <T> T get(ConfEntry<T> entry) {
    Object value = values.get(entry.key());
    return value != null ? (T) value : entry.defaultValue();
  }

  public boolean enabled() {
    return get(ENABLED);
  }

  public ExplainLevel explain() {
    return get(EXPLAIN);
  }

  public BackendKind backend() {
    return get(BACKEND);
  }

  public long batchSizeBytes() {
    return get(BATCH_SIZE_BYTES);
  }

  public long deviceCapBytes() {
    return get(DEVICE_CAP_BYTES);
  }

  /** The pinned staging pool's cap, the automatic one resolved (see PINNED_CAP_BYTES). */
  public long pinnedCapBytes() {
    long set = get(PINNED_CAP_BYTES);
    if (set > 0) {
      return set;
    }
    long perTask = 2 * batchSizeBytes();
    return Math.max(1L << 30, perTask * Runtime.getRuntime().availableProcessors());
  }

  /**
   * Whether the exec {@code simpleName} may run on the GPU.
   *
   * @throws IllegalArgumentException when no switch is registered for it (register it first)
   */
  public boolean isExecEnabled(String simpleName) {
    return get(registered(execEnabledKey(simpleName), "registerExec"));
  }

  /**
   * Whether the expression {@code simpleName} may run on the GPU.
   *
   * @throws IllegalArgumentException when no switch is registered for it (register it first)
   */
  public boolean isExpressionEnabled(String simpleName) {
    return get(registered(expressionEnabledKey(simpleName), "registerExpression"));
  }

  @SuppressWarnings("unchecked")
  private static ConfEntry<Boolean> registered(String key, String how) {
    ConfEntry<?> entry = REGISTRY.lookup(key);
    if (entry == null) {
      throw new IllegalArgumentException(
          "no switch " + key + " is registered; call TesseraConf." + how + " first");
    }
    return (ConfEntry<Boolean>) entry;
  }

  /** How to open the device runtime on {@code deviceOrdinal} under this configuration. */
  public RuntimeOptions runtimeOptions(int deviceOrdinal) {
    RuntimeOptions defaults = RuntimeOptions.defaults();
    return new RuntimeOptions(deviceOrdinal, deviceCapBytes(), pinnedCapBytes(),
        defaults.deviceChunkBytes(), defaults.pinnedChunkBytes(),
        DEVICE_CAP_BYTES.key(), PINNED_CAP_BYTES.key(), get(CODEGEN_ENABLED));
  }

  /** The settings that differ from their defaults, for logs. */
  @Override
  public String toString() {
    return "TesseraConf" + new TreeMap<>(values);
  }
}
