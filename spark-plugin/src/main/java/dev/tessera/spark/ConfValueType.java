package dev.tessera.spark;

import dev.tessera.gpu.BackendKind;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * How the text of one setting becomes a typed value, and back into text for the docs.
 *
 * @param what the kind of value, completing "'x' is not ...", e.g. "a boolean"
 * @param accepted the accepted values, as an error message and the docs list them
 * @param parser turns the trimmed text into a value; returns null when the text is not one
 *     (the entry then names the key, the text and {@code accepted}), or throws an
 *     IllegalArgumentException that already says all of that
 * @param printer writes a value the way a user would type it
 */
public record ConfValueType<T>(
    String what, String accepted, Parser<T> parser, Function<T, String> printer) {

  /** Parses the text of setting {@code key}; see the record's {@code parser}. */
  @FunctionalInterface
  public interface Parser<T> {
    T parse(String key, String text);
  }

  /** true or false, any case, as Spark's own boolean settings. */
  public static final ConfValueType<Boolean> BOOLEAN = new ConfValueType<>(
      "a boolean", "true, false",
      (key, text) -> switch (text.toLowerCase(Locale.ROOT)) {
        case "true" -> Boolean.TRUE;
        case "false" -> Boolean.FALSE;
        default -> null;
      },
      String::valueOf);

  /** A whole number of bytes, optionally with a binary unit as Spark's size settings take. */
  public static final ConfValueType<Long> BYTES = new ConfValueType<>(
      "a size in bytes",
      "a whole number of bytes, optionally with a binary unit k, m, g or t (128m = 134217728)",
      (key, text) -> parseBytes(text),
      ConfValueType::formatBytes);

  /** A whole number that fits an int. */
  public static final ConfValueType<Integer> INT = new ConfValueType<>(
      "a whole number", "a whole number (e.g. 1048576)",
      (key, text) -> {
        try {
          return Integer.valueOf(text.trim());
        } catch (NumberFormatException e) {
          return null;
        }
      },
      String::valueOf);

  /** A folder on the executor's host; empty for none. */
  public static final ConfValueType<String> FOLDER = new ConfValueType<>(
      "a folder", "a folder's path, or empty for none", (key, text) -> text.trim(), s -> s);

  /** The device runtime's backend; {@link BackendKind} owns the names and the error message. */
  public static final ConfValueType<BackendKind> BACKEND = new ConfValueType<>(
      "a backend",
      Arrays.stream(BackendKind.values()).map(BackendKind::configValue)
          .collect(Collectors.joining(", ")),
      BackendKind::fromConfigValue,
      BackendKind::configValue);

  /** The constants of {@code type}, matched without regard to case. */
  public static <E extends Enum<E>> ConfValueType<E> caseInsensitiveEnum(
      Class<E> type, String what) {
    E[] constants = type.getEnumConstants();
    return new ConfValueType<>(
        what,
        Arrays.stream(constants).map(Enum::name).collect(Collectors.joining(", "))
            + " (any case)",
        (key, text) -> Arrays.stream(constants)
            .filter(c -> c.name().equalsIgnoreCase(text)).findFirst().orElse(null),
        Enum::name);
  }

  private static final Pattern SIZE =
      Pattern.compile("(\\d+)\\s*(b|k|kb|m|mb|g|gb|t|tb)?", Pattern.CASE_INSENSITIVE);
  private static final String UNITS = "bkmgt";

  private static Long parseBytes(String text) {
    Matcher m = SIZE.matcher(text);
    if (!m.matches()) {
      return null;
    }
    try {
      long number = Long.parseLong(m.group(1));
      int shift = m.group(2) == null ? 0
          : 10 * UNITS.indexOf(Character.toLowerCase(m.group(2).charAt(0)));
      if (shift > 0 && number > (Long.MAX_VALUE >> shift)) {
        return null; // does not fit a long
      }
      return number << shift;
    } catch (NumberFormatException e) {
      return null; // more digits than a long holds
    }
  }

  /** The largest exact binary unit, so the docs read 128m rather than 134217728. */
  private static String formatBytes(Long bytes) {
    long value = bytes;
    int unit = 0;
    while (unit < UNITS.length() - 1 && value != 0 && (value & 1023) == 0) {
      value >>= 10;
      unit++;
    }
    return unit == 0 ? Long.toString(value) : value + UNITS.substring(unit, unit + 1);
  }
}
