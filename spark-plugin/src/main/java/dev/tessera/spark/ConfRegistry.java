package dev.tessera.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Every Tessera setting, in the order it was registered (the order of docs/configs.md). The
 * rewrite code may register per-operator switches after startup, so it is thread-safe.
 */
final class ConfRegistry {
  private final Map<String, ConfEntry<?>> byKey = new LinkedHashMap<>();

  /** Registers {@code entry}; a second entry with the same key is a programming error. */
  synchronized <T> ConfEntry<T> register(ConfEntry<T> entry) {
    if (byKey.putIfAbsent(entry.key(), entry) != null) {
      throw new IllegalStateException("two Tessera settings share the key " + entry.key());
    }
    return entry;
  }

  /** The entry for {@code key}, registering {@code create}'s entry if there is none yet. */
  @SuppressWarnings("unchecked")
  synchronized <T> ConfEntry<T> registerIfAbsent(String key,
      Supplier<ConfEntry<T>> create) {
    ConfEntry<?> existing = byKey.get(key);
    return existing != null ? (ConfEntry<T>) existing : register(create.get());
  }

  synchronized ConfEntry<?> lookup(String key) {
    return byKey.get(key);
  }

  synchronized List<ConfEntry<?>> entries() {
    return new ArrayList<>(byKey.values());
  }

  /**
   * The registered key nearest to {@code unknown} by edit distance, or null when none is near
   * enough to be a plausible typo. Keys are compared after the shared "spark.tessera." prefix,
   * which would otherwise make every key look close to every other.
   */
  synchronized String closestKey(String unknown) {
    String wanted = afterPrefix(unknown);
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String key : byKey.keySet()) {
      int d = editDistance(wanted, afterPrefix(key));
      if (d < bestDistance) {
        best = key;
        bestDistance = d;
      }
    }
    return best != null && bestDistance <= Math.max(2, wanted.length() / 4) ? best : null;
  }

  private static String afterPrefix(String key) {
    String lower = key.toLowerCase(Locale.ROOT);
    return lower.startsWith(TesseraConf.PREFIX) ? lower.substring(TesseraConf.PREFIX.length())
        : lower;
  }

  /** Levenshtein distance, two rows at a time. */
  static int editDistance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }
}
