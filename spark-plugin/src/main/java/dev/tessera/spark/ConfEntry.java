package dev.tessera.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * One Tessera setting: its key, what it means, its default, and how its text is parsed and
 * checked. Built fluently, as Spark's and Comet's config builders are, so that the definition,
 * the validation and the generated docs (docs/configs.md) come from one place:
 *
 * <pre>{@code
 * ConfEntry.key("spark.tessera.batchSizeBytes")
 *     .doc("Target size of a device batch.")
 *     .type(ConfValueType.BYTES)
 *     .check(v -> v > 0, "greater than 0")
 *     .createWithDefault(128L << 20);
 * }</pre>
 *
 * An entry is inert until {@link TesseraConf} registers it; only registered keys are accepted.
 */
public final class ConfEntry<T> {
  private final String key;
  private final String doc;
  private final ConfValueType<T> type;
  private final List<Requirement<T>> requirements;
  private final T defaultValue;
  private final boolean readOncePerJvm;

  private record Requirement<T>(Predicate<T> test, String description) {}

  private ConfEntry(String key, String doc, ConfValueType<T> type,
      List<Requirement<T>> requirements, T defaultValue, boolean readOncePerJvm) {
    this.key = key;
    this.doc = doc;
    this.type = type;
    this.requirements = List.copyOf(requirements);
    this.defaultValue = defaultValue;
    this.readOncePerJvm = readOncePerJvm;
  }

  /** Starts the definition of the setting {@code key}. */
  public static Builder key(String key) {
    return new Builder(key);
  }

  public String key() {
    return key;
  }

  public String doc() {
    return doc;
  }

  public T defaultValue() {
    return defaultValue;
  }

  /** The default as a user would type it. */
  public String defaultText() {
    return format(defaultValue);
  }

  /** {@code value} as a user would type it. */
  public String format(T value) {
    return type.printer().apply(value);
  }

  /**
   * Whether the setting is read only when Tessera's runtime opens in a JVM (as the application or
   * an executor starts), so that changing it on a running session has no effect.
   */
  public boolean isReadOncePerJvm() {
    return readOncePerJvm;
  }

  /** The accepted values, and any further requirement, in words. */
  public String acceptedValues() {
    StringBuilder text = new StringBuilder(type.accepted());
    for (Requirement<T> r : requirements) {
      text.append("; must be ").append(r.description());
    }
    return text.toString();
  }

  /**
   * Parses and checks the text of this setting.
   *
   * @throws IllegalArgumentException naming the key, the text and the accepted values
   */
  public T parse(String text) {
    String trimmed = text == null ? "" : text.trim();
    T value = type.parser().parse(key, trimmed);
    if (value == null) {
      throw new IllegalArgumentException(String.format(
          "%s: '%s' is not %s; accepted values are %s", key, text, type.what(),
          type.accepted()));
    }
    for (Requirement<T> r : requirements) {
      if (!r.test().test(value)) {
        throw new IllegalArgumentException(String.format(
            "%s: '%s' is not valid; it must be %s", key, text, r.description()));
      }
    }
    return value;
  }

  @Override
  public String toString() {
    return key + "=" + defaultText() + " (default)";
  }

  /** The first step: key and doc. */
  public static final class Builder {
    private final String key;
    private String doc;

    private Builder(String key) {
      this.key = Objects.requireNonNull(key, "key");
      if (!key.startsWith(TesseraConf.PREFIX)) {
        throw new IllegalArgumentException(
            "a Tessera setting's key starts with " + TesseraConf.PREFIX + ": " + key);
      }
    }

    /** What the setting does, for docs/configs.md: one or two sentences a user can act on. */
    public Builder doc(String doc) {
      this.doc = doc;
      return this;
    }

    public Typed<Boolean> booleanConf() {
      return type(ConfValueType.BOOLEAN);
    }

    public Typed<Integer> intConf() {
      return type(ConfValueType.INT);
    }

    public Typed<Long> bytesConf() {
      return type(ConfValueType.BYTES);
    }

    public <V> Typed<V> type(ConfValueType<V> type) {
      if (doc == null || doc.isBlank()) {
        // The docs are generated from these entries; an entry without one leaves a hole there.
        throw new IllegalStateException(key + " needs a doc before its type");
      }
      return new Typed<>(key, doc, type);
    }
  }

  /** The second step: checks and the default. */
  public static final class Typed<T> {
    private final String key;
    private final String doc;
    private final ConfValueType<T> type;
    private final List<Requirement<T>> requirements = new ArrayList<>();
    private boolean readOncePerJvm;

    private Typed(String key, String doc, ConfValueType<T> type) {
      this.key = key;
      this.doc = doc;
      this.type = type;
    }

    /**
     * Adds a requirement on parsed values; {@code description} completes "it must be ...",
     * e.g. "greater than 0".
     */
    public Typed<T> check(Predicate<T> test, String description) {
      requirements.add(new Requirement<>(test, description));
      return this;
    }

    /** Marks the setting as read once per JVM; see {@link ConfEntry#isReadOncePerJvm()}. */
    public Typed<T> readOncePerJvm() {
      readOncePerJvm = true;
      return this;
    }

    public ConfEntry<T> createWithDefault(T defaultValue) {
      Objects.requireNonNull(defaultValue, "default of " + key);
      for (Requirement<T> r : requirements) {
        if (!r.test().test(defaultValue)) {
          throw new IllegalStateException(key + ": the default " + defaultValue
              + " fails its own requirement: " + r.description());
        }
      }
      return new ConfEntry<>(key, doc, type, requirements, defaultValue, readOncePerJvm);
    }
  }
}
