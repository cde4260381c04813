package dev.tessera.spark.rewrite;

import dev.tessera.TesseraPlugin;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.plugin.TesseraDriverPlugin;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the driver may plan GPU nodes: that is, whether the device runtime that will run them
 * is usable. Where the executors live in this JVM (local mode) that is this JVM's runtime, opened
 * here on first use when no executor plugin opened it (spark.sql.extensions without
 * spark.plugins). On a cluster the driver cannot see the executors' GPUs; it trusts the executor
 * plugin to open them, and without the plugin nothing opens them.
 */
final class RuntimeReadiness {
  private static final Logger LOG = LoggerFactory.getLogger(RuntimeReadiness.class);
  private static final String NO_PLUGIN = "spark.plugins does not include "
      + TesseraPlugin.class.getName() + ", so no executor opens its GPU";
  private static final AtomicBoolean WARNED_NO_PLUGIN = new AtomicBoolean();

  private RuntimeReadiness() {}

  /** Why plans may not use the runtime, or null when they may. */
  static String whyNotUsable(SparkContext sc, TesseraConf conf) {
    if (TesseraRuntime.isOpen()) {
      return TesseraRuntime.unusableReason();
    }
    if (sc.isLocal()) {
      if (TesseraRuntime.open(conf, 0)) {
        // Opened here, not by an executor plugin: close it when this SparkContext stops, so a
        // later context in this JVM opens one under its own settings.
        sc.addSparkListener(new CloseRuntimeAtEnd());
      }
      return TesseraRuntime.unusableReason();
    }
    if (TesseraDriverPlugin.isActiveInThisJvm()) {
      return null;
    }
    if (WARNED_NO_PLUGIN.compareAndSet(false, true)) {
      LOG.warn("Tessera: {}; all queries run on Spark's CPU operators. Set spark.plugins={}"
          + " (it also sets spark.sql.extensions).", NO_PLUGIN, TesseraPlugin.class.getName());
    }
    return NO_PLUGIN;
  }

  private static final class CloseRuntimeAtEnd extends SparkListener {
    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
      TesseraRuntime.close();
    }
  }
}
