package dev.tessera.ssb.bench;

import dev.tessera.ssb.SsbTables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Progress while the generator runs: every few seconds, the elapsed time and the tables whose
 * Parquet is complete (Spark writes {@code _SUCCESS} when a table is done). The generator is one
 * call, so watching its output folder is how the command can tell which table it is on.
 */
final class GenerationTicker implements AutoCloseable {
  private static final long PERIOD_SECONDS = 5;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "ssb-generation-progress");
    t.setDaemon(true);
    return t;
  });

  GenerationTicker(Path dir, long startNanos, Consumer<String> log) {
    timer.scheduleAtFixedRate(() -> {
      List<String> done = SsbTables.NAMES.stream()
          .filter(t -> Files.exists(dir.resolve(t).resolve("_SUCCESS"))).toList();
      List<String> writing = SsbTables.NAMES.stream()
          .filter(t -> Files.isDirectory(dir.resolve(t)) && !done.contains(t)).toList();
      log.accept(String.format("  generating: %.0f s; writing %s; done: %s",
          (System.nanoTime() - startNanos) / 1e9, writing.isEmpty() ? "-"
              : String.join(", ", writing), done.isEmpty() ? "-" : String.join(", ", done)));
    }, PERIOD_SECONDS, PERIOD_SECONDS, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
