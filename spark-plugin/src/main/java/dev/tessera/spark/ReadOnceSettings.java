package dev.tessera.spark;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warns when a session's value of a setting read once per JVM ({@link ConfEntry#isReadOncePerJvm})
 * differs from the value in force: Spark lets a session change any setting, but the runtime has
 * already opened under the old value, so the change would otherwise be silently ignored.
 */
public final class ReadOnceSettings {
  private static final Logger LOG = LoggerFactory.getLogger(ReadOnceSettings.class);

  /** Each key, session value and value in force is warned of once per JVM, not per query. */
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

  private ReadOnceSettings() {}

  /**
   * Logs a WARN for each read-once setting whose value in {@code session} differs from the one in
   * force: the one this JVM's runtime opened with, or, where none is open here (a cluster's
   * driver), the application's, which the executors open with.
   *
   * @param application the application's SparkConf; asked for only where no runtime is open here
   */
  public static void warnOfChanges(TesseraConf session, Supplier<SparkConf> application) {
    for (ConfEntry<?> entry : TesseraConf.entries()) {
      if (entry.isReadOncePerJvm()) {
        warnIfChanged(entry, session, application);
      }
    }
  }

  private static <T> void warnIfChanged(ConfEntry<T> entry, TesseraConf session,
      Supplier<SparkConf> application) {
    T wanted = session.get(entry);
    T inForce = inForce(entry, application);
    if (inForce == null || Objects.equals(wanted, inForce)) {
      return;
    }
    String wantedText = entry.format(wanted);
    String inForceText = entry.format(inForce);
    if (WARNED.add(entry.key() + '\0' + wantedText + '\0' + inForceText)) {
      LOG.warn("Tessera: {}={} was set on a running session, but {} is read once per JVM, when"
          + " Tessera's runtime opens as the application (or an executor) starts, so the change"
          + " has no effect: {} stays in force. Set it when the application starts"
          + " (--conf {}={}).", entry.key(), wantedText, entry.key(), inForceText, entry.key(),
          wantedText);
    }
  }

  /** The value in force, or null when it cannot be told (the application's is not valid). */
  private static <T> T inForce(ConfEntry<T> entry, Supplier<SparkConf> application) {
    TesseraConf opened = TesseraRuntime.openedWith();
    if (opened != null) {
      return opened.get(entry);
    }
    SparkConf conf = application.get();
    if (!conf.contains(entry.key())) {
      return entry.defaultValue();
    }
    try {
      return entry.parse(conf.get(entry.key()));
    } catch (IllegalArgumentException e) {
      return null; // the application failed at startup over it, or will say so elsewhere
    }
  }
}
