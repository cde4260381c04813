package dev.tessera.spark.exec;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics;
import scala.jdk.javaapi.CollectionConverters;

/** The SQL metrics Tessera's nodes report in the Spark UI, by name. */
final class ExecMetrics {
  static final String OUTPUT_ROWS = "numOutputRows";
  static final String OUTPUT_BATCHES = "numOutputBatches";
  static final String KERNEL_TIME = "gpuKernelTime";
  static final String CODEGEN_TIME = "codegenTime";
  static final String COPY_TIME = "copyTime";
  static final String INPUT_TIME = "inputTime";
  static final String STAGING_TIME = "stagingTime";
  static final String TRANSFER_TIME = "transferTime";
  static final String GPU_WAIT_TIME = "gpuWaitTime";
  static final String JOIN_TABLES_TIME = "joinTablesTime";
  static final String JOIN_TABLES_WAIT_TIME = "joinTablesWaitTime";
  static final String BYTES_TO_DEVICE = "bytesToDevice";
  static final String DICTIONARY_COLUMNS = "dictionaryColumnsDecoded";
  static final String BYTES_TO_HOST = "bytesToHost";
  static final String BYTES_READ = "gpuBytesRead";
  static final String TABLE_FLUSHES = "tableFlushes";
  static final String CPU_MERGED_ROWS = "cpuMergedGroupRows";
  static final String BATCH_SPLITS = "memorySplits";
  static final String MEMORY_WAITS = "memoryWaits";
  static final String CPU_FALLBACK_TASKS = "cpuFallbackTasks";
  static final String CACHE_ENCODED_BYTES = "cacheEncodedBytes";
  static final String CACHE_PLAIN_BYTES = "cachePlainBytes";
  static final String DEVICE_STORE_HITS = "deviceStoreHits";
  static final String DEVICE_STORE_MISSES = "deviceStoreMisses";
  static final String TOP_K_INPUT_ROWS = "topKInputRows";
  static final String TOP_K_INPUT_BATCHES = "topKInputBatches";

  private ExecMetrics() {}

  /** The metrics of one node; created on the driver, shipped with the tasks. */
  static Map<String, SQLMetric> create(SparkContext sc, String... names) {
    Map<String, SQLMetric> metrics = new LinkedHashMap<>();
    for (String name : names) {
      metrics.put(name, switch (name) {
        case OUTPUT_ROWS -> SQLMetrics.createMetric(sc, "number of output rows");
        case OUTPUT_BATCHES -> SQLMetrics.createMetric(sc, "number of output batches");
        case KERNEL_TIME -> SQLMetrics.createNanoTimingMetric(sc, "GPU kernel time", -1L);
        case CODEGEN_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time generating and compiling GPU kernels", -1L);
        case COPY_TIME -> SQLMetrics.createNanoTimingMetric(sc, "host-device copy time", -1L);
        case INPUT_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time waiting for the input's batches (Spark reading or computing them)", -1L);
        case STAGING_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time copying Spark's columns into staging buffers", -1L);
        case TRANSFER_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "host-to-device transfer time, waited for", -1L);
        case GPU_WAIT_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time waiting for the GPU (other tasks held it: spark.tessera.concurrentGpuTasks)",
            -1L);
        case JOIN_TABLES_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time getting the join tables (building them, or waiting for another task's build),"
                + " on a thread of their own while the task reads its first batch", -1L);
        case JOIN_TABLES_WAIT_TIME -> SQLMetrics.createNanoTimingMetric(sc,
            "time tasks waited for their join tables", -1L);
        case BYTES_TO_DEVICE -> SQLMetrics.createSizeMetric(sc, "bytes copied host to device", -1L);
        case DICTIONARY_COLUMNS -> SQLMetrics.createMetric(sc,
            "columns of a batch sent as dictionary ids and decoded on the device");
        case BYTES_TO_HOST -> SQLMetrics.createSizeMetric(sc, "bytes copied device to host", -1L);
        case BYTES_READ -> SQLMetrics.createSizeMetric(sc, "bytes the GPU kernel read", -1L);
        case TABLE_FLUSHES -> SQLMetrics.createMetric(sc,
            "table flushes (device memory ran out)");
        case CPU_MERGED_ROWS -> SQLMetrics.createMetric(sc,
            "group rows merged on the CPU (device memory ran out)");
        case BATCH_SPLITS -> SQLMetrics.createMetric(sc,
            "batches split or emitted in parts (memory ran out)");
        case MEMORY_WAITS -> SQLMetrics.createMetric(sc,
            "waits for other tasks to free memory (memory ran out)");
        case CPU_FALLBACK_TASKS -> SQLMetrics.createMetric(sc,
            "tasks that ran Spark's plan (no usable GPU, or device memory ran out)");
        case CACHE_ENCODED_BYTES -> SQLMetrics.createSizeMetric(sc,
            "cached columns read, as stored (GPU-FOR, GPU-DFOR, dictionary or plain)", -1L);
        case CACHE_PLAIN_BYTES -> SQLMetrics.createSizeMetric(sc,
            "cached columns read, uncompressed size", -1L);
        case DEVICE_STORE_HITS -> SQLMetrics.createMetric(sc,
            "cached columns found on the device");
        case DEVICE_STORE_MISSES -> SQLMetrics.createMetric(sc,
            "cached columns uploaded to the device");
        case TOP_K_INPUT_ROWS -> SQLMetrics.createMetric(sc,
            "rows into the top-k (the pipeline's output)");
        case TOP_K_INPUT_BATCHES -> SQLMetrics.createMetric(sc, "batches into the top-k");
        default -> throw new IllegalArgumentException("no metric " + name);
      });
    }
    return metrics;
  }

  /**
   * The key of a cache scan's per-column metric: the bytes read of its output column
   * {@code column}, as stored or uncompressed.
   */
  static String cachedColumnKey(int column, boolean stored) {
    return "cachedColumn" + column + (stored ? "Stored" : "Plain");
  }

  /** A cache scan's per-column metric (see {@link #cachedColumnKey}), named by the column. */
  static SQLMetric cachedColumn(SparkContext sc, String name, boolean stored) {
    return SQLMetrics.createSizeMetric(sc, name + (stored
        ? ": bytes read, as stored" : ": bytes read, uncompressed"), -1L);
  }

  static scala.collection.immutable.Map<String, SQLMetric> toScala(Map<String, SQLMetric> m) {
    return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(m));
  }
}
