package dev.tessera.ssb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SsbQueriesTest {
  @Test
  void all13QueriesLoadInOrder() {
    List<SsbQuery> all = SsbQueries.all();
    assertEquals(SsbQueries.NAMES, all.stream().map(SsbQuery::name).toList());
    for (SsbQuery q : all) {
      assertTrue(q.sql().contains("from") && q.sql().contains("lineorder"), q.name());
      assertTrue(!q.sql().endsWith(";"), q.name());
    }
  }

  @Test
  void anUnknownQueryIsRefusedNamingIt() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SsbQueries.byName("5.1"));
    assertTrue(e.getMessage().contains("5.1"), e.getMessage());
  }
}
