package dev.tessera.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.codegen.KernelDiskCache;
import dev.tessera.gpu.cuda.CudaAvailability;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TesseraRuntimeTest {
  @AfterEach
  void close() {
    TesseraRuntime.close();
  }

  @Test
  void hostReferenceOpensOnceAndCloses() {
    TesseraConf conf = TesseraConf.from(Map.of("spark.tessera.backend", "host-reference",
        "spark.tessera.memory.deviceCapBytes", "64m", "spark.tessera.memory.pinnedCapBytes", "64m"));
    assertFalse(TesseraRuntime.isOpen());
    assertTrue(TesseraRuntime.open(conf, 0));
    assertFalse(TesseraRuntime.open(conf, 0), "a second open is a no-op");
    assertTrue(TesseraRuntime.isUsable());
    assertNull(TesseraRuntime.unusableReason());
    assertEquals(BackendKind.HOST_REFERENCE, TesseraRuntime.backend().kind());
    TesseraRuntime.close();
    assertFalse(TesseraRuntime.isOpen());
    assertThrows(IllegalStateException.class, TesseraRuntime::backend);
  }

  @Test
  void theRuntimeTakesItsKernelCacheAndTaskLimitFromTheConf(@TempDir Path dir) {
    TesseraConf conf = TesseraConf.from(Map.of("spark.tessera.backend", "host-reference",
        "spark.tessera.memory.deviceCapBytes", "64m", "spark.tessera.memory.pinnedCapBytes", "64m",
        "spark.tessera.codegen.cacheDir", dir.toString(),
        "spark.tessera.concurrentGpuTasks", "3"));
    try {
      assertTrue(TesseraRuntime.open(conf, 0));
      assertEquals(dir, KernelDiskCache.current().dir());
      assertEquals(3, TesseraRuntime.semaphore().limit());
    } finally {
      TesseraRuntime.close();
      KernelDiskCache.use(null);
    }
    // Automatic: as many tasks as 4 batches of 128 MiB fit in the 1 GiB pool, no kernel cache.
    try {
      assertTrue(TesseraRuntime.open(TesseraConf.from(Map.of(
          "spark.tessera.backend", "host-reference", "spark.tessera.memory.deviceCapBytes", "1g",
          "spark.tessera.memory.pinnedCapBytes", "64m")), 0));
      assertNull(KernelDiskCache.current().dir());
      assertEquals(2, TesseraRuntime.semaphore().limit());
    } finally {
      TesseraRuntime.close();
    }
  }

  @Test
  void cudaWithoutADeviceIsNotUsableAndSaysWhy() {
    assumeFalse(CudaAvailability.get().isAvailable(), "this machine has a CUDA device");
    assertTrue(TesseraRuntime.open(TesseraConf.from(Map.of()), 0));
    assertTrue(TesseraRuntime.isOpen());
    assertFalse(TesseraRuntime.isUsable());
    assertTrue(TesseraRuntime.unusableReason().startsWith("no usable CUDA device ("),
        TesseraRuntime.unusableReason());
    IllegalStateException e = assertThrows(IllegalStateException.class, TesseraRuntime::backend);
    assertTrue(e.getMessage().contains("no usable CUDA device"), e.getMessage());
  }
}
