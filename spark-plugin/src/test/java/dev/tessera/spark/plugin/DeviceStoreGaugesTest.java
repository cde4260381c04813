package dev.tessera.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import dev.tessera.gpu.memory.DeviceStore;
import org.junit.jupiter.api.Test;

/** The device store's gauges read its state when Spark's sinks poll them, not when registered. */
class DeviceStoreGaugesTest {
  private static long gauge(MetricRegistry registry, String name) {
    return (Long) ((Gauge<?>) registry.getGauges().get(DeviceStoreGauges.PREFIX + name))
        .getValue();
  }

  @Test
  void gaugesFollowTheStore() {
    MetricRegistry registry = new MetricRegistry();
    try (DeviceStore store = new DeviceStore("test store", 100)) {
      DeviceStoreGauges.register(registry, store);
      assertEquals(5, registry.getGauges().size());
      assertEquals(0, gauge(registry, "entries"));
      store.acquire("a", () -> () -> {}, x -> 60).close();
      store.acquire("a", () -> () -> {}, x -> 60).close();
      store.acquire("b", () -> () -> {}, x -> 60).close(); // over the cap: a goes
      assertEquals(1, gauge(registry, "entries"));
      assertEquals(60, gauge(registry, "bytes"));
      assertEquals(1, gauge(registry, "hits"));
      assertEquals(2, gauge(registry, "misses"));
      assertEquals(1, gauge(registry, "evictions"));
    }
  }
}
