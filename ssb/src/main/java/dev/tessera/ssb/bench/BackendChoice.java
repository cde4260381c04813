package dev.tessera.ssb.bench;

import dev.tessera.gpu.cuda.CudaAvailability;
import java.util.Locale;

/** The {@code --backend} the user asked for, and the one it resolves to on this machine. */
public enum BackendChoice {
  AUTO("auto"),
  CUDA("cuda"),
  HOST_REFERENCE("host-reference");

  private final String value;

  BackendChoice(String value) {
    this.value = value;
  }

  public String value() {
    return value;
  }

  /** Parses a {@code --backend} value, naming the bad value and the accepted ones. */
  public static BackendChoice parse(String text) {
    for (BackendChoice choice : values()) {
      if (choice.value.equals(text.toLowerCase(Locale.ROOT))) {
        return choice;
      }
    }
    throw new IllegalArgumentException("--backend must be auto, cuda or host-reference, not '"
        + text + "'");
  }

  /**
   * The {@code spark.tessera.backend} to run with: auto is cuda when this machine has a usable
   * CUDA device, else host-reference (which only checks plans and results). cuda without a device
   * is an error: the user asked for GPU timings this machine cannot give.
   */
  public String resolve(CudaAvailability cuda) {
    return switch (this) {
      case HOST_REFERENCE -> HOST_REFERENCE.value;
      case CUDA -> {
        if (!cuda.isAvailable()) {
          throw new IllegalStateException("--backend cuda: no usable CUDA device ("
              + cuda.unavailableReason() + "); use --backend auto or host-reference");
        }
        yield CUDA.value;
      }
      case AUTO -> cuda.isAvailable() ? CUDA.value : HOST_REFERENCE.value;
    };
  }
}
