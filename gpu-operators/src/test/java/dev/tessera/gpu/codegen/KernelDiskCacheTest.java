package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@RequiresPtxCompiler
class KernelDiskCacheTest {
  @TempDir
  Path dir;

  @AfterEach
  void keepNone() {
    KernelDiskCache.use(null);
  }

  private static List<Path> entries(Path dir) throws Exception {
    try (Stream<Path> files = Files.list(dir)) {
      return files.sorted().toList();
    }
  }

  @Test
  void aSecondCompileLoadsTheKeptCubin() throws Exception {
    KernelDiskCache.use(dir);
    KernelDiskCache cache = KernelDiskCache.current();
    assertEquals(dir, cache.dir());
    CompiledKernel compiled = cache.compile(TestPtx.ADD_INT64, "sm_90", List.of());
    assertTrue(compiled.compileNanos() > 0);
    assertEquals(1, entries(dir).size());
    assertTrue(entries(dir).get(0).getFileName().toString().endsWith(".kernel"));

    CompiledKernel kept = cache.compile(TestPtx.ADD_INT64, "sm_90", List.of());
    assertEquals(0, kept.compileNanos(), "compiled again instead of loaded");
    assertArrayEquals(compiled.cubin(), kept.cubin());
    assertEquals(compiled.infoLog(), kept.infoLog());
    assertEquals(compiled.report().summary().replaceAll(", [0-9.]+ ms", ""),
        kept.report().summary().replaceAll(", [0-9.]+ ms", ""));
    assertEquals(compiled.report().registers(), kept.report().registers());
    assertEquals(1, entries(dir).size());
  }

  @Test
  void otherOptionsArchitecturesOrPtxAreOtherEntries() throws Exception {
    KernelDiskCache.use(dir);
    KernelDiskCache cache = KernelDiskCache.current();
    cache.compile(TestPtx.ADD_INT64, "sm_90", List.of());
    cache.compile(TestPtx.ADD_INT64, "sm_90", List.of("-O1"));
    cache.compile(TestPtx.ADD_INT64, "sm_90a", List.of());
    cache.compile(TestPtx.ADD_INT64 + "\n// another module\n", "sm_90", List.of());
    assertEquals(4, entries(dir).size());
    assertNotEquals(KernelDiskCache.key(TestPtx.ADD_INT64, "sm_90", List.of()),
        KernelDiskCache.key(TestPtx.ADD_INT64, "sm_90", List.of("-O1")));
    // -O3 is the default level: asking for it is the same compile, and the same entry.
    assertEquals(KernelDiskCache.key(TestPtx.ADD_INT64, "sm_90", List.of()),
        KernelDiskCache.key(TestPtx.ADD_INT64, "sm_90", List.of("-O3")));
  }

  @Test
  void aDamagedEntryIsCompiledAgainAndReplaced() throws Exception {
    KernelDiskCache.use(dir);
    KernelDiskCache cache = KernelDiskCache.current();
    CompiledKernel compiled = cache.compile(TestPtx.ADD_INT64, "sm_90", List.of());
    Path entry = entries(dir).get(0);
    byte[] bytes = Files.readAllBytes(entry);
    bytes[bytes.length / 2] ^= 0x40;
    Files.write(entry, bytes);
    CompiledKernel again = cache.compile(TestPtx.ADD_INT64, "sm_90", List.of());
    assertTrue(again.compileNanos() > 0, "a damaged entry was used");
    assertArrayEquals(compiled.cubin(), again.cubin());
    Files.write(entry, new byte[] {1, 2, 3}); // truncated
    assertTrue(cache.compile(TestPtx.ADD_INT64, "sm_90", List.of()).compileNanos() > 0);
    assertEquals(0, cache.compile(TestPtx.ADD_INT64, "sm_90", List.of()).compileNanos(),
        "the entry was not written again");
  }

  @Test
  void aFolderThatCannotBeWrittenOnlyCostsTheCompile() throws Exception {
    Path file = Files.writeString(dir.resolve("not-a-folder"), "x");
    KernelDiskCache.use(file.resolve("kernels"));
    CompiledKernel compiled =
        KernelDiskCache.current().compile(TestPtx.ADD_INT64, "sm_90", List.of());
    assertTrue(compiled.cubin().length > 0);
    assertEquals(List.of(file), entries(dir));
  }

  @Test
  void refusedModulesAreNotKeptAndNoneKeepsNothing() throws Exception {
    KernelDiskCache.use(dir);
    assertThrows(PtxCompileException.class,
        () -> KernelDiskCache.current().compile(TestPtx.SYNTAX_ERROR, "sm_90", List.of()));
    assertEquals(List.of(), entries(dir));
    KernelDiskCache.use(null);
    assertNull(KernelDiskCache.current().dir());
    assertTrue(KernelDiskCache.current().compile(TestPtx.ADD_INT64, "sm_90", List.of())
        .compileNanos() > 0);
    assertEquals(List.of(), entries(dir));
  }
}
