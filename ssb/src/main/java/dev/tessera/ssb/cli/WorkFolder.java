package dev.tessera.ssb.cli;

import java.nio.file.Path;

/**
 * Where generated data and reports go by default: {@code -Dtessera.work} (bin/tessera sets it to
 * the checkout's {@code work/}, which git ignores), else {@code tessera-work} in the current
 * folder.
 */
final class WorkFolder {
  private WorkFolder() {}

  static Path get() {
    return Path.of(System.getProperty("tessera.work", "tessera-work")).toAbsolutePath();
  }

  /** The default data folder of a scale factor and seed, e.g. work/ssb-data/sf0.1-seed1. */
  static Path data(double scale, long seed) {
    return get().resolve("ssb-data").resolve("sf" + scale + "-seed" + seed);
  }
}
