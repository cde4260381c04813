package dev.tessera.spark.plugin;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import dev.tessera.gpu.memory.DeviceStore;
import java.util.function.ToLongFunction;

/**
 * The executor's device store in Spark's executor metrics, so that a user sees whether the cap
 * ({@code spark.tessera.cache.deviceBytes}) keeps what the queries reuse: its entries and bytes
 * now, and its hits, misses and evictions so far. Spark names them
 * {@code plugin.dev.tessera.TesseraPlugin.deviceStore.<gauge>} in its metrics sinks.
 */
final class DeviceStoreGauges {
  static final String PREFIX = "deviceStore.";

  private DeviceStoreGauges() {}

  /** Registers the gauges of {@code store} on the executor plugin's {@code registry}. */
  static void register(MetricRegistry registry, DeviceStore store) {
    gauge(registry, "entries", store, DeviceStore.Stats::entries);
    gauge(registry, "bytes", store, DeviceStore.Stats::bytes);
    gauge(registry, "hits", store, DeviceStore.Stats::hits);
    gauge(registry, "misses", store, DeviceStore.Stats::misses);
    gauge(registry, "evictions", store, DeviceStore.Stats::evictions);
  }

  private static void gauge(MetricRegistry registry, String name, DeviceStore store,
      ToLongFunction<DeviceStore.Stats> value) {
    registry.register(PREFIX + name, (Gauge<Long>) () -> value.applyAsLong(store.stats()));
  }
}
