package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA backend's warm-up as it opens ({@link CompilerWarmUp}): for a device the in-jar
 * compiler knows, a generated kernel compiled clean on a compile thread, kept in the disk cache
 * like any other; for one only the driver's compiler knows, nothing compiled.
 */
@RequiresPtxCompiler
class CompilerWarmUpTest {
  @TempDir
  Path dir;

  @AfterEach
  void keepNone() {
    KernelDiskCache.use(null);
  }

  @Test
  void aHopperDeviceGetsAKernelCompiledAheadIntoTheCache() throws Exception {
    KernelDiskCache.use(dir);
    CompiledKernel warm = CompilerWarmUp.start(9, 0).get();
    assertNotNull(warm);
    assertEquals("sm_90", warm.arch());
    assertNull(GeneratedModule.rejection(warm.reports().get(0)), warm.toString());
    try (Stream<Path> entries = Files.list(dir)) {
      assertTrue(entries.anyMatch(p -> p.getFileName().toString().endsWith(".kernel")));
    }
  }

  @Test
  void aDeviceOnlyTheDriverKnowsGetsNothingCompiled() throws Exception {
    KernelDiskCache.use(dir);
    assertNull(CompilerWarmUp.start(12, 0).get());
    try (Stream<Path> entries = Files.list(dir)) {
      assertEquals(0, entries.count());
    }
  }
}
