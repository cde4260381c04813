package dev.tessera.gpu;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The two implementations of every operator (DESIGN.md §4). */
public enum BackendKind {
  /** The real one: JCuda and the kernels' fatbin on an NVIDIA GPU. */
  CUDA("cuda"),
  /**
   * Plain Java loops over the same buffer layouts: obviously correct, not fast. For CI and tests;
   * used only when asked for by name, never as a silent substitute for a missing GPU.
   */
  HOST_REFERENCE("host-reference");

  private final String configValue;

  BackendKind(String configValue) {
    this.configValue = configValue;
  }

  /** The value a user writes in configuration to choose this backend. */
  public String configValue() {
    return configValue;
  }

  /**
   * Parses a configuration value.
   *
   * @param setting the name of the setting, for the error message
   * @throws IllegalArgumentException naming the setting and the accepted values
   */
  public static BackendKind fromConfigValue(String setting, String value) {
    String wanted = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    for (BackendKind kind : values()) {
      if (kind.configValue.equals(wanted)) {
        return kind;
      }
    }
    throw new IllegalArgumentException(String.format(
        "%s: '%s' is not a backend; accepted values are %s", setting, value,
        Arrays.stream(values()).map(BackendKind::configValue).collect(Collectors.joining(", "))));
  }
}
