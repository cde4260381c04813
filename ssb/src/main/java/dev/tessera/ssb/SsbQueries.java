package dev.tessera.ssb;

import java.util.List;

/** The 13 SSB queries (flights 1 to 4), read from resources {@code queries/q1.1.sql} etc. */
public final class SsbQueries {
  private SsbQueries() {}

  /** All 13, in order 1.1, 1.2, 1.3, 2.1, ..., 4.3. */
  public static List<SsbQuery> all() {
    throw new UnsupportedOperationException("SSB queries: being written");
  }
}
