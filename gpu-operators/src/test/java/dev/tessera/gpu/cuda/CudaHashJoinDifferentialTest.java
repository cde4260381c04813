package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
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
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CUDA hash join against the host reference (HostHashJoin, the host interpreter's PROBE and
 * LOAD_BUILD) on random data: every key type, multi-column keys, NULL keys, repeated keys, empty
 * build and probe sides, semi / anti / outer probes as fused programs, a star join probing three
 * tables then aggregating, and 1:N expansions split across batches. Keys are drawn from small
 * domains so that probes hit, miss and repeat. Device memory must be back in the pools after
 * every test.
 */
@RequiresCuda
class CudaHashJoinDifferentialTest extends CudaVersusHostTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return RuntimeOptions.defaults().withDeviceMemoryCap(4 * GiB).withPinnedMemoryCap(2 * GiB);
  }

  @Override
  protected RuntimeOptions hostOptions() {
    return RuntimeOptions.defaults();
  }

  // ---- data ---------------------------------------------------------------------------------

  /** A key of {@code type} from a domain of {@code domain} values (null: SQL NULL). */
  private static Object key(ColumnType type, int v) {
    return switch (type.id()) {
      case BYTE -> (byte) v;
      case SHORT -> (short) (v * 7 - 300);
      case INT -> v * 1_000_003 - 5;
      case LONG -> (v % 2 == 0 ? 1L : -1L) * (v * 0x1_0000_0001L);
      case DATE -> v - 50;
      case TIMESTAMP -> v * 86_400_000_000L;
      case DECIMAL -> BigDecimal.valueOf(v * 101L - 7, type.scale());
      case STRING -> v % 5 == 0 ? "" : "k" + v + (v % 3 == 0 ? "-grüße" : "");
      default -> throw new IllegalArgumentException(type.toString());
    };
  }

  private static List<Object> keys(ColumnType type, int rows, int domain, double nulls,
      Random random) {
    List<Object> out = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      out.add(random.nextDouble() < nulls ? null : key(type, random.nextInt(domain)));
    }
    return out;
  }

  /** Build keys 0 .. rows - 1 of the domain, each once: a table with unique keys. */
  private static List<Object> uniqueKeys(ColumnType type, int rows) {
    List<Object> out = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      out.add(key(type, i));
    }
    return out;
  }

  private static ColumnType parse(String name) {
    return switch (name) {
      case "BYTE" -> ColumnType.BYTE;
      case "SHORT" -> ColumnType.SHORT;
      case "INT" -> ColumnType.INT;
      case "LONG" -> ColumnType.LONG;
      case "DATE" -> ColumnType.DATE;
      case "TIMESTAMP" -> ColumnType.TIMESTAMP;
      case "DECIMAL" -> ColumnType.decimal(12, 2);
      case "STRING" -> ColumnType.STRING;
      default -> throw new IllegalArgumentException(name);
    };
  }

  // ---- both backends --------------------------------------------------------------------------

  /** One backend's device batch of Java values; the caller closes it. */
  private static ColumnBatch<DeviceColumn> device(Backend backend, GpuStream stream,
      List<ColumnType> types, List<List<Object>> columns, int rows) {
    List<HostColumn> hostColumns = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      hostColumns.add(TestColumns.build(types.get(c), columns.get(c),
          backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> h = new ColumnBatch<>(hostColumns, rows)) {
      ColumnBatch<DeviceColumn> d = ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream);
      stream.synchronize();
      return d;
    }
  }

  private static List<List<Object>> rows(Backend backend, GpuStream stream,
      ColumnBatch<DeviceColumn> batch) {
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

  /** The same work on one backend: tables built from their columns, then {@code work}. */
  private record Side(Backend backend, GpuStream stream) {}

  private interface Work<T> {
    T run(Side side, List<JoinTable> tables);
  }

  private record TableData(JoinTableSchema schema, List<List<Object>> columns, int rows) {}

  /**
   * A table of {@code keys}, one row each, under {@code schema} (a STRING and a LONG payload):
   * random payloads, a tenth of them NULL (seeds {@code seed} and {@code seed + 1}).
   */
  private static TableData withPayloads(JoinTableSchema schema, List<Object> keys, long seed) {
    int rows = keys.size();
    return new TableData(schema, List.of(keys,
        TestColumns.random(ColumnType.STRING, rows, 0.1, seed),
        TestColumns.random(ColumnType.LONG, rows, 0.1, seed + 1)), rows);
  }

  /**
   * {@code table} probed by {@code probe}'s first column (of {@code probeType}) in a semi, an
   * anti, an outer and an inner join: the same rows on CUDA as on the host.
   */
  private void sameForEveryJoinKind(TableData table, ColumnType probeType,
      List<List<Object>> probe, int probeRows) {
    for (String join : List.of("semi", "anti", "outer", "inner")) {
      same(List.of(table), filterProject(probeProgram(probeType, table.schema(), join), probe,
          probeRows));
    }
  }

  private <T> T on(Side side, List<TableData> tables, Work<T> work) {
    List<JoinTable> built = new ArrayList<>();
    try {
      for (TableData t : tables) {
        List<ColumnType> types = new ArrayList<>(t.schema().keyTypes());
        types.addAll(t.schema().payloadTypes());
        try (ColumnBatch<DeviceColumn> build =
            device(side.backend(), side.stream(), types, t.columns(), t.rows())) {
          built.add(side.backend().hashJoinKernel().build(t.schema(), build,
              side.backend().deviceMemory(), side.stream()));
        }
      }
      return work.run(side, built);
    } finally {
      built.forEach(JoinTable::close);
    }
  }

  private <T> void same(List<TableData> tables, Work<T> work) {
    T expected = on(new Side(host, hostStream), tables, work);
    T actual = on(new Side(cuda, cudaStream), tables, work);
    assertEquals(expected, actual);
  }

  /** expand's batches as row lists (batch boundaries included in the comparison). */
  private Work<List<List<List<Object>>>> expand(List<ColumnType> probeTypes,
      List<List<Object>> probeColumns, int probeRows, int[] probeKeys, boolean leftOuter,
      int maxRows) {
    return (side, tables) -> {
      try (ColumnBatch<DeviceColumn> probe =
          device(side.backend(), side.stream(), probeTypes, probeColumns, probeRows)) {
        List<ColumnBatch<DeviceColumn>> out = side.backend().hashJoinKernel().expand(
            tables.get(0), probe, probeKeys, leftOuter, maxRows, side.backend().deviceMemory(),
            side.stream());
        List<List<List<Object>>> batches = new ArrayList<>();
        for (ColumnBatch<DeviceColumn> batch : out) {
          assertTrue(batch.rowCount() <= maxRows && batch.rowCount() > 0, "batch size");
          batches.add(rows(side.backend(), side.stream(), batch));
          batch.close();
        }
        return batches;
      }
    };
  }

  // ---- 1:N expand -----------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"BYTE", "SHORT", "INT", "LONG", "DATE", "TIMESTAMP", "DECIMAL",
      "STRING"})
  void expandMatchesTheHostForEveryKeyType(String name) {
    ColumnType type = parse(name);
    Random random = new Random(name.hashCode());
    int buildRows = 3_000;
    int probeRows = 20_000;
    int domain = name.equals("BYTE") ? 200 : 2_500;
    TableData table = new TableData(
        new JoinTableSchema(List.of(type), List.of(ColumnType.LONG, ColumnType.STRING)),
        List.of(keys(type, buildRows, domain, 0.05, random),
            TestColumns.random(ColumnType.LONG, buildRows, 0.1, 1),
            TestColumns.random(ColumnType.STRING, buildRows, 0.1, 2)),
        buildRows);
    List<ColumnType> probeTypes = List.of(ColumnType.INT, type, ColumnType.STRING);
    List<List<Object>> probe = List.of(TestColumns.random(ColumnType.INT, probeRows, 0.1, 3),
        keys(type, probeRows, domain, 0.05, random),
        TestColumns.random(ColumnType.STRING, probeRows, 0.2, 4));
    for (boolean outer : new boolean[] {false, true}) {
      for (int maxRows : new int[] {1 << 20, 4_099, 1}) {
        if (maxRows == 1 && !name.equals("INT")) {
          continue; // one row a batch: once is enough (it makes tens of thousands of batches)
        }
        same(List.of(table), expand(probeTypes, probe, probeRows, new int[] {1}, outer, maxRows));
      }
    }
    same(List.of(table), (side, tables) -> tables.get(0).uniqueKeys());
  }

  @Test
  void heavilyRepeatedKeysExpandInBuildRowOrderAcrossBatches() {
    // 5,000 build rows over 3 keys: each match expands ~1,700 rows, over many batches.
    Random random = new Random(7);
    int buildRows = 5_000;
    TableData table = new TableData(
        new JoinTableSchema(List.of(ColumnType.INT), List.of(ColumnType.INT)),
        List.of(keys(ColumnType.INT, buildRows, 3, 0.01, random), sequence(buildRows)),
        buildRows);
    List<List<Object>> probe = List.of(keys(ColumnType.INT, 300, 4, 0.1, random));
    same(List.of(table), expand(List.of(ColumnType.INT), probe, 300, new int[] {0}, true,
        10_000));
  }

  @Test
  void multiColumnKeysAndEmptySides() {
    Random random = new Random(11);
    int buildRows = 4_000;
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.INT, ColumnType.STRING),
        List.of(ColumnType.decimal(18, 4)));
    TableData table = new TableData(schema,
        List.of(keys(ColumnType.INT, buildRows, 40, 0.03, random),
            keys(ColumnType.STRING, buildRows, 40, 0.03, random),
            TestColumns.random(ColumnType.decimal(18, 4), buildRows, 0.1, 5)),
        buildRows);
    int probeRows = 10_000;
    List<ColumnType> probeTypes = List.of(ColumnType.STRING, ColumnType.INT);
    List<List<Object>> probe = List.of(keys(ColumnType.STRING, probeRows, 45, 0.03, random),
        keys(ColumnType.INT, probeRows, 45, 0.03, random));
    same(List.of(table), expand(probeTypes, probe, probeRows, new int[] {1, 0}, true, 3_000));
    same(List.of(table), expand(probeTypes, List.of(List.of(), List.of()), 0, new int[] {1, 0},
        true, 3_000));
    TableData empty = new TableData(schema, List.of(List.of(), List.of(), List.of()), 0);
    same(List.of(empty), expand(probeTypes, probe, probeRows, new int[] {1, 0}, false, 3_000));
    same(List.of(empty), expand(probeTypes, probe, probeRows, new int[] {1, 0}, true, 3_000));
    same(List.of(empty), (side, tables) -> tables.get(0).uniqueKeys());
  }

  private static List<Object> sequence(int rows) {
    List<Object> out = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      out.add(i);
    }
    return out;
  }

  // ---- the fused probe ------------------------------------------------------------------------

  /** filter/project of {@code program} over the probe batch, as rows. */
  private Work<List<List<Object>>> filterProject(Program program, List<List<Object>> columns,
      int rows) {
    return (side, tables) -> {
      try (ColumnBatch<DeviceColumn> input =
              device(side.backend(), side.stream(), program.inputTypes(), columns, rows);
          ColumnBatch<DeviceColumn> out = side.backend().programKernel().run(program,
              tables, input, side.backend().deviceMemory(), side.stream())) {
        return rows(side.backend(), side.stream(), out);
      }
    };
  }

  @ParameterizedTest
  @ValueSource(strings = {"INT", "LONG", "DATE", "DECIMAL", "STRING"})
  void semiAntiAndOuterProbesMatchTheHost(String name) {
    ColumnType type = parse(name);
    Random random = new Random(name.hashCode() + 1);
    int buildRows = 1_000;
    JoinTableSchema schema = new JoinTableSchema(List.of(type),
        List.of(ColumnType.STRING, ColumnType.LONG));
    List<Object> buildKeys = uniqueKeys(type, buildRows);
    buildKeys.set(17, null); // a NULL key is kept but never matches
    TableData table = withPayloads(schema, buildKeys, 6);
    int probeRows = 30_000;
    List<List<Object>> probe = List.of(keys(type, probeRows, 1_500, 0.05, random),
        TestColumns.random(ColumnType.INT, probeRows, 0.1, 8));
    sameForEveryJoinKind(table, type, probe, probeRows);
    same(List.of(table), (side, tables) -> tables.get(0).uniqueKeys());
  }

  @Test
  void keysAtTheEndsOfLongProbeTheDirectMapAndTheSlotsAlike() {
    // Dense keys just below Long.MAX_VALUE get a direct map (key - min as an unsigned offset:
    // Long.MIN_VALUE wraps to just past the range); keys spanning all of long do not.
    Random random = new Random(31);
    long[] edges = {Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, Long.MAX_VALUE - 2_000,
        Long.MAX_VALUE - 1_999, Long.MAX_VALUE - 1, Long.MAX_VALUE};
    int buildRows = 2_000;
    List<Object> dense = new ArrayList<>();
    List<Object> repeated = new ArrayList<>();
    List<Object> wide = new ArrayList<>();
    for (int i = 0; i < buildRows; i++) {
      dense.add(Long.MAX_VALUE - i);
      repeated.add(Long.MAX_VALUE - random.nextInt(300));
      wide.add(i < edges.length ? edges[i] : random.nextLong());
    }
    dense.set(5, null);
    repeated.set(9, null);
    int probeRows = 20_000;
    List<Object> probeKeys = new ArrayList<>();
    for (int i = 0; i < probeRows; i++) {
      probeKeys.add(switch (random.nextInt(4)) {
        case 0 -> edges[random.nextInt(edges.length)];
        case 1 -> Long.MAX_VALUE - random.nextInt(2_500);
        case 2 -> random.nextDouble() < 0.2 ? null : (Object) wide.get(random.nextInt(buildRows));
        default -> random.nextLong();
      });
    }
    List<List<Object>> probe = List.of(probeKeys,
        TestColumns.random(ColumnType.INT, probeRows, 0.1, 9));
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.STRING, ColumnType.LONG));
    for (List<Object> keys : List.of(dense, wide)) {
      TableData table = withPayloads(schema, keys, 10);
      sameForEveryJoinKind(table, ColumnType.LONG, probe, probeRows);
    }
    TableData table = withPayloads(schema, repeated, 12);
    same(List.of(table), expand(List.of(ColumnType.LONG, ColumnType.INT), probe, probeRows,
        new int[] {0}, true, 1 << 20));
  }

  @Test
  void longsProbingAMapOfIntKeysFindOnlyTheirOwnValues() {
    // A program may probe a table of INT keys with a LONG (ProgramChecks asks for a number).
    // The generated probe reads a map of 4-byte keys in 32-bit arithmetic (ProgramEmitter
    // DirectMap): a LONG whose low word is a build key, but which is not that key, finds no row.
    Random random = new Random(47);
    int buildRows = 2_000;
    List<Object> dense = new ArrayList<>(); // a direct map, negative keys among them
    for (int i = 0; i < buildRows; i++) {
      dense.add(i == 7 ? null : -1_000 + i);
    }
    long[] edges = {Long.MIN_VALUE, Long.MAX_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE,
        Integer.MIN_VALUE - 1L, Integer.MAX_VALUE + 1L, 1L << 32, -(1L << 32), -1, 0};
    int probeRows = 20_000;
    List<Object> probeKeys = new ArrayList<>();
    for (int i = 0; i < probeRows; i++) {
      long key = -1_200 + random.nextInt(2_400);
      probeKeys.add(switch (random.nextInt(5)) {
        case 0 -> key;
        case 1 -> key + (1L << 32); // the same low word as key
        case 2 -> key - (3L << 32);
        case 3 -> random.nextDouble() < 0.3 ? null : (Object) edges[random.nextInt(edges.length)];
        default -> random.nextLong();
      });
    }
    List<List<Object>> probe = List.of(probeKeys,
        TestColumns.random(ColumnType.INT, probeRows, 0.1, 14));
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.INT),
        List.of(ColumnType.STRING, ColumnType.LONG));
    TableData table = withPayloads(schema, dense, 15);
    sameForEveryJoinKind(table, ColumnType.LONG, probe, probeRows);
  }

  /**
   * Sparse build sides, most of whose probes find no row: 400 keys about 2,000 apart over a span
   * of 800,000 (a direct map with many empty words, and no probe filter), and 3,000 random longs
   * (slots and a probe filter, ProbeFilter, read before the walk). Probes: the build keys, their
   * neighbours, keys inside and just outside the range, NULL and the ends of long; through
   * filter-project joins, and through an aggregate whose rows probe the table.
   */
  @Test
  void sparseBuildSidesAnswerThroughTheirProbeFiltersAsTheHostDoes() {
    Random random = new Random(53);
    int mappedRows = 400;
    List<Object> mapped = new ArrayList<>();
    for (int i = 0; i < mappedRows; i++) {
      mapped.add(1_000L + 2_000L * i + random.nextInt(2_000));
    }
    mapped.set(0, 1_000L);
    mapped.set(mappedRows - 1, 800_999L);
    mapped.set(7, null);
    int hashedRows = 3_000;
    List<Object> hashed = new ArrayList<>();
    for (int i = 0; i < hashedRows; i++) {
      hashed.add(random.nextLong());
    }
    hashed.set(11, null);
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.STRING, ColumnType.LONG));
    long[] edges = {Long.MIN_VALUE, -1, 0, 999, 1_000, 1_001, 800_998, 800_999, 801_000,
        Long.MAX_VALUE};
    int probeRows = 30_000;
    for (List<Object> keys : List.of(mapped, hashed)) {
      int buildRows = keys.size();
      TableData table = withPayloads(schema, keys, 14);
      List<Object> probeKeys = new ArrayList<>();
      for (int i = 0; i < probeRows; i++) {
        Object near = keys.get(random.nextInt(buildRows));
        probeKeys.add(switch (random.nextInt(5)) {
          case 0 -> near;
          case 1 -> near == null ? null : (Object) ((Long) near + (random.nextBoolean() ? 1 : -1));
          case 2 -> 900L + random.nextInt(800_200);
          case 3 -> random.nextInt(10) == 0 ? null : (Object) edges[random.nextInt(edges.length)];
          default -> random.nextLong();
        });
      }
      List<List<Object>> probe = List.of(probeKeys,
          TestColumns.random(ColumnType.INT, probeRows, 0.1, 16));
      sameForEveryJoinKind(table, ColumnType.LONG, probe, probeRows);
      same(List.of(table), sumByPayload(schema, probe, probeRows));
      long filter = on(new Side(cuda, cudaStream), List.of(table),
          (side, tables) -> CudaJoinTable.of(tables.get(0)).viewWord(CudaJoinTable.VIEW_FILTER));
      assertEquals(keys == hashed, filter != 0, "a probe filter where the table has no map");
    }
  }

  /**
   * Build sides whose rows hold the keys min, min + 1, ... in order (from 0, from 1,000, and up
   * to Long.MAX_VALUE) have a direct map that is the identity, which generated probes do not
   * read; the same keys with one NULL, one repeated, one missing (a gap) or the rows shuffled do
   * not. Probes: keys in the range, just outside, NULL and the ends of long; through
   * filter-project joins and an aggregate.
   */
  @Test
  void directMapsThatAreTheIdentityAnswerWithoutBeingRead() {
    Random random = new Random(59);
    int buildRows = 3_000;
    List<Object> fromZero = new ArrayList<>();
    List<Object> fromThousand = new ArrayList<>();
    List<Object> toMax = new ArrayList<>();
    for (int i = 0; i < buildRows; i++) {
      fromZero.add((long) i);
      fromThousand.add(1_000L + i);
      toMax.add(Long.MAX_VALUE - buildRows + 1 + i);
    }
    List<Object> withNull = new ArrayList<>(fromThousand);
    withNull.set(1_234, null);
    List<Object> repeated = new ArrayList<>(fromThousand);
    repeated.set(1_234, 1_233L);
    List<Object> gap = new ArrayList<>(fromThousand);
    gap.set(buildRows - 1, 1_000L + buildRows);
    List<Object> shuffled = new ArrayList<>(fromThousand);
    java.util.Collections.swap(shuffled, 10, 2_000);
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.STRING, ColumnType.LONG));
    int probeRows = 20_000;
    List<Object> probeKeys = new ArrayList<>();
    for (int i = 0; i < probeRows; i++) {
      probeKeys.add(switch (random.nextInt(6)) {
        case 0 -> (long) random.nextInt(buildRows + 10) - 5;
        case 1 -> 995L + random.nextInt(buildRows + 10);
        case 2 -> Long.MAX_VALUE - random.nextInt(buildRows + 5);
        case 3 -> null;
        case 4 -> random.nextBoolean() ? Long.MIN_VALUE : Long.MIN_VALUE + 1;
        default -> random.nextLong();
      });
    }
    List<List<Object>> probe = List.of(probeKeys,
        TestColumns.random(ColumnType.INT, probeRows, 0.1, 17));
    for (List<Object> keys : List.of(fromZero, fromThousand, toMax, withNull, repeated, gap,
        shuffled)) {
      TableData table = withPayloads(schema, keys, 18);
      if (keys != repeated) { // the fused probe needs unique keys
        sameForEveryJoinKind(table, ColumnType.LONG, probe, probeRows);
        same(List.of(table), sumByPayload(schema, probe, probeRows));
      }
      long identity = on(new Side(cuda, cudaStream), List.of(table), (side, tables) ->
          CudaJoinTable.of(tables.get(0)).viewWord(CudaJoinTable.VIEW_DIRECT_IDENTITY));
      boolean inOrder = keys == fromZero || keys == fromThousand || keys == toMax;
      assertEquals(inOrder ? 1 : 0, identity, "the map is the identity");
    }
    TableData empty = new TableData(schema, List.of(List.of(), List.of(), List.of()), 0);
    assertEquals(0L, (long) on(new Side(cuda, cudaStream), List.of(empty), (side, tables) ->
        CudaJoinTable.of(tables.get(0)).viewWord(CudaJoinTable.VIEW_DIRECT_IDENTITY)),
        "an empty table has no map to be the identity");
  }

  /**
   * Probes table 0 by input column 0 and sums input column 1 and counts the rows that found a
   * build row, grouped by the build row's LONG payload (payload 1).
   */
  private Work<List<List<Object>>> sumByPayload(JoinTableSchema schema,
      List<List<Object>> columns, int rows) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT), false);
    int t = b.table(schema);
    int row = b.emitNew(Opcode.PROBE, t, b.constant(b.loadColumn(0)), 1);
    int group = b.emitNew(Opcode.LOAD_BUILD, t, row, 1);
    Program program = b.build(b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0),
        List.of(new Program.Output(group, ColumnType.LONG),
            new Program.Output(b.loadColumn(1), ColumnType.INT)));
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.LONG, ColumnType.INT), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
            new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG)), false);
    return aggregated(program, spec, columns, rows);
  }

  /** The groups (sorted by their text) of {@code spec} over {@code program}'s rows. */
  private Work<List<List<Object>>> aggregated(Program program, AggregateSpec spec,
      List<List<Object>> columns, int rows) {
    return (side, tables) -> {
      try (HashAggregateKernel.Aggregation agg = side.backend().hashAggregateKernel()
              .open(spec, side.backend().deviceMemory(), side.stream());
          ColumnBatch<DeviceColumn> input = device(side.backend(), side.stream(),
              program.inputTypes(), columns, rows)) {
        agg.update(program, tables, input);
        try (ColumnBatch<DeviceColumn> out = agg.finish()) {
          List<List<Object>> groups = new ArrayList<>(rows(side.backend(), side.stream(), out));
          groups.sort(Comparator.comparing((Function<List<Object>, String>) Object::toString));
          return groups;
        }
      }
    };
  }

  /**
   * Aggregates over a probe of a table that has a probe filter (hashed keys: no direct map),
   * grouped by two keys and by none: where the filter needs the probe's row (an inner join's
   * IS_NOT_NULL; a payload compared, ANDed with a comparison of a fact column), the generated
   * kernels queue the rows whose keys' bit is set for the probe's walk
   * (ProgramEmitter.splitAtFilteredProbe); where it does not (IS_NULL, an anti join; the
   * payload's comparison ORed with the fact column's) they do not. Probe keys: the table's
   * keys, their neighbours, NULL, the ends of long and random ones. Every answer is the host's.
   */
  @Test
  void aggregatesOverFilteredProbesAnswerAsTheHostDoes() {
    Random random = new Random(61);
    int buildRows = 3_000;
    List<Object> keys = new ArrayList<>();
    for (int i = 0; i < buildRows; i++) {
      keys.add(random.nextLong());
    }
    keys.set(17, null);
    keys.set(18, 0L);
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.LONG, ColumnType.INT));
    List<Object> groups = new ArrayList<>();
    for (int i = 0; i < buildRows; i++) {
      groups.add(i % 97 == 0 ? null : (Object) (long) random.nextInt(40));
    }
    TableData table = new TableData(schema, List.of(keys, groups,
        TestColumns.random(ColumnType.INT, buildRows, 0.1, 62)), buildRows);
    int probeRows = 50_000;
    List<Object> probeKeys = new ArrayList<>();
    for (int i = 0; i < probeRows; i++) {
      Object near = keys.get(random.nextInt(buildRows));
      probeKeys.add(switch (random.nextInt(8)) {
        case 0 -> near;
        case 1 -> near == null ? null : (Object) ((Long) near + 1);
        case 2 -> random.nextInt(10) == 0 ? null
            : (Object) (random.nextBoolean() ? Long.MIN_VALUE : Long.MAX_VALUE);
        case 3 -> 0L;
        default -> random.nextLong();
      });
    }
    List<List<Object>> probe = List.of(probeKeys,
        TestColumns.random(ColumnType.INT, probeRows, 0.1, 63),
        TestColumns.random(ColumnType.LONG, probeRows, 0.1, 64));
    for (String filter : List.of("inner", "payload and fact", "anti", "payload or fact")) {
      for (int groupKeys : new int[] {2, 0}) {
        same(List.of(table), aggregated(filteredProbeProgram(schema, filter, groupKeys > 0),
            new AggregateSpec(groupKeys > 0
                ? List.of(ColumnType.LONG, ColumnType.INT, ColumnType.LONG)
                : List.of(ColumnType.LONG), groupKeys,
                List.of(new AggregateFunction(Kind.SUM, groupKeys, ColumnType.LONG),
                    new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG)), false),
            probe, probeRows));
      }
    }
    long bits = on(new Side(cuda, cudaStream), List.of(table),
        (side, tables) -> CudaJoinTable.of(tables.get(0)).viewWord(CudaJoinTable.VIEW_FILTER));
    assertTrue(bits != 0, "the table has a probe filter");
  }

  /**
   * Over (key LONG, x INT, v LONG), probing table 0 by key: the filter {@code filter} ("inner":
   * the row IS NOT NULL; "payload and fact": payload 1 > 0 AND x >= 0; "anti": the row IS NULL;
   * "payload or fact": payload 1 > 0 OR x >= 0), the outputs (payload 0, x, v) with {@code
   * grouped}, else v alone.
   */
  private static Program filteredProbeProgram(JoinTableSchema schema, String filter,
      boolean grouped) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.INT,
        ColumnType.LONG), false);
    int t = b.table(schema);
    int row = b.emitNew(Opcode.PROBE, t, b.constant(b.loadColumn(0)), 1);
    int group = b.emitNew(Opcode.LOAD_BUILD, t, row, 0);
    int x = b.loadColumn(1);
    int payloadPositive = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.LOAD_BUILD, t, row, 1),
        b.loadConstant(0), Comparison.GT.code());
    int xNotNegative = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(0), Comparison.GE.code());
    int keep = switch (filter) {
      case "inner" -> b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
      case "payload and fact" -> b.emitNew(Opcode.AND, payloadPositive, xNotNegative, 0);
      case "anti" -> b.emitNew(Opcode.IS_NULL, row, 0, 0);
      default -> b.emitNew(Opcode.OR, payloadPositive, xNotNegative, 0);
    };
    Program.Output v = new Program.Output(b.loadColumn(2), ColumnType.LONG);
    return b.build(keep, grouped ? List.of(new Program.Output(group, ColumnType.LONG),
        new Program.Output(x, ColumnType.INT), v) : List.of(v));
  }

  /** Probes table 0 by input column 0; semi/anti filter on a match, outer/inner load payloads. */
  private static Program probeProgram(ColumnType keyType, JoinTableSchema schema, String join) {
    ProgramBuilder b = new ProgramBuilder(List.of(keyType, ColumnType.INT), false);
    int t = b.table(schema);
    int key = b.loadColumn(0);
    int other = b.loadColumn(1);
    int row = b.emitNew(Opcode.PROBE, t, b.constant(key), 1);
    List<Program.Output> outputs = new ArrayList<>(List.of(
        new Program.Output(key, keyType), new Program.Output(other, ColumnType.INT)));
    int filter = -1;
    switch (join) {
      case "semi" -> filter = b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
      case "anti" -> filter = b.emitNew(Opcode.IS_NULL, row, 0, 0);
      default -> {
        int s = b.emitNew(Opcode.LOAD_BUILD, t, row, 0);
        int l = b.emitNew(Opcode.LOAD_BUILD, t, row, 1);
        outputs.add(new Program.Output(s, ColumnType.STRING));
        outputs.add(new Program.Output(l, ColumnType.LONG));
        if (join.equals("inner")) {
          filter = b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
        }
      }
    }
    return b.build(filter, outputs);
  }

  // ---- a star join, fused with the aggregate ------------------------------------------------

  @Test
  void starJoinProbingThreeTablesThenAggregatingMatchesTheHost() {
    // SSB-like: a fact (date key, customer key, part key, revenue) probes three dimensions and
    // groups by (year from the date dimension, customer nation string) summing revenue.
    Random random = new Random(21);
    JoinTableSchema dates = new JoinTableSchema(List.of(ColumnType.INT), List.of(ColumnType.INT));
    JoinTableSchema customers = new JoinTableSchema(List.of(ColumnType.INT),
        List.of(ColumnType.STRING));
    JoinTableSchema parts = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.STRING));
    int dateRows = 2_556;
    int customerRows = 3_000;
    int partRows = 2_000;
    List<Object> years = new ArrayList<>();
    for (int d = 0; d < dateRows; d++) {
      years.add(1992 + d / 365);
    }
    List<Object> nations = new ArrayList<>();
    for (int c = 0; c < customerRows; c++) {
      nations.add("NATION" + (c % 25));
    }
    List<Object> brands = new ArrayList<>();
    for (int p = 0; p < partRows; p++) {
      brands.add("MFGR#" + (p % 40 == 0 ? "12" : Integer.toString(p % 40)));
    }
    List<TableData> tables = List.of(
        new TableData(dates, List.of(sequenceFrom(19920101, dateRows), years), dateRows),
        new TableData(customers, List.of(sequence(customerRows), nations), customerRows),
        new TableData(parts, List.of(longs(partRows), brands), partRows));

    int factRows = 200_000;
    List<Object> factDate = new ArrayList<>();
    List<Object> factCustomer = new ArrayList<>();
    List<Object> factPart = new ArrayList<>();
    for (int i = 0; i < factRows; i++) {
      factDate.add(19920101 + random.nextInt(dateRows + 100)); // some miss
      factCustomer.add(random.nextDouble() < 0.02 ? null : random.nextInt(customerRows));
      factPart.add((long) random.nextInt(partRows + 50));
    }
    List<List<Object>> fact = List.of(factDate, factCustomer, factPart,
        TestColumns.random(ColumnType.LONG, factRows, 0.05, 9).stream()
            .map(v -> v == null ? null : (Object) (((Long) v) % 1_000_000)).toList());

    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.INT, ColumnType.INT,
        ColumnType.LONG, ColumnType.LONG), false);
    int td = b.table(dates);
    int tc = b.table(customers);
    int tp = b.table(parts);
    int dateRow = b.emitNew(Opcode.PROBE, td, b.constant(b.loadColumn(0)), 1);
    int customerRow = b.emitNew(Opcode.PROBE, tc, b.constant(b.loadColumn(1)), 1);
    int partRow = b.emitNew(Opcode.PROBE, tp, b.constant(b.loadColumn(2)), 1);
    int revenue = b.loadColumn(3);
    int year = b.emitNew(Opcode.LOAD_BUILD, td, dateRow, 0);
    int nation = b.emitNew(Opcode.LOAD_BUILD, tc, customerRow, 0);
    int brand = b.emitNew(Opcode.LOAD_BUILD, tp, partRow, 0);
    int prefix = b.loadString("MFGR#1".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    int brandOk = b.emitNew(Opcode.STARTS_WITH, brand, prefix, 0);
    int joined = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, dateRow, 0, 0),
        b.emitNew(Opcode.IS_NOT_NULL, customerRow, 0, 0), 0);
    int filter = b.emitNew(Opcode.AND, joined, brandOk, 0);
    Program program = b.build(filter, List.of(new Program.Output(year, ColumnType.INT),
        new Program.Output(nation, ColumnType.STRING),
        new Program.Output(revenue, ColumnType.LONG)));
    AggregateSpec spec = new AggregateSpec(
        List.of(ColumnType.INT, ColumnType.STRING, ColumnType.LONG), 2,
        List.of(new AggregateFunction(Kind.SUM, 2, ColumnType.LONG),
            new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG)), false);

    Work<List<List<Object>>> starJoin = (side, built) -> {
      HashAggregateKernel kernel = side.backend().hashAggregateKernel();
      try (HashAggregateKernel.Aggregation agg =
          kernel.open(spec, side.backend().deviceMemory(), side.stream())) {
        int batch = 70_000; // several batches into one aggregation
        for (int from = 0; from < factRows; from += batch) {
          int to = Math.min(factRows, from + batch);
          List<List<Object>> slice = new ArrayList<>();
          for (List<Object> column : fact) {
            slice.add(column.subList(from, to));
          }
          try (ColumnBatch<DeviceColumn> input = device(side.backend(), side.stream(),
              program.inputTypes(), slice, to - from)) {
            agg.update(program, built, input);
          }
        }
        try (ColumnBatch<DeviceColumn> out = agg.finish()) {
          List<List<Object>> rows = new ArrayList<>(rows(side.backend(), side.stream(), out));
          rows.sort(Comparator.comparing((Function<List<Object>, String>) Object::toString));
          return rows;
        }
      }
    };
    same(tables, starJoin);
    List<List<Object>> groups = on(new Side(cuda, cudaStream), tables, starJoin);
    assertFalse(groups.isEmpty(), "the star join keeps some rows");
  }

  /**
   * WHERE flag = 1 AND value % divisor >= 0 AND name IS NOT NULL AND name STARTS WITH 'T', ANSI,
   * the first three conjuncts a probe of a table each: the generated kernels probe a right
   * conjunct's table only for rows whose left conjuncts have decided nothing (Crystal's selection
   * flags), and skip the last conjunct, which reads the third's name, there too. The conjuncts
   * are ANDs, or ({@code selects}) ChainCompiler's SELECT(keep, condition, false), as consecutive
   * Spark filters compile. A divisor is 0 exactly where the flag is 0: Spark does not evaluate
   * the remainder there, so no row errs. Where the flag is NULL, AND evaluates the remainder,
   * and a 0 divisor there errs on both sides alike; SELECT drops the row first, so it does not.
   * Without {@code ansi} nothing errs, so the generated ANDs stop where the flag is NULL too
   * (ProgramEmitter.keepOnly), and the rows kept must still be the host's.
   */
  @ParameterizedTest
  @CsvSource({"false, true", "true, true", "false, false"})
  void aConjunctionProbesItsRightOperandOnlyWhereItsLeftHasNotDecidedIt(boolean selects,
      boolean ansi) {
    Random random = new Random(41);
    JoinTableSchema flags = new JoinTableSchema(List.of(ColumnType.INT), List.of(ColumnType.INT));
    JoinTableSchema divisors = new JoinTableSchema(List.of(ColumnType.INT),
        List.of(ColumnType.INT));
    JoinTableSchema names = new JoinTableSchema(List.of(ColumnType.LONG),
        List.of(ColumnType.STRING));
    int keys = 1_000;
    List<Object> flag = new ArrayList<>();
    List<Object> divisor = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      flag.add(k % 3 == 0 ? (Object) 1 : k % 3 == 1 ? (Object) 0 : null);
      divisor.add(k % 3 == 1 ? 0 : 1 + k % 7);
    }
    List<Object> nameKeys = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      nameKeys.add((long) k * 3);
    }
    TableData names3 = new TableData(names, List.of(nameKeys,
        TestColumns.random(ColumnType.STRING, keys, 0.1, 14)), keys);

    int rows = 50_000;
    List<Object> key = new ArrayList<>();
    List<Object> value = new ArrayList<>();
    List<Object> nameKey = new ArrayList<>();
    for (int i = 0; i < rows; i++) {
      key.add(random.nextDouble() < 0.03 ? null : (Object) random.nextInt(keys + 100));
      value.add(random.nextDouble() < 0.05 ? null : (Object) (random.nextInt(2_000) - 1_000));
      nameKey.add(random.nextDouble() < 0.03 ? null : (Object) (long) random.nextInt(3 * keys));
    }
    List<List<Object>> fact = List.of(key, value, nameKey);

    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.INT, ColumnType.INT,
        ColumnType.LONG), ansi);
    int tf = b.table(flags);
    int td = b.table(divisors);
    int tn = b.table(names);
    int flagRow = b.emitNew(Opcode.PROBE, tf, b.constant(b.loadColumn(0)), 1);
    int flagged = b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.LOAD_BUILD, tf, flagRow, 0),
        b.loadConstant(1), Comparison.EQ.code());
    int divisorRow = b.emitNew(Opcode.PROBE, td, b.constant(b.loadColumn(0)), 1);
    int d = b.emitNew(Opcode.LOAD_BUILD, td, divisorRow, 0);
    int remainder = b.emitNew(Opcode.REM_INT, b.loadColumn(1), d, 32);
    int divides = b.emitNew(Opcode.CMP_INT, remainder, b.loadConstant(0), Comparison.GE.code());
    int name = b.emitNew(Opcode.LOAD_BUILD, tn,
        b.emitNew(Opcode.PROBE, tn, b.constant(b.loadColumn(2)), 1), 0);
    int named = b.emitNew(Opcode.IS_NOT_NULL, name, 0, 0);
    // The last conjunct reads the name the one before loaded (unset where that was skipped).
    int startsWithT = b.emitNew(Opcode.STARTS_WITH, name,
        b.loadString("T".getBytes(java.nio.charset.StandardCharsets.UTF_8)), 0);
    int filter = flagged;
    for (int conjunct : new int[] {divides, named, startsWithT}) {
      filter = selects
          ? b.emitNew(Opcode.SELECT, filter, conjunct, b.loadConstant(0))
          : b.emitNew(Opcode.AND, filter, conjunct, 0);
    }
    Program program = b.build(filter, List.of(new Program.Output(b.loadColumn(1), ColumnType.INT),
        new Program.Output(d, ColumnType.INT), new Program.Output(name, ColumnType.STRING)));
    AggregateSpec spec = new AggregateSpec(
        List.of(ColumnType.INT, ColumnType.INT, ColumnType.STRING), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
            new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
            new AggregateFunction(Kind.MAX, 1, ColumnType.INT)), ansi);

    for (boolean errs : new boolean[] {false, true}) {
      List<Object> divisorColumn = new ArrayList<>(divisor);
      if (errs) {
        divisorColumn.set(2, 0); // flag NULL: the remainder is evaluated
      }
      List<TableData> tables = List.of(
          new TableData(flags, List.of(sequence(keys), flag), keys),
          new TableData(divisors, List.of(sequence(keys), divisorColumn), keys), names3);
      List<List<Object>> facts = new ArrayList<>(fact);
      if (errs) {
        List<Object> withTwo = new ArrayList<>(key);
        withTwo.set(rows - 7, 2);
        facts.set(0, withTwo);
      }
      Object projected = outcome(tables, filterProject(program, facts, rows));
      Object aggregated = outcome(tables, (side, built) -> {
        try (HashAggregateKernel.Aggregation agg = side.backend().hashAggregateKernel()
                .open(spec, side.backend().deviceMemory(), side.stream());
            ColumnBatch<DeviceColumn> input = device(side.backend(), side.stream(),
                program.inputTypes(), facts, rows)) {
          agg.update(program, built, input);
          try (ColumnBatch<DeviceColumn> out = agg.finish()) {
            List<List<Object>> groups = new ArrayList<>(rows(side.backend(), side.stream(), out));
            groups.sort(Comparator.comparing((Function<List<Object>, String>) Object::toString));
            return groups;
          }
        }
      });
      boolean raises = errs && !selects && ansi;
      assertEquals(raises, projected.toString().startsWith("error"), projected.toString());
      if (!raises) {
        assertFalse(((List<?>) projected).isEmpty(), "some rows pass all four conjuncts");
      }
      assertEquals(raises, aggregated.toString().startsWith("error"), aggregated.toString());
    }
  }

  /** {@code work}'s result on both sides, or its row error, asserted the same. */
  private <T> Object outcome(List<TableData> tables, Work<T> work) {
    Work<Object> caught = (side, built) -> {
      try {
        return work.run(side, built);
      } catch (RowErrorException e) {
        return "error: " + e.getMessage();
      }
    };
    Object expected = on(new Side(host, hostStream), tables, caught);
    assertEquals(expected, on(new Side(cuda, cudaStream), tables, caught));
    return expected;
  }

  private static List<Object> sequenceFrom(int first, int rows) {
    List<Object> out = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      out.add(first + i);
    }
    return out;
  }

  private static List<Object> longs(int rows) {
    List<Object> out = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      out.add((long) i);
    }
    return out;
  }
}
