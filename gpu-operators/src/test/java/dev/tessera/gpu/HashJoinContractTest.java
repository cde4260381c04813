package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The hash join's results, the same on every backend: join tables (unique keys, NULL keys), the
 * fused probe (PROBE, LOAD_BUILD) in filter/project and aggregate programs, and the 1:N expand.
 * Expected rows are written out by hand or computed by nested loops in plain Java.
 */
public abstract class HashJoinContractTest extends BackendTestBase {
  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType STRING = ColumnType.STRING;

  // ---- helpers -----------------------------------------------------------------------------


  /** A join table over build columns (keys first, then payload); the caller closes it. */
  private JoinTable table(JoinTableSchema schema, List<List<Object>> columns) {
    List<ColumnType> types = new ArrayList<>(schema.keyTypes());
    types.addAll(schema.payloadTypes());
    try (ColumnBatch<DeviceColumn> build = device(types, columns)) {
      return backend.hashJoinKernel().build(schema, build, backend.deviceMemory(), stream);
    }
  }

  /** The batch's rows, as lists of Java values. */
  private List<List<Object>> rows(ColumnBatch<DeviceColumn> batch) {
    try (ColumnBatch<HostColumn> back =
        ColumnTransfer.toHost(batch, backend.stagingAllocator(), stream)) {
      List<List<Object>> rows = new ArrayList<>();
      for (int r = 0; r < back.rowCount(); r++) {
        rows.add(new ArrayList<>());
      }
      for (HostColumn c : back.columns()) {
        List<Object> values = TestColumns.values(c.type(), c);
        for (int r = 0; r < back.rowCount(); r++) {
          rows.get(r).add(values.get(r));
        }
      }
      return rows;
    }
  }

  /** Runs {@code program} over the probe columns with the filter/project operator. */
  private List<List<Object>> run(Program program, List<JoinTable> tables,
      List<List<Object>> probe) {
    try (ColumnBatch<DeviceColumn> input = device(program.inputTypes(), probe);
        ColumnBatch<DeviceColumn> out = backend.programKernel().run(program, tables, input,
            backend.deviceMemory(), stream)) {
      return rows(out);
    }
  }

  /** PROBE of {@code table} with the key registers {@code keys}; returns the row register. */
  private static int probe(ProgramBuilder b, int table, int... keys) {
    int first = b.constant(keys[0]);
    for (int k = 1; k < keys.length; k++) {
      b.constant(keys[k]);
    }
    return b.emitNew(Opcode.PROBE, table, first, keys.length);
  }

  private static List<Object> list(Object... values) {
    return Arrays.asList(values);
  }

  /**
   * The program "key column 0 -> PROBE -> LOAD_BUILD payload 0", outputs (key, build row,
   * payload), for a one-key table of {@code keyType} with one payload column of
   * {@code payloadType}; {@code probeType} is the probe's key column.
   */
  private static Program probeAndLoad(ColumnType probeType, JoinTableSchema schema) {
    ProgramBuilder b = new ProgramBuilder(List.of(probeType), false);
    int t = b.table(schema);
    int key = b.loadColumn(0);
    int row = probe(b, t, key);
    int payload = b.emitNew(Opcode.LOAD_BUILD, t, row, 0);
    return b.build(-1, List.of(new Program.Output(key, probeType), new Program.Output(row, INT),
        new Program.Output(payload, schema.payloadTypes().get(0))));
  }

  /** Checks PROBE and LOAD_BUILD for one key type, with k1..k3 distinct non-NULL keys. */
  private void probesKeysOf(ColumnType type, Object k1, Object k2, Object k3) {
    JoinTableSchema schema = new JoinTableSchema(List.of(type), List.of(STRING));
    // Build rows: k1, k2, NULL, k1 again (so the keys are not unique; PROBE gives row 0).
    try (JoinTable t = table(schema, List.of(list(k1, k2, null, k1),
        list("one", null, "null key", "one again")))) {
      assertEquals(4, t.buildRows());
      assertFalse(t.uniqueKeys(), "k1 repeats");
      List<List<Object>> out = run(probeAndLoad(type, schema), List.of(t),
          List.of(list(k2, k1, null, k3, k1)));
      assertEquals(List.of(list(k2, 1, null), list(k1, 0, "one"), list(null, null, null),
          list(k3, null, null), list(k1, 0, "one")), out, type.toString());
    }
  }

  // ---- PROBE and LOAD_BUILD ----------------------------------------------------------------

