package dev.tessera.ssb;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The 13 SSB queries (flights 1 to 4), read from resources {@code queries/q1.1.sql} etc. */
public final class SsbQueries {
  private SsbQueries() {}

  /** The query numbers, in the paper's order. */
  public static final List<String> NAMES = List.of(
      "1.1", "1.2", "1.3", "2.1", "2.2", "2.3", "3.1", "3.2", "3.3", "3.4", "4.1", "4.2", "4.3");

  /** All 13, in order 1.1, 1.2, 1.3, 2.1, ..., 4.3. */
  public static List<SsbQuery> all() {
    return NAMES.stream().map(SsbQueries::byName).toList();
  }

  /** The query numbered {@code name}, "1.1" to "4.3". */
  public static SsbQuery byName(String name) {
    if (!NAMES.contains(name)) {
      throw new IllegalArgumentException("no SSB query " + name + "; the queries are " + NAMES);
    }
    String resource = "queries/q" + name + ".sql";
    try (InputStream in = SsbQueries.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("SSB query resource missing: " + resource);
      }
      return new SsbQuery(name, new String(in.readAllBytes(), StandardCharsets.UTF_8).strip());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read SSB query resource " + resource, e);
    }
  }
}
