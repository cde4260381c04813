package dev.tessera.spark.plugin;

import java.io.Serializable;

/**
 * What an executor's plugin tells the driver once it has opened the device runtime: whether
 * GPU nodes can run there, and if not, why. Sent with {@code PluginContext.ask} from
 * {@link TesseraExecutorPlugin#init}, that is before the executor tells the scheduler it is ready
 * for tasks, so the driver knows it before any task of this executor runs.
 *
 * @param executorId Spark's id of the executor
 * @param host the executor's host name
 * @param backend the backend the executor was asked to open (spark.tessera.backend)
 * @param usable whether the executor's runtime is usable
 * @param reason why it is not usable, or null when it is
 */
public record ExecutorDeviceState(String executorId, String host, String backend, boolean usable,
    String reason) implements Serializable {
  private static final long serialVersionUID = 1L;

  /** "executor 1 (host)", as logs and explain name it. */
  public String name() {
    return "executor " + executorId + " (" + host + ")";
  }
}
