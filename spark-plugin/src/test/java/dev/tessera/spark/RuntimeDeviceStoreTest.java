package dev.tessera.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.memory.DeviceStore;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The runtime owns the executor's device store: sized from the settings, closed before it. */
class RuntimeDeviceStoreTest {
  private static final long MiB = 1L << 20;

  @AfterEach
  void close() {
    TesseraRuntime.close();
  }

  private static void open(String... settings) {
    Map<String, String> conf = new java.util.HashMap<>(Map.of(
        "spark.tessera.backend", "host-reference",
        "spark.tessera.memory.deviceCapBytes", "64m",
        "spark.tessera.memory.pinnedCapBytes", "64m"));
    for (int i = 0; i < settings.length; i += 2) {
      conf.put(settings[i], settings[i + 1]);
    }
    assertTrue(TesseraRuntime.open(TesseraConf.from(conf), 0));
  }

  @Test
  void automaticCapIsHalfTheDevicePool() {
    open();
    assertEquals(32 * MiB, TesseraRuntime.deviceStore().capBytes());
    assertSame(TesseraRuntime.deviceStore(),
        TesseraRuntime.deviceStoreOf(TesseraRuntime.backend()));
  }

  @Test
  void capComesFromTheSetting() {
    open("spark.tessera.cache.deviceBytes", "5m");
    assertEquals(5 * MiB, TesseraRuntime.deviceStore().capBytes());
  }

  @Test
  void closingTheRuntimeClosesItsEntriesFirst() {
    open();
    DeviceStore store = TesseraRuntime.deviceStore();
    AtomicBoolean closed = new AtomicBoolean();
    store.acquire("k", () -> () -> closed.set(true), x -> 1).close();
    TesseraRuntime.close();
    assertTrue(closed.get());
    assertThrows(IllegalStateException.class, TesseraRuntime::deviceStore);
    assertThrows(IllegalStateException.class, () -> store.acquire("k", () -> () -> {}, x -> 1));
  }

  @Test
  void aBackendTheRuntimeDoesNotOwnHasNoStore() {
    assertNull(TesseraRuntime.deviceStoreOf(null));
    open();
    assertNull(TesseraRuntime.deviceStoreOf(null));
  }
}
