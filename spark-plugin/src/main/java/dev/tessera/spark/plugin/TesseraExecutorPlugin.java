package dev.tessera.spark.plugin;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.TesseraRuntime;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * The executor side of {@link dev.tessera.TesseraPlugin}: opens the device runtime on the GPU
 * Spark assigned to this executor, and closes it when the executor shuts down. (In local mode the
 * executor lives in the driver JVM, and this runs there.) It opens the runtime even when
 * spark.tessera.enabled is false at startup, because a session may turn Tessera on later.
 */
public final class TesseraExecutorPlugin implements ExecutorPlugin {
  /** Spark's name for the GPU resource, as in spark.executor.resource.gpu.amount. */
  static final String GPU_RESOURCE = "gpu";

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    TesseraConf conf = TesseraConf.from(ctx.conf());
    TesseraRuntime.open(conf, deviceOrdinal(ctx.resources()));
  }

  @Override
  public void shutdown() {
    TesseraRuntime.close();
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
