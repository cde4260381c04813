package dev.tessera;

import dev.tessera.spark.plugin.TesseraDriverPlugin;
import dev.tessera.spark.plugin.TesseraExecutorPlugin;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Tessera's entry point: {@code --conf spark.plugins=dev.tessera.TesseraPlugin} is all an
 * application needs. On the driver it checks the {@code spark.tessera.*} settings and installs
 * {@link TesseraExtensions} in every SparkSession; on each executor it opens the device runtime
 * on the executor's GPU.
 */
public final class TesseraPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new TesseraDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new TesseraExecutorPlugin();
  }
}
