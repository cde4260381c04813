package dev.tessera.spark.plugin;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's view of its executors' device runtimes: the last {@link ExecutorDeviceState} each
 * live executor reported, dropped when Spark removes the executor. Thread-safe: the plugin's RPC
 * endpoint writes it, Spark's listener bus removes from it, and query planning reads it.
 *
 * <p>The first time an executor reports an unusable runtime the driver logs one warning naming
 * it and the reason; later ones go to INFO, so a cluster without GPUs gives one clear line, not
 * one per executor.
 */
public final class ExecutorDevices {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorDevices.class);

  private final Map<String, ExecutorDeviceState> states = new ConcurrentHashMap<>();
  private final AtomicBoolean warned = new AtomicBoolean();
  private final boolean warn;

  /**
   * @param warn whether the first executor without a usable runtime is a warning: not in local
   *     mode, where the executor is this JVM and the runtime has warned already
   */
  public ExecutorDevices(boolean warn) {
    this.warn = warn;
  }

  /** What planning may assume about the executors, as of now. */
  public record Readiness(Kind kind, String reason) {
    /** How many of the live executors have reported a usable runtime. */
    public enum Kind {
      /** No live executor has reported yet (the application is starting, or has none now). */
      NONE_REPORTED,
      /** Every live executor that reported has a usable runtime. */
      ALL_USABLE,
      /** Some have one and some do not (a mixed cluster). */
      SOME_USABLE,
      /** None of those that reported has one. */
      NONE_USABLE
    }
  }

  /** Records {@code state}, replacing what its executor reported before. */
  public void record(ExecutorDeviceState state) {
    states.put(state.executorId(), state);
    if (state.usable()) {
      LOG.info("Tessera: {} reports a usable {} runtime", state.name(), state.backend());
      return;
    }
    if (warn && warned.compareAndSet(false, true)) {
      LOG.warn("Tessera: {} has no usable GPU: {}; its tasks run Spark's CPU operators (and"
          + " queries planned while no executor has one run entirely on the CPU). Later"
          + " executors without one are logged at INFO.", state.name(), state.reason());
    } else {
      LOG.info("Tessera: {} has no usable GPU either: {}", state.name(), state.reason());
    }
  }

  /** Forgets {@code executorId} (Spark removed it). */
  public void remove(String executorId) {
    states.remove(executorId);
  }

  /** The states of the live executors that reported, by executor id. */
  public List<ExecutorDeviceState> states() {
    List<ExecutorDeviceState> all = new ArrayList<>(states.values());
    all.sort(Comparator.comparing(ExecutorDeviceState::executorId));
    return all;
  }

  /** What planning may assume now; the reason names an executor without a usable runtime. */
  public Readiness readiness() {
    List<ExecutorDeviceState> all = states();
    if (all.isEmpty()) {
      return new Readiness(Readiness.Kind.NONE_REPORTED,
          "no executor has reported its device runtime yet");
    }
    List<ExecutorDeviceState> unusable = all.stream().filter(s -> !s.usable()).toList();
    if (unusable.isEmpty()) {
      return new Readiness(Readiness.Kind.ALL_USABLE, null);
    }
    ExecutorDeviceState first = unusable.get(0);
    String reason = first.name() + " has no usable GPU: " + first.reason();
    if (unusable.size() > 1) {
      reason += " (nor have " + (unusable.size() - 1) + " other executor(s))";
    }
    return new Readiness(unusable.size() == all.size() ? Readiness.Kind.NONE_USABLE
        : Readiness.Kind.SOME_USABLE, reason);
  }
}
