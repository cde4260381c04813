package dev.tessera.spark.plugin;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor side of {@link dev.tessera.TesseraPlugin}: opens the device runtime on the GPU
 * Spark assigned to this executor, and closes it when the executor shuts down. (In local mode the
 * executor lives in the driver JVM, and this runs there.) It opens the runtime even when
 * spark.tessera.enabled is false at startup, because a session may turn Tessera on later.
 *
 * <p>With a usable runtime, it registers the gauges of the executor's device store
 * ({@link DeviceStoreGauges}) on the plugin's metric registry.
 *
 * <p>Then it tells the driver whether the runtime is usable ({@link ExecutorDeviceState}), and
 * waits for the driver to have recorded it: Spark offers this executor tasks only after its
 * plugins are initialised, so the driver knows the state before any task runs here.
 */
public final class TesseraExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(TesseraExecutorPlugin.class);

  /** Spark's name for the GPU resource, as in spark.executor.resource.gpu.amount. */
  static final String GPU_RESOURCE = "gpu";

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    TesseraConf conf = TesseraConf.from(ctx.conf());
    TesseraRuntime.open(conf, deviceOrdinal(ctx.resources()));
    if (TesseraRuntime.isUsable()) {
      DeviceStoreGauges.register(ctx.metricRegistry(), TesseraRuntime.deviceStore());
    }
    ExecutorDeviceState state = new ExecutorDeviceState(ctx.executorID(), host(ctx),
        conf.backend().configValue(), TesseraRuntime.isUsable(),
        TesseraRuntime.isUsable() ? null : TesseraRuntime.unusableReason());
    try {
      ctx.ask(state);
    } catch (Exception e) {
      // The driver then does not know this executor; its GPU nodes still fall back per task.
      LOG.warn("Tessera: could not tell the driver this executor's device state ({})", state, e);
    }
  }

  @Override
  public void shutdown() {
    TesseraRuntime.close();
  }

  /** This executor's host name. */
  private static String host(PluginContext ctx) {
    try {
      return ctx.hostname();
    } catch (RuntimeException e) {
      // Spark 4.1's PluginContext.hostname() fails in an executor JVM, whose RPC environment is
      // a client with no address; the executor sets this host name before it starts plugins.
      return org.apache.spark.util.Utils.localHostName();
    }
  }

  /**
   * The CUDA device of this executor: the first GPU address Spark assigned it when GPU scheduling
   * is on (spark.executor.resource.gpu.amount), else device 0.
   *
   * @throws IllegalArgumentException when the assigned address is not a device ordinal
   */
  static int deviceOrdinal(Map<String, ResourceInformation> resources) {
    ResourceInformation gpus = resources == null ? null : resources.get(GPU_RESOURCE);
    if (gpus == null || gpus.addresses().length == 0) {
      return 0;
    }
    String address = gpus.addresses()[0].trim();
    try {
      return Integer.parseInt(address);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("Tessera: the executor's GPU address '" + address
          + "' is not a CUDA device ordinal (0, 1, ...); make the GPU discovery script"
          + " (spark.executor.resource.gpu.discoveryScript) report device ordinals", e);
    }
  }
}
