package dev.tessera.ssb.bench;

import dev.tessera.ssb.SsbGenerator;
import dev.tessera.ssb.SsbTables;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/**
 * A folder of generated SSB data, reused when it holds the same scale factor and seed. The marker
 * file {@value #MARKER} records them; it is written last, so a generation that was interrupted
 * leaves no marker and is redone.
 */
public final class SsbData {
  public static final String MARKER = "tessera-ssb.properties";

  private SsbData() {}

  /** Whether {@code dir} holds complete data of {@code scale} and {@code seed}. */
  public static boolean isReusable(Path dir, double scale, long seed) {
    Path marker = dir.resolve(MARKER);
    if (!Files.isRegularFile(marker)) {
      return false;
    }
    Properties p = new Properties();
    try (Reader in = Files.newBufferedReader(marker)) {
      p.load(in);
    } catch (IOException e) {
      return false;
    }
    boolean tables = SsbTables.NAMES.stream().allMatch(t -> Files.isDirectory(dir.resolve(t)));
    return tables && Double.toString(scale).equals(p.getProperty("scale"))
        && Long.toString(seed).equals(p.getProperty("seed"));
  }

  /** Generates the data into {@code dir} unless it is already there; reports on {@code log}. */
  public static void ensure(SparkSession spark, Path dir, double scale, long seed,
      Consumer<String> log) {
    if (isReusable(dir, scale, seed)) {
      log.accept("reusing SSB data of scale " + scale + ", seed " + seed + " in " + dir);
      return;
    }
    log.accept("generating SSB data of scale " + scale + ", seed " + seed + " into " + dir
        + " (tables " + String.join(", ", SsbTables.NAMES) + ")");
    long start = System.nanoTime();
    try {
      Files.createDirectories(dir);
      Files.deleteIfExists(dir.resolve(MARKER));
      try (GenerationTicker ticker = new GenerationTicker(dir, start, log)) {
        SsbGenerator.generate(spark, scale, seed, dir);
      }
      Properties p = new Properties();
      p.setProperty("scale", Double.toString(scale));
      p.setProperty("seed", Long.toString(seed));
      try (Writer out = Files.newBufferedWriter(dir.resolve(MARKER))) {
        p.store(out, "SSB data written by bin/tessera ssb; reused while scale and seed match");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write SSB data to " + dir, e);
    }
    log.accept(String.format("generated in %.1f s", (System.nanoTime() - start) / 1e9));
  }
}
