package dev.tessera.spark.rewrite;

import dev.tessera.TesseraPlugin;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import dev.tessera.spark.plugin.ExecutorDevices;
import dev.tessera.spark.plugin.TesseraDriverPlugin;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the driver may plan GPU nodes: that is, whether the device runtime that will run them
 * is usable.
 *
 * <p>Where the executors live in this JVM (local mode) that is this JVM's runtime, opened here on
 * first use when no executor plugin opened it (spark.sql.extensions without spark.plugins), and
 * the answer is exact.
 *
 * <p>On a cluster the driver cannot see the executors' GPUs: each executor plugin reports its
 * runtime to the driver plugin ({@link ExecutorDevices}) before it takes tasks, and plans follow
 * those reports:
 * <ul>
 *   <li>every live executor that reported has a usable runtime: GPU nodes;
 *   <li>none of them has one: no GPU nodes, and explain names an executor and its reason;
 *   <li>none has reported yet (the first queries of an application are planned while its
 *       executors are still starting, and under dynamic allocation there may be none for a
 *       while), or only some have one: GPU nodes, each GPU segment keeping Spark's plan to run
 *       instead in a task that finds no usable runtime ({@link CpuFallback}); a segment that
 *       cannot keep one (its Spark plan would read another shuffle) stays on the CPU.
 * </ul>
 * Whatever was decided, on a cluster every GPU segment that can keep Spark's plan does so, so an
 * executor that joins later without a usable GPU still completes its tasks.
 */
final class RuntimeReadiness {
  private static final Logger LOG = LoggerFactory.getLogger(RuntimeReadiness.class);
  private static final String NO_PLUGIN = "spark.plugins does not include "
      + TesseraPlugin.class.getName() + ", so no executor opens its GPU";
  private static final AtomicBoolean WARNED_NO_PLUGIN = new AtomicBoolean();

  private RuntimeReadiness() {}

  /**
   * What planning may do.
   *
   * @param notUsable why plans may not use the runtime at all, or null when they may
   * @param perTaskFallback whether GPU segments keep Spark's plan for tasks that find no usable
   *     runtime (on a cluster) or run out of device memory before their first row (always)
   * @param unconfirmed when not null, why a GPU segment that cannot keep Spark's plan must stay
   *     on the CPU (not every executor is known to have a usable runtime)
   */
  record Decision(String notUsable, boolean perTaskFallback, String unconfirmed) {}

  static Decision decide(SparkContext sc, TesseraConf conf) {
    if (sc.isLocal()) {
      if (!TesseraRuntime.isOpen() && TesseraRuntime.open(conf, 0)) {
        // Opened here, not by an executor plugin: close it when this SparkContext stops, so a
        // later context in this JVM opens one under its own settings.
        sc.addSparkListener(new CloseRuntimeAtEnd());
      }
      // Per-task fallback here too: a task whose GPU step runs out of device memory before its
      // first row runs Spark's plan for it (CpuFallbackRDD).
      return new Decision(TesseraRuntime.unusableReason(), true, null);
    }
    ExecutorDevices devices = TesseraDriverPlugin.executorDevices();
    if (devices == null) {
      if (WARNED_NO_PLUGIN.compareAndSet(false, true)) {
        LOG.warn("Tessera: {}; all queries run on Spark's CPU operators. Set spark.plugins={}"
            + " (it also sets spark.sql.extensions).", NO_PLUGIN, TesseraPlugin.class.getName());
      }
      return new Decision(NO_PLUGIN, false, null);
    }
    ExecutorDevices.Readiness readiness = devices.readiness();
    return switch (readiness.kind()) {
      case ALL_USABLE -> new Decision(null, true, null);
      case NONE_USABLE -> new Decision(readiness.reason(), false, null);
      case NONE_REPORTED, SOME_USABLE -> new Decision(null, true, readiness.reason());
    };
  }

  private static final class CloseRuntimeAtEnd extends SparkListener {
    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
      TesseraRuntime.close();
    }
  }
}
