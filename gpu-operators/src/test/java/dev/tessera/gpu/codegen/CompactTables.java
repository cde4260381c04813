package dev.tessera.gpu.codegen;

import org.junit.jupiter.api.function.Executable;

/**
 * Runs test code with the compact per-block table on ({@link LocalTableLayout#PROPERTY}), the
 * property restored after. The tests of one JVM run one after another, so no other test sees it.
 */
public final class CompactTables {
  private CompactTables() {}

  /** {@code body} with {@link LocalTableLayout#PROPERTY} set to true. */
  public static void on(Executable body) throws Throwable {
    String before = System.getProperty(LocalTableLayout.PROPERTY);
    System.setProperty(LocalTableLayout.PROPERTY, "true");
    try {
      body.execute();
    } finally {
      if (before == null) {
        System.clearProperty(LocalTableLayout.PROPERTY);
      } else {
        System.setProperty(LocalTableLayout.PROPERTY, before);
      }
    }
  }
}