  @Test
  void probesIntLongDateDecimalAndStringKeys() {
    probesKeysOf(INT, 7, Integer.MIN_VALUE, -7);
    probesKeysOf(LONG, Long.MAX_VALUE, -1L, 1L << 40);
    probesKeysOf(ColumnType.DATE, 19000, -3, 0);
    probesKeysOf(ColumnType.decimal(12, 2), new BigDecimal("-12.50"),
        new BigDecimal("9999999999.99"), new BigDecimal("12.50"));
    probesKeysOf(STRING, "grüße", "", "grüsse");
    probesKeysOf(ColumnType.SHORT, (short) -1, Short.MAX_VALUE, (short) 0);
  }

  @Test
  void integerKeysOfDifferentWidthsCompareAsSignExtended64BitValues() {
    JoinTableSchema schema = new JoinTableSchema(List.of(LONG), List.of(INT));
    try (JoinTable t = table(schema, List.of(list(-1L, 65535L, 300L), list(1, 2, 3)))) {
      assertTrue(t.uniqueKeys());
      // A SHORT probe key: -1 matches -1L (sign-extended), never 65535.
      List<List<Object>> out = run(probeAndLoad(ColumnType.SHORT, schema), List.of(t),
          List.of(list((short) -1, (short) 300, (short) 44)));
      assertEquals(List.of(list((short) -1, 0, 1), list((short) 300, 2, 3),
          list((short) 44, null, null)), out);
    }
  }

  @Test
  void multiColumnKeysMatchOnlyWhenEveryColumnIsEqual() {
    JoinTableSchema schema = new JoinTableSchema(List.of(INT, STRING), List.of(LONG));
    try (JoinTable t = table(schema, List.of(list(1, 1, 2, null, 3), list("a", "b", "a", "a",
        null), list(10L, 11L, 12L, 13L, 14L)))) {
      assertTrue(t.uniqueKeys(), "rows with a NULL key part never make keys repeat");
      ProgramBuilder b = new ProgramBuilder(List.of(INT, STRING), false);
      int table = b.table(schema);
      int k0 = b.loadColumn(0);
      int k1 = b.loadColumn(1);
      int row = probe(b, table, k0, k1);
      int payload = b.emitNew(Opcode.LOAD_BUILD, table, row, 0);
      Program program = b.build(-1, List.of(new Program.Output(row, INT),
          new Program.Output(payload, LONG)));
      List<List<Object>> out = run(program, List.of(t), List.of(
          list(1, 2, 1, 2, null, 3, 3), list("b", "a", "c", "b", "a", null, "x")));
      assertEquals(List.of(list(1, 11L), list(2, 12L), list(null, null), list(null, null),
          list(null, null), list(null, null), list(null, null)), out);
    }
  }

  @Test
  void semiAndAntiJoinsFilterOnWhetherTheProbeMatched() {
    JoinTableSchema schema = new JoinTableSchema(List.of(INT), List.of());
    try (JoinTable t = table(schema, List.of(list(5, 5, 9, null)))) {
      List<List<Object>> probe = List.of(list(5, null, 9, 6, 5), list(1L, 2L, 3L, 4L, 5L));
      for (boolean semi : new boolean[] {true, false}) {
        ProgramBuilder b = new ProgramBuilder(List.of(INT, LONG), false);
        int table = b.table(schema);
        int row = probe(b, table, b.loadColumn(0));
        int keep = b.emitNew(semi ? Opcode.IS_NOT_NULL : Opcode.IS_NULL, row, 0, 0);
        Program program = b.build(keep, List.of(new Program.Output(b.loadColumn(1), LONG)));
        List<List<Object>> expected = semi ? List.of(list(1L), list(3L), list(5L))
            : List.of(list(2L), list(4L));
        assertEquals(expected, run(program, List.of(t), probe), semi ? "semi" : "anti");
      }
    }
  }

  @Test
  void leftOuterThroughTheFusedProbeGivesNullPayloads() {
    JoinTableSchema schema = new JoinTableSchema(List.of(STRING), List.of(INT, STRING));
    try (JoinTable t = table(schema, List.of(list("x", "y", "z"), list(1, null, 3),
        list("X", "Y", null)))) {
      assertTrue(t.uniqueKeys());
      ProgramBuilder b = new ProgramBuilder(List.of(STRING), false);
      int table = b.table(schema);
      int key = b.loadColumn(0);
      int row = probe(b, table, key);
      int p0 = b.emitNew(Opcode.LOAD_BUILD, table, row, 0);
      int p1 = b.emitNew(Opcode.LOAD_BUILD, table, row, 1);
      Program program = b.build(-1, List.of(new Program.Output(key, STRING),
          new Program.Output(p0, INT), new Program.Output(p1, STRING)));
      assertEquals(List.of(list("z", 3, null), list("w", null, null), list("y", null, "Y"),
          list(null, null, null), list("x", 1, "X")),
          run(program, List.of(t), List.of(list("z", "w", "y", null, "x"))));
    }
  }

