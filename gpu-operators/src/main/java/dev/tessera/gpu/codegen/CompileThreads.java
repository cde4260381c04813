package dev.tessera.gpu.codegen;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The threads that compile beside a caller: a rejected kernel's leaner forms ({@link
 * GeneratedModule#compile}), its other options beside those ({@link
 * GeneratedModule#compilation}) or while the driver's compiler tries it ({@link
 * GeneratedModule#compileAgainAhead}), and the backend's warm-up ({@link CompilerWarmUp}). Each
 * compile is a single-threaded call into the in-jar compiler, which is thread safe (the compile
 * tests run it on every core). Daemon threads, made as needed and gone after a minute idle: a
 * process compiles a kernel once a key.
 */
final class CompileThreads {
  private static final AtomicInteger NEXT = new AtomicInteger();
  private static final ThreadFactory FACTORY = task -> {
    Thread thread = new Thread(task, "tessera-ptx-compile-" + NEXT.incrementAndGet());
    thread.setDaemon(true);
    return thread;
  };
  private static final ExecutorService THREADS = Executors.newCachedThreadPool(FACTORY);

  private CompileThreads() {}

  /** {@code compile} started on a compile thread. */
  static <T> CompletableFuture<T> start(Supplier<T> compile) {
    return CompletableFuture.supplyAsync(compile, THREADS);
  }

  /**
   * The result of a compile {@link #start}ed; what it threw (a {@link PtxCompileException}, a
   * {@code GpuException}) is thrown here as it was, as a compile on the caller's thread throws it.
   */
  static <T> T join(CompletableFuture<T> started) {
    try {
      return started.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      if (e.getCause() instanceof Error error) {
        throw error;
      }
      throw e;
    }
  }
}
