package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The in-jar PTX compiler on hand-written PTX: no GPU needed. */
@RequiresPtxCompiler
class PtxCompilerTest {

  @Test
  void compilesAKernelToAnSm90CubinAndReportsItsRegisters() {
    CompiledKernel kernel = PtxCompiler.compile(TestPtx.ADD_INT64, "sm_90");

    byte[] cubin = kernel.cubin();
    assertTrue(cubin.length > 64, "cubin of " + cubin.length + " bytes");
    assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F', 2}, Arrays.copyOf(cubin, 5),
        "a 64-bit ELF header");
    assertEquals(190, (cubin[0x12] & 0xff) | (cubin[0x13] & 0xff) << 8, "e_machine EM_CUDA");

    CompileReport report = kernel.report();
    assertEquals("tessera_add_int64", report.function());
    assertTrue(report.registers() > 0, report.summary());
    assertEquals(0, report.stackFrameBytes());
    assertEquals(0, report.spillStoreBytes());
    assertEquals(0, report.spillLoadBytes());
    assertTrue(report.callees().isEmpty());
    assertTrue(report.clean());
    assertTrue(kernel.clean());
    assertTrue(report.infoLog().contains(
        "Compiling entry function 'tessera_add_int64' for 'sm_90'"), report.infoLog());
    System.out.println("[ptx] " + kernel + "\n" + report.infoLog());
  }

  @Test
  void measuresTheCompileTimeOfASmallKernel() {
    long first = PtxCompiler.compile(TestPtx.ADD_INT64, "sm_90").compileNanos();
    long[] nanos = new long[10];
    for (int i = 0; i < nanos.length; i++) {
      nanos[i] = PtxCompiler.compile(TestPtx.ADD_INT64, "sm_90").compileNanos();
    }
    Arrays.sort(nanos);
    System.out.printf("[ptx] nvPTXCompiler %s, compile of tessera_add_int64 for sm_90:"
        + " first %.1f ms, then median %.1f ms, min %.1f ms of %d%n", PtxCompiler.libraryVersion(),
        first / 1e6, nanos[nanos.length / 2] / 1e6, nanos[0] / 1e6, nanos.length);
  }

  @Test
  void aLocalArrayIndexedAtRunTimeNeedsAStackFrame() {
    CompileReport report = PtxCompiler.compile(TestPtx.LOCAL_ARRAY, "sm_90").report();

    assertEquals("tessera_local_array", report.function());
    assertTrue(report.stackFrameBytes() >= 256, report.summary());
    assertFalse(report.clean());
  }

  @Test
  void aSyntaxErrorNamesTheLineAndQuotesTheCompiler() {
    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(TestPtx.SYNTAX_ERROR, "sm_90"));

    assertEquals(PtxCompileException.Kind.INVALID_PTX, e.kind());
    assertEquals(13, e.line());
    assertTrue(e.sourceLine().contains("st.global.u32"), e.sourceLine());
    assertTrue(e.getMessage().contains("Parsing error near 'st': syntax error"), e.getMessage());
    assertTrue(e.getMessage().contains("line 13"), e.getMessage());
    assertTrue(e.errorLog().contains("ptx input, line 13"), e.errorLog());
    System.out.println("[ptx] " + e.getMessage());
  }

  @Test
  void ptxVersion9IsRefusedAsTooNewForTheInJarCompiler() {
    String ptx90 = TestPtx.ADD_INT64.replace(".version 8.0", ".version 9.0");

    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(ptx90, "sm_90"));

    assertEquals(PtxCompileException.Kind.PTX_VERSION_TOO_NEW, e.kind());
    assertTrue(e.getMessage().startsWith("PTX .version 9.0 is too new for the in-jar PTX compiler"),
        e.getMessage());
    assertTrue(e.getMessage().contains("up to .version " + PtxCompiler.maxPtxVersion()),
        e.getMessage());
    System.out.println("[ptx] " + e.getMessage());
  }

  @Test
  void theCompilerSaysWhichPtxVersionItReads() {
    PtxVersion max = PtxCompiler.maxPtxVersion();
    System.out.println("[ptx] nvPTXCompiler " + PtxCompiler.libraryVersion() + " reads PTX up to "
        + max);
    assertFalse(new PtxVersion(8, 0).isNewerThan(max), "JCuda 12.6.0's compiler reads PTX 8.0");
  }

  @Test
  void anArchitectureTheCompilerDoesNotKnowIsSaidSo() {
    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(TestPtx.ADD_INT64.replace("sm_90", "sm_50"), "sm_100"));

    assertEquals(PtxCompileException.Kind.UNKNOWN_ARCH, e.kind());
    assertTrue(e.getMessage().contains("does not know sm_100"), e.getMessage());
  }

  @Test
  void aTargetNewerThanTheArchitectureIsSaidSo() {
    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(TestPtx.ADD_INT64, "sm_80"));

    assertEquals(PtxCompileException.Kind.TARGET_NEWER_THAN_ARCH, e.kind());
  }

  @Test
  void aModuleWithoutItsHeaderIsRefusedBeforeItCanCrashTheCompiler() {
    // Each of these would crash the JVM inside nvPTXCompilerCompile (SIGSEGV).
    for (String ptx : List.of("", "garbage\n", ".version 8.0\n", ".version 8.0\ngarbage\n"
        + ".target sm_90\n", ".version 8.0\n.target foo\n", TestPtx.ADD_INT64.substring(
            TestPtx.ADD_INT64.indexOf(".visible")))) {
      PtxCompileException e = assertThrows(PtxCompileException.class,
          () -> PtxCompiler.compile(ptx, "sm_90"), ptx);
      assertEquals(PtxCompileException.Kind.INVALID_PTX, e.kind());
      assertTrue(e.getMessage().contains("does not begin with '.version X.Y' and '.target sm_XY'"),
          e.getMessage());
    }
  }

  @Test
  void aNulCharacterIsRefusedBeforeItCanCrashTheCompiler() {
    String ptx = TestPtx.ADD_INT64.replace("ret;", "ret;\0");

    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(ptx, "sm_90"));

    int retLine = TestPtx.ADD_INT64.lines().toList().indexOf("\tret;") + 1;
    assertEquals(PtxCompileException.Kind.INVALID_PTX, e.kind());
    assertEquals(retLine, e.line());
    assertTrue(e.getMessage().contains("NUL character at line " + retLine), e.getMessage());
  }

  @Test
  void aLexicalErrorNamesItsLineToo() {
    String ptx = TestPtx.ADD_INT64.replace("ret;", "ret; /* never closed");

    PtxCompileException e = assertThrows(PtxCompileException.class,
        () -> PtxCompiler.compile(ptx, "sm_90"));

    assertEquals(PtxCompileException.Kind.INVALID_PTX, e.kind());
    assertTrue(e.getMessage().contains("unexpected EOF while scanning"), e.getMessage());
  }

  @Test
  void compilesTheSameModuleFromSeveralThreadsAtOnce() throws Exception {
    byte[] expected = PtxCompiler.compile(TestPtx.ADD_INT64, "sm_90").cubin();
    int threads = 8;
    int compiles = 32;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<CompiledKernel>> results = new ArrayList<>();
      long start = System.nanoTime();
      for (int i = 0; i < compiles; i++) {
        String ptx = i % 2 == 0 ? TestPtx.ADD_INT64 : TestPtx.LOCAL_ARRAY;
        results.add(pool.submit(() -> PtxCompiler.compile(ptx, "sm_90")));
      }
      for (int i = 0; i < compiles; i++) {
        CompiledKernel kernel = results.get(i).get();
        if (i % 2 == 0) {
          assertArrayEquals(expected, kernel.cubin(), "compile " + i);
          assertTrue(kernel.report().clean());
        } else {
          assertTrue(kernel.report().stackFrameBytes() > 0);
        }
      }
      System.out.printf("[ptx] %d compiles on %d threads (%d CPUs): %.1f ms%n", compiles, threads,
          Runtime.getRuntime().availableProcessors(), (System.nanoTime() - start) / 1e6);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void reportsEveryEntryOfAModule() {
    String two = TestPtx.ADD_INT64 + TestPtx.LOCAL_ARRAY.substring(
        TestPtx.LOCAL_ARRAY.indexOf(".visible"));

    CompiledKernel kernel = PtxCompiler.compile(two, "sm_90");

    assertEquals(2, kernel.reports().size());
    assertTrue(kernel.report("tessera_add_int64").clean());
    assertFalse(kernel.report("tessera_local_array").clean());
    assertFalse(kernel.clean());
    assertThrows(IllegalStateException.class, kernel::report);
  }
}