  @Test
  void anEmptyBuildSideMatchesNothing() {
    JoinTableSchema schema = new JoinTableSchema(List.of(INT), List.of(LONG));
    try (JoinTable t = table(schema, List.of(list(), list()))) {
      assertEquals(0, t.buildRows());
      assertTrue(t.uniqueKeys());
      assertEquals(List.of(list(1, null, null), list(null, null, null)),
          run(probeAndLoad(INT, schema), List.of(t), List.of(list(1, null))));
      try (ColumnBatch<DeviceColumn> probe = device(List.of(INT), List.of(list(1, 2)))) {
        assertEquals(List.of(), expand(t, probe, false, 10));
        assertEquals(List.of(list(1, null), list(2, null)), expand(t, probe, true, 10));
      }
    }
  }

  @Test
  void anEmptyProbeSideGivesNoRows() {
    JoinTableSchema schema = new JoinTableSchema(List.of(INT), List.of(LONG));
    try (JoinTable t = table(schema, List.of(list(1, 1), list(10L, 11L)))) {
      assertEquals(List.of(), run(probeAndLoad(INT, schema), List.of(t), List.of(list())));
      try (ColumnBatch<DeviceColumn> probe = device(List.of(INT), List.of(list()))) {
        assertEquals(List.of(), expand(t, probe, true, 10));
      }
    }
  }

