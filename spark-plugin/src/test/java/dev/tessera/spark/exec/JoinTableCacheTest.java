package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One join table per broadcast and executor: shared, reference counted, closed in the end. */
class JoinTableCacheTest {
  private final List<FakeTable> built = new ArrayList<>();

  private static final class FakeTable implements JoinTable {
    boolean closed;

    @Override
    public JoinTableSchema schema() {
      return new JoinTableSchema(List.of(ColumnType.INT), List.of());
    }

    @Override
    public long buildRows() {
      return 0;
    }

    @Override
    public boolean uniqueKeys() {
      return true;
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private JoinTable build() {
    FakeTable t = new FakeTable();
    built.add(t);
    return t;
  }

  private static String key(long broadcast) {
    return JoinTableCache.key("app", broadcast);
  }

  @Test
  void broadcastsOfDifferentApplicationsDoNotShareTables() {
    try (JoinTableCache.Handle a =
            JoinTableCache.acquire(JoinTableCache.key("app-1", 0), this::build);
        JoinTableCache.Handle b =
            JoinTableCache.acquire(JoinTableCache.key("app-2", 0), this::build)) {
      assertTrue(a.table() != b.table());
    }
  }

  @AfterEach
  void closeAll() {
    JoinTableCache.closeAll();
    assertEquals(0, JoinTableCache.size());
    built.forEach(t -> assertTrue(t.closed, "a table was never closed"));
  }

  @Test
  void tasksOfOneBroadcastShareOneTable() {
    try (JoinTableCache.Handle a = JoinTableCache.acquire(key(1), this::build);
        JoinTableCache.Handle b = JoinTableCache.acquire(key(1), this::build)) {
      assertSame(a.table(), b.table());
    }
    // Idle now, but kept for the next wave of tasks.
    try (JoinTableCache.Handle c = JoinTableCache.acquire(key(1), this::build)) {
      assertEquals(1, built.size());
      assertTrue(!built.get(0).closed);
    }
  }

  @Test
  void idleTablesBeyondTheLimitCloseOldestFirst() {
    for (long id = 0; id < JoinTableCache.MAX_IDLE + 2; id++) {
      JoinTableCache.acquire(key(id), this::build).close();
    }
    assertTrue(built.get(0).closed && built.get(1).closed);
    assertTrue(!built.get(2).closed);
    assertEquals(JoinTableCache.MAX_IDLE, JoinTableCache.size());
  }

  @Test
  void aReferencedTableIsNeverEvicted() {
    try (JoinTableCache.Handle held = JoinTableCache.acquire(key(100), this::build)) {
      for (long id = 0; id < JoinTableCache.MAX_IDLE + 2; id++) {
        JoinTableCache.acquire(key(id), this::build).close();
      }
      assertTrue(!((FakeTable) held.table()).closed);
    }
  }

  @Test
  void aFailedBuildLeavesNothingBehind() {
    assertThrows(IllegalStateException.class, () -> JoinTableCache.acquire(key(7), () -> {
      throw new IllegalStateException("no memory");
    }));
    assertEquals(0, JoinTableCache.size());
    try (JoinTableCache.Handle h = JoinTableCache.acquire(key(7), this::build)) {
      assertSame(built.get(0), h.table());
    }
  }
}