  @Test
  void programsProbingSeveralTablesFeedAHashAggregation() {
    // A star join: fact (d1 key, d2 key, value); dimension 1 gives a category, dimension 2 is a
    // semi-join filter; then SUM(value), COUNT(*) GROUP BY category.
    JoinTableSchema dim1 = new JoinTableSchema(List.of(INT), List.of(INT));
    JoinTableSchema dim2 = new JoinTableSchema(List.of(LONG), List.of());
    try (JoinTable t1 = table(dim1, List.of(list(1, 2, 3, 4), list(100, 200, 100, null)));
        JoinTable t2 = table(dim2, List.of(list(10L, 30L)))) {
      ProgramBuilder b = new ProgramBuilder(List.of(INT, LONG, LONG), false);
      int a = b.table(dim1);
      int c = b.table(dim2);
      int row1 = probe(b, a, b.loadColumn(0));
      int category = b.emitNew(Opcode.LOAD_BUILD, a, row1, 0);
      int row2 = probe(b, c, b.loadColumn(1));
      int keep = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, row1, 0, 0),
          b.emitNew(Opcode.IS_NOT_NULL, row2, 0, 0), 0);
      Program program = b.build(keep, List.of(new Program.Output(category, INT),
          new Program.Output(b.loadColumn(2), LONG)));
      AggregateSpec spec = new AggregateSpec(List.of(INT, LONG), 1, List.of(
          new AggregateFunction(Kind.SUM, 1, LONG),
          new AggregateFunction(Kind.COUNT_ROWS, -1, LONG)), false);
      List<List<Object>> fact = List.of(list(1, 2, 3, 4, 5, null, 1, 3),
          list(10L, 10L, 30L, 10L, 10L, 10L, 20L, null), list(1L, 2L, 4L, 8L, 16L, 32L, 64L, 128L));
      List<List<Object>> groups;
      try (HashAggregateKernel.Aggregation agg =
          backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
        for (int batch = 0; batch < 2; batch++) {
          try (ColumnBatch<DeviceColumn> input = device(program.inputTypes(), fact)) {
            agg.update(program, List.of(t1, t2), input);
          }
        }
        try (ColumnBatch<DeviceColumn> out = agg.finish()) {
          groups = rows(out);
        }
      }
      groups.sort((x, y) -> String.valueOf(x).compareTo(String.valueOf(y)));
      // Rows kept: (1,10,1) cat 100; (2,10,2) cat 200; (3,30,4) cat 100; (4,10,8) cat NULL.
      assertEquals(List.of(list(100, 10L, 4L), list(200, 4L, 2L), list(null, 16L, 2L)), groups);
    }
  }

  // ---- expand ------------------------------------------------------------------------------

  /** Expands and returns every output row, checking each batch's size limit. */
  private List<List<Object>> expand(JoinTable t, ColumnBatch<DeviceColumn> probe,
      boolean leftOuter, int maxRowsPerBatch) {
    int[] keys = new int[t.schema().keyTypes().size()];
    Arrays.setAll(keys, i -> i);
    List<ColumnBatch<DeviceColumn>> batches = backend.hashJoinKernel().expand(t, probe, keys,
        leftOuter, maxRowsPerBatch, backend.deviceMemory(), stream);
    List<List<Object>> all = new ArrayList<>();
    try {
      for (ColumnBatch<DeviceColumn> batch : batches) {
        assertTrue(batch.rowCount() <= maxRowsPerBatch, batch.rowCount() + " rows in a batch");
        all.addAll(rows(batch));
      }
    } finally {
      batches.forEach(ColumnBatch::close);
    }
    return all;
  }

  @Test
  void expandGivesEveryMatchInProbeOrderThenBuildOrder() {
    JoinTableSchema schema = new JoinTableSchema(List.of(INT), List.of(STRING));
    try (JoinTable t = table(schema, List.of(list(1, 2, 1, 3, 1, null),
        list("a", "b", "c", "d", "e", "n")));
        ColumnBatch<DeviceColumn> probe = device(List.of(INT, LONG),
            List.of(list(1, 4, null, 2, 1), list(0L, 1L, 2L, 3L, 4L)))) {
      assertFalse(t.uniqueKeys());
      List<List<Object>> inner = List.of(list(1, 0L, "a"), list(1, 0L, "c"), list(1, 0L, "e"),
          list(2, 3L, "b"), list(1, 4L, "a"), list(1, 4L, "c"), list(1, 4L, "e"));
      List<List<Object>> outer = List.of(list(1, 0L, "a"), list(1, 0L, "c"), list(1, 0L, "e"),
          list(4, 1L, null), list(null, 2L, null), list(2, 3L, "b"), list(1, 4L, "a"),
          list(1, 4L, "c"), list(1, 4L, "e"));
      for (int max : new int[] {1, 3, 4096}) {
        assertEquals(inner, expand(t, probe, false, max), "inner, batches of " + max);
        assertEquals(outer, expand(t, probe, true, max), "left outer, batches of " + max);
      }
    }
  }

  @Test
  void randomJoinsAgreeWithNestedLoops() {
    Random random = new Random(42);
    for (int round = 0; round < 4; round++) {
      int buildRows = round == 0 ? 1 : 50 + random.nextInt(300);
      List<Object> buildKeys = new ArrayList<>();
      List<Object> payload = new ArrayList<>();
      for (int i = 0; i < buildRows; i++) {
        buildKeys.add(random.nextInt(20) == 0 ? null : (long) random.nextInt(buildRows));
        payload.add(random.nextInt(10) == 0 ? null : "p" + i);
      }
      List<Object> probeKeys = new ArrayList<>();
      for (int i = 0; i < 3000; i++) {
        probeKeys.add(random.nextInt(20) == 0 ? null : (long) random.nextInt(buildRows * 2));
      }
      List<List<Object>> inner = new ArrayList<>();
      List<List<Object>> outer = new ArrayList<>();
      List<List<Object>> first = new ArrayList<>();
      for (Object k : probeKeys) {
        List<List<Object>> matches = new ArrayList<>();
        int firstRow = -1;
        for (int b = 0; b < buildRows; b++) {
          if (k != null && k.equals(buildKeys.get(b))) {
            matches.add(list(k, payload.get(b)));
            firstRow = firstRow < 0 ? b : firstRow;
          }
        }
        inner.addAll(matches);
        outer.addAll(matches.isEmpty() ? List.of(list(k, null)) : matches);
        first.add(firstRow < 0 ? list(null, null) : list(firstRow, payload.get(firstRow)));
      }
      JoinTableSchema schema = new JoinTableSchema(List.of(LONG), List.of(STRING));
      try (JoinTable t = table(schema, List.of(buildKeys, payload));
          ColumnBatch<DeviceColumn> probe = device(List.of(LONG), List.of(probeKeys))) {
        int max = 1 + random.nextInt(2000);
        assertEquals(inner, expand(t, probe, false, max), "round " + round);
        assertEquals(outer, expand(t, probe, true, max), "round " + round);
        ProgramBuilder b = new ProgramBuilder(List.of(LONG), false);
        int table = b.table(schema);
        int row = probe(b, table, b.loadColumn(0));
        Program program = b.build(-1, List.of(new Program.Output(row, INT),
            new Program.Output(b.emitNew(Opcode.LOAD_BUILD, table, row, 0), STRING)));
        assertEquals(first, run(program, List.of(t), List.of(probeKeys)), "round " + round);
      }
    }
  }
}
