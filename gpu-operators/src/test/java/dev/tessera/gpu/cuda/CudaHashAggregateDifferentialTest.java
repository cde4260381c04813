package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

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
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CUDA hash aggregation against the host reference on random data: 3M rows over several
 * batches, 1 to 1,000,000 groups, nulls, LONG/INT/DOUBLE keys and every function kind. Values are
 * chosen so the outcome does not depend on the order rows are added in (no int64 wrap of decimal
 * or ANSI sums midway, no -0.0 next to 0.0 in MIN/MAX).
 */
@RequiresCuda
class CudaHashAggregateDifferentialTest extends CudaVersusHostTest {
  @Override
  protected RuntimeOptions cudaOptions() {
    return RuntimeOptions.defaults().withDeviceMemoryCap(8 * GiB).withPinnedMemoryCap(4 * GiB);
  }

  @Override
  protected RuntimeOptions hostOptions() {
    return RuntimeOptions.defaults().withDeviceMemoryCap(16 * GiB).withPinnedMemoryCap(8 * GiB);
  }

  private static final int ROWS = 3_000_000;
  private static final int BATCHES = 5;

  /** hash_aggregate.cuh kNullKeyHash + kNullKeySalt: the LONG key HashKeys hashes as NULL. */
  private static final long NULL_LIKE_KEY = 0x9e3779b97f4a7c15L + 0x51ed270b27L;
  private static final ColumnType DECIMAL_IN = ColumnType.decimal(15, 2);
  private static final ColumnType DECIMAL_OUT = ColumnType.decimal(16, 2);

  /** Scenario: groups, key layout (0: LONG, 1: INT+DOUBLE, 2: LONG+INT+DOUBLE, 3: none), ansi. */
  @ParameterizedTest
  @ValueSource(strings = {"1:0:false", "10:1:false", "1000:2:true", "100000:0:false",
      "1000000:1:false", "1000000:2:false", "0:3:false", "0:3:true", "777:0:true"})
  void matchesTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int groups = Integer.parseInt(parts[0]);
    int layout = Integer.parseInt(parts[1]);
    boolean ansi = Boolean.parseBoolean(parts[2]);
    List<ColumnType> keyTypes = switch (layout) {
      case 0 -> List.of(ColumnType.LONG);
      case 1 -> List.of(ColumnType.INT, ColumnType.DOUBLE);
      case 2 -> List.of(ColumnType.LONG, ColumnType.INT, ColumnType.DOUBLE);
      default -> List.of();
    };
    // Value columns: INT (small), LONG (full range, wraps: not under ANSI), DOUBLE, DECIMAL, FLOAT.
    List<ColumnType> inputTypes = new ArrayList<>(keyTypes);
    int intCol = inputTypes.size();
    inputTypes.add(ColumnType.INT);
    int longCol = inputTypes.size();
    inputTypes.add(ColumnType.LONG);
    int doubleCol = inputTypes.size();
    inputTypes.add(ColumnType.DOUBLE);
    int decimalCol = inputTypes.size();
    inputTypes.add(DECIMAL_IN);
    int floatCol = inputTypes.size();
    inputTypes.add(ColumnType.FLOAT);
    List<AggregateFunction> functions = new ArrayList<>(List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, intCol, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, intCol, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, intCol, ColumnType.INT),
        new AggregateFunction(Kind.MAX, intCol, ColumnType.INT),
        new AggregateFunction(Kind.MIN, doubleCol, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MAX, doubleCol, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MIN, floatCol, ColumnType.FLOAT),
        new AggregateFunction(Kind.MAX, floatCol, ColumnType.FLOAT),
        new AggregateFunction(Kind.MIN, longCol, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, longCol, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, decimalCol, ColumnType.LONG),
        new AggregateFunction(Kind.SUM_DECIMAL, decimalCol, DECIMAL_OUT)));
    if (!ansi) {
      functions.add(new AggregateFunction(Kind.SUM, longCol, ColumnType.LONG));
    }
    AggregateSpec spec = new AggregateSpec(inputTypes, keyTypes.size(), functions, ansi);
    int rows = layout == 3 && ansi ? 0 : ROWS; // one scenario: a global aggregate of nothing
    assertSameGroups(scenario, spec, groups, rows, true, intCol, longCol, doubleCol, decimalCol,
        floatCol);
  }

  /**
   * A global aggregate of integral inputs only (generated kernels keep its accumulators in
   * registers): counts, exact sums (LONG wrapping, decimals), MIN and MAX of INT and LONG.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aGlobalAggregateOfIntegralInputsMatchesTheHostReference(boolean ansi) {
    List<ColumnType> inputTypes = List.of(ColumnType.INT, ColumnType.LONG, ColumnType.DOUBLE,
        DECIMAL_IN, ColumnType.FLOAT);
    List<AggregateFunction> functions = new ArrayList<>(List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, 0, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 0, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 0, ColumnType.INT),
        new AggregateFunction(Kind.MAX, 0, ColumnType.INT),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM_DECIMAL, 3, DECIMAL_OUT)));
    if (!ansi) {
      functions.add(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG));
    }
    assertSameGroups("global integral, ansi " + ansi,
        new AggregateSpec(inputTypes, 0, functions, ansi), 0, ROWS, true, 0, 1, 2, 3, 4);
  }

  /**
   * Grouped aggregates of few integral functions (those a generated kernel could compile in):
   * one group (every warp's rows share it), a few, and many (rows accumulated on their own, more
   * groups than the per-block table holds: 6,000 a few tables' worth, which generated kernels
   * may slice among blocks, GroupSlices), keys of one and of two columns ("N:0", "N:1"), NULL
   * keys and inputs, and two keys that are never NULL ("N:2": the two-key kernel that slices);
   * sums of LONGs at Long.MIN_VALUE, Long.MAX_VALUE and random, whose carries reach every word
   * of a 128-bit accumulator. Each scenario runs two aggregations whose functions differ only
   * in their kinds, one after the other: they must not share a kernel.
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:0", "7:0", "1000:0", "6000:0", "100000:0", "1000:1", "6000:1",
      "6000:2"})
  void groupedAggregatesOfFewIntegralFunctionsMatchTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int groups = Integer.parseInt(parts[0]);
    List<ColumnType> inputTypes = new ArrayList<>(parts[1].equals("0")
        ? List.of(ColumnType.LONG) : List.of(ColumnType.INT, ColumnType.LONG));
    int keys = inputTypes.size();
    int intCol = keys;
    int longCol = keys + 1;
    int doubleCol = keys + 2;
    int decimalCol = keys + 3;
    int floatCol = keys + 4;
    inputTypes.addAll(List.of(ColumnType.INT, ColumnType.LONG, ColumnType.DOUBLE, DECIMAL_IN,
        ColumnType.FLOAT));
    AggregateSpec sums = new AggregateSpec(inputTypes, keys, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, intCol, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, longCol, ColumnType.LONG),
        new AggregateFunction(Kind.SUM_DECIMAL, decimalCol, DECIMAL_OUT)), false);
    AggregateSpec extremes = new AggregateSpec(inputTypes, keys, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, intCol, ColumnType.INT),
        new AggregateFunction(Kind.MAX, longCol, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, decimalCol, ColumnType.LONG)), false);
    for (AggregateSpec spec : List.of(sums, extremes)) {
      assertSameGroups(scenario + " " + spec.functions(), spec, groups, ROWS,
          !parts[1].equals("2"), intCol, longCol, doubleCol, decimalCol, floatCol);
    }
  }

  /**
   * Feeds the same random batches to both backends and compares their groups; one row in 50 has
   * a NULL (last) key where {@code nullKeys}.
   */
  private void assertSameGroups(String scenario, AggregateSpec spec, int groups, int rows,
      boolean nullKeys, int intCol, int longCol, int doubleCol, int decimalCol, int floatCol) {
    List<ColumnType> inputTypes = spec.inputTypes();
    long seed = scenario.hashCode();

    List<List<Object>> want;
    List<List<Object>> got;
    HashAggregateKernel.Aggregation onHost = host.hashAggregateKernel()
        .open(spec, host.deviceMemory(), hostStream);
    HashAggregateKernel.Aggregation onCuda = cuda.hashAggregateKernel()
        .open(spec, cuda.deviceMemory(), cudaStream);
    try (onHost; onCuda) {
      Random random = new Random(seed);
      int perBatch = (rows + BATCHES - 1) / BATCHES;
      for (int start = 0; start < Math.max(rows, 1); start += Math.max(perBatch, 1)) {
        int n = Math.min(perBatch, rows - start);
        List<List<Object>> columns = batch(inputTypes, spec.keyCount(), groups, n, random,
            nullKeys, intCol, longCol, doubleCol, decimalCol, floatCol);
        feed(host, hostStream, onHost, inputTypes, columns, n);
        feed(cuda, cudaStream, onCuda, inputTypes, columns, n);
        if (n == 0) {
          break;
        }
      }
      want = finish(host, hostStream, onHost);
      got = finish(cuda, cudaStream, onCuda);
    }
    if (!want.equals(got)) {
      StringBuilder message = new StringBuilder("CUDA differs from the host for " + spec
          + " (scenario " + scenario + "): host " + want.size() + " groups, CUDA " + got.size());
      for (int i = 0, shown = 0; i < Math.min(want.size(), got.size()) && shown < 5; i++) {
        if (!want.get(i).equals(got.get(i))) {
          message.append("\n  row ").append(i).append(": host ").append(want.get(i))
              .append(", CUDA ").append(got.get(i));
          shown++;
        }
      }
      System.err.println(message);
      fail(message.toString());
    }
  }

  /** Runs the batches (lists of columns of Java values) through both backends and compares. */
  private void assertSameOnBoth(AggregateSpec spec, List<List<List<Object>>> batches,
      String scenario) {
    List<List<Object>> want = aggregate(host, hostStream, spec, batches);
    List<List<Object>> got = aggregate(cuda, cudaStream, spec, batches);
    assertSameRows(want, got, spec, scenario);
  }

  private static List<List<Object>> aggregate(Backend backend, GpuStream stream,
      AggregateSpec spec, List<List<List<Object>>> batches) {
    try (HashAggregateKernel.Aggregation aggregation =
        backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
      for (List<List<Object>> columns : batches) {
        feed(backend, stream, aggregation, spec.inputTypes(), columns, columns.get(0).size());
      }
      return finish(backend, stream, aggregation);
    }
  }

  private static void assertSameRows(List<List<Object>> want, List<List<Object>> got,
      AggregateSpec spec, String scenario) {
    if (want.equals(got)) {
      return;
    }
    StringBuilder message = new StringBuilder("CUDA differs from the host for " + spec
        + " (scenario " + scenario + "): host " + want.size() + " groups, CUDA " + got.size());
    for (int i = 0, shown = 0; i < Math.min(want.size(), got.size()) && shown < 5; i++) {
      if (!want.get(i).equals(got.get(i))) {
        message.append("\n  row ").append(i).append(": host ").append(want.get(i))
            .append(", CUDA ").append(got.get(i));
        shown++;
      }
    }
    System.err.println(message);
    fail(message.toString());
  }

  /**
   * The extended contract: SUM over whole-number DOUBLEs (beyond 2^63) to DOUBLE and to LONG,
   * SUM over LONG to DOUBLE, zeroWhenEmpty, SUM_DECIMAL overflow (NULL, ANSI or not), MIN and
   * MAX over BOOLEAN. Every fifth group has only NULL inputs. Scenario: groups, ansi.
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:false", "1:true", "37:false", "5000:true", "200000:false"})
  void extendedContractMatchesTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int groups = Integer.parseInt(parts[0]);
    boolean ansi = Boolean.parseBoolean(parts[1]);
    ColumnType decimal = ColumnType.decimal(12, 1);
    List<ColumnType> types = List.of(ColumnType.LONG, ColumnType.DOUBLE, ColumnType.DOUBLE,
        ColumnType.LONG, ColumnType.INT, decimal, ColumnType.BOOLEAN);
    List<AggregateFunction> functions = new ArrayList<>(List.of(
        new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE),
        new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE, true),
        new AggregateFunction(Kind.SUM, 3, ColumnType.DOUBLE),
        new AggregateFunction(Kind.SUM, 4, ColumnType.LONG, true),
        new AggregateFunction(Kind.SUM, 2, ColumnType.LONG), // small: never overflows
        new AggregateFunction(Kind.SUM_DECIMAL, 5, ColumnType.decimal(12, 1)),
        new AggregateFunction(Kind.SUM_DECIMAL, 5, ColumnType.decimal(18, 1), true),
        new AggregateFunction(Kind.MIN, 6, ColumnType.BOOLEAN),
        new AggregateFunction(Kind.MAX, 6, ColumnType.BOOLEAN),
        new AggregateFunction(Kind.COUNT, 6, ColumnType.LONG)));
    if (!ansi) {
      functions.add(new AggregateFunction(Kind.SUM, 1, ColumnType.LONG)); // wraps
    }
    AggregateSpec spec = new AggregateSpec(types, 1, functions, ansi);
    Random random = new Random(scenario.hashCode());
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int b = 0; b < 3; b++) {
      int n = 100_000 + b * 7_777;
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(new ArrayList<>(n));
      }
      for (int r = 0; r < n; r++) {
        int g = random.nextInt(groups);
        boolean empty = g % 5 == 4; // only NULL inputs in this group
        columns.get(0).add((long) g * 1_000_003L);
        // Whole numbers up to about 2^93 (Spark's avg buffers over longs), either sign.
        double big = (double) random.nextLong() * Math.scalb(1.0, random.nextInt(31));
        columns.get(1).add(empty || random.nextInt(9) == 0 ? null : big);
        columns.get(2).add(empty ? null : (double) (random.nextInt(2_000_001) - 1_000_000));
        columns.get(3).add(empty ? null : random.nextLong());
        columns.get(4).add(empty ? null : random.nextInt());
        long unscaled = (random.nextBoolean() ? 1 : -1) * (random.nextInt(4) == 0
            ? 999_999_999_999L - random.nextInt(1000) : random.nextInt(1_000_000));
        columns.get(5).add(empty || random.nextInt(7) == 0 ? null
            : BigDecimal.valueOf(unscaled, decimal.scale()));
        columns.get(6).add(empty || random.nextInt(5) == 0 ? null : random.nextInt(97) == 0);
      }
      batches.add(columns);
    }
    assertSameOnBoth(spec, batches, scenario);
  }

  /**
   * Sums to DOUBLE are exact, then rounded once, half to even: checked against BigInteger (no
   * host reference needed). Each case sums its values in one group and in a global aggregate.
   */
  @ParameterizedTest
  @ValueSource(strings = {"9007199254740992 1", "9007199254740992 3", "-9007199254740992 -1",
      "1.2676506002282294E30 1.2676506002282294E30 1 -1.2676506002282294E30",
      "9.223372036854775807E18 9.223372036854775807E18 9.223372036854775807E18",
      "-4.253529586511731E37 1e20 -1e20 0 -0.0"})
  void doubleSumsAreExactThenRoundedOnce(String values) {
    List<Object> doubles = new ArrayList<>();
    BigInteger exact = BigInteger.ZERO;
    for (String v : values.split(" ")) {
      double d = Double.parseDouble(v);
      doubles.add(d);
      exact = exact.add(new BigDecimal(d).toBigIntegerExact());
    }
    List<Object> keys = new ArrayList<>();
    for (int i = 0; i < doubles.size(); i++) {
      keys.add(7);
    }
    double want = exact.doubleValue();
    for (int keyCount = 0; keyCount <= 1; keyCount++) {
      AggregateSpec spec = new AggregateSpec(List.of(ColumnType.INT, ColumnType.DOUBLE), keyCount,
          List.of(new AggregateFunction(Kind.SUM, 1, ColumnType.DOUBLE)), false);
      List<List<Object>> rows = aggregate(cuda, cudaStream, spec, List.of(List.of(keys, doubles)));
      List<Object> expected = keyCount == 0 ? List.of(want) : List.of(7, want);
      assertEquals(List.of(expected), rows, values + " sums to " + exact);
    }
  }

  /**
   * The fused pipeline: update(program, batch) against the host, which materialises the
   * program's output and aggregates it. The program filters on a > threshold, groups by k and
   * a % 5 (REM_INT) and aggregates a + b (ADD_INT, 32 bits: wraps, or under ANSI raises for the
   * rows where it overflows) and d. Scenario: groups, ansi, overflow (whether some rows overflow:
   * under ANSI, both must raise naming the same first kept row; a filtered-out row's overflow
   * must not count), identity (update(batch) with the identity program instead).
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:false:false", "1:false:true", "100:true:false", "100:true:true",
      "100000:false:true", "3000000:false:false", "50:true:filtered"})
  void fusedPipelineMatchesTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int groups = Integer.parseInt(parts[0]);
    boolean ansi = Boolean.parseBoolean(parts[1]);
    String overflow = parts[2];
    List<ColumnType> inputs = List.of(ColumnType.LONG, ColumnType.INT, ColumnType.INT,
        ColumnType.DOUBLE);
    ProgramBuilder b = new ProgramBuilder(inputs, ansi);
    int k = b.loadColumn(0);
    int a = b.loadColumn(1);
    int bb = b.loadColumn(2);
    int d = b.loadColumn(3);
    int threshold = b.loadConstant(-500_000);
    int keep = b.emitNew(Opcode.CMP_INT, a, threshold, Comparison.GT.code());
    int five = b.loadConstant(5);
    int bucket = b.emitNew(Opcode.REM_INT, a, five, 32);
    int sum = b.emitNew(Opcode.ADD_INT, a, bb, 32);
    Program program = b.build(keep, List.of(new Program.Output(k, ColumnType.LONG),
        new Program.Output(bucket, ColumnType.INT), new Program.Output(sum, ColumnType.INT),
        new Program.Output(d, ColumnType.DOUBLE)));
    AggregateSpec spec = new AggregateSpec(program.outputs().stream().map(Program.Output::type)
        .toList(), 2, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 2, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 2, ColumnType.INT),
        new AggregateFunction(Kind.MAX, 2, ColumnType.INT),
        new AggregateFunction(Kind.COUNT, 3, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 3, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MAX, 3, ColumnType.DOUBLE),
        new AggregateFunction(Kind.SUM, 3, ColumnType.DOUBLE, true)), ansi);
    Random random = new Random(scenario.hashCode());
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 4; batch++) {
      int n = batch == 3 ? 777 : 400_000 + batch;
      List<List<Object>> columns = List.of(new ArrayList<>(), new ArrayList<>(),
          new ArrayList<>(), new ArrayList<>());
      for (int r = 0; r < n; r++) {
        int g = random.nextInt(groups);
        columns.get(0).add(random.nextInt(100) == 0 ? null : (long) g * 31L);
        int av = random.nextInt(2_000_001) - 1_000_000;
        int bv = random.nextInt(2_000_001) - 1_000_000;
        boolean big = batch >= 1 && random.nextInt(50_000) == 0;
        if (big && overflow.equals("true")) {
          av = Integer.MAX_VALUE - random.nextInt(10); // kept, and a + b overflows if b > 10
          bv = 1_000_000;
        } else if (big && overflow.equals("filtered")) {
          av = Integer.MIN_VALUE + random.nextInt(10); // filtered out; a + b overflows
          bv = -1_000_000;
        }
        columns.get(1).add(random.nextInt(30) == 0 ? null : av);
        columns.get(2).add(random.nextInt(30) == 0 ? null : bv);
        columns.get(3).add(random.nextInt(10) == 0 ? null
            : (double) (random.nextInt(2001) - 1000));
      }
      batches.add(columns);
    }
    List<List<Object>> want = aggregateWithProgram(host, hostStream, spec, program, batches);
    List<List<Object>> got = aggregateWithProgram(cuda, cudaStream, spec, program, batches);
    assertSameRows(want, got, spec, scenario);
  }

  /** update(batch) goes through the same fused kernel as update(identity program, batch). */
  @ParameterizedTest
  @ValueSource(ints = {1, 1000, 300_000})
  void updateOfABatchEqualsTheIdentityProgram(int groups) {
    List<ColumnType> types = List.of(ColumnType.INT, ColumnType.LONG, ColumnType.SHORT);
    AggregateSpec spec = new AggregateSpec(types, 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 2, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MIN, 2, ColumnType.SHORT),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
    Random random = new Random(groups);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 3; batch++) {
      List<List<Object>> columns = List.of(new ArrayList<>(), new ArrayList<>(),
          new ArrayList<>());
      for (int r = 0; r < 500_000; r++) {
        columns.get(0).add(random.nextInt(40) == 0 ? null : random.nextInt(groups));
        columns.get(1).add(random.nextInt(9) == 0 ? null : random.nextLong());
        columns.get(2).add(random.nextInt(9) == 0 ? null : (short) random.nextInt());
      }
      batches.add(columns);
    }
    Program identity = ProgramBuilder.identity(types, false);
    List<List<Object>> viaProgram = aggregateWithProgram(cuda, cudaStream, spec, identity,
        batches);
    assertSameRows(aggregate(host, hostStream, spec, batches), viaProgram, spec, "identity");
    assertSameRows(viaProgram, aggregate(cuda, cudaStream, spec, batches), spec, "batch");
  }

  /**
   * String keys: hashed by their UTF-8 bytes, compared byte by byte, copied into the device key
   * heap (which grows across batches). NULL groups as one key, the empty string is not NULL.
   * Scenario: distinct strings, the longest string's length, key layout (0: STRING; 1: STRING,
   * INT; 2: INT, STRING, STRING, LONG), and optionally the first batch's rows. Generated, these
   * kernels (no filter) run one block a multiprocessor with a table of 2,048 entries
   * (AggregateUpdateGenerator.fillsMultiprocessor): batches of about 250,000 rows give each
   * block at most one tile of 4,096 rows, 1.5 million rows several on an H100 or H200, with
   * fewer groups than entries (1,000) or more (20,000). (A filtered kernel's launch of one tile
   * a block, without its table: programMadeStringKeysMatchTheHostReference.)
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:0:0", "3:5:0", "1000:20:0", "200000:12:0", "50:5000:0",
      "2000:64:1", "300:3:2", "100000:40:2", "1000:20:0:1500000", "300:3:2:1500000",
      "20000:12:0:1500000"})
  void stringKeysMatchTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int distinct = Integer.parseInt(parts[0]);
    int longest = Integer.parseInt(parts[1]);
    int layout = Integer.parseInt(parts[2]);
    int firstBatchRows = parts.length > 3 ? Integer.parseInt(parts[3]) : -1;
    List<ColumnType> keyTypes = switch (layout) {
      case 0 -> List.of(ColumnType.STRING);
      case 1 -> List.of(ColumnType.STRING, ColumnType.INT);
      default -> List.of(ColumnType.INT, ColumnType.STRING, ColumnType.STRING, ColumnType.LONG);
    };
    List<ColumnType> types = new ArrayList<>(keyTypes);
    int valueCol = types.size();
    types.add(ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, keyTypes.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, valueCol, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, valueCol, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, valueCol, ColumnType.LONG)), false);
    Random random = new Random(scenario.hashCode());
    String[] pool = new String[distinct];
    for (int i = 0; i < distinct; i++) {
      pool[i] = randomString(random, i, longest);
    }
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 4; batch++) {
      int n = batch == 0 && firstBatchRows >= 0 ? firstBatchRows
          : longest >= 1000 ? 20_000 : 250_000 + batch * 13;
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(new ArrayList<>(n));
      }
      for (int r = 0; r < n; r++) {
        // Later batches reach further into the pool: new groups in every batch (heap growth).
        int s = random.nextInt(Math.max(1, distinct * (batch + 1) / 4));
        for (int k = 0; k < keyTypes.size(); k++) {
          Object key = switch (keyTypes.get(k).id()) {
            case STRING -> random.nextInt(60) == 0 ? null
                : k == keyTypes.size() - 2 && layout == 2 ? pool[(s * 7 + 1) % distinct]
                : pool[s];
            case INT -> random.nextInt(60) == 0 ? null : s % 3;
            default -> (long) (s % 2);
          };
          columns.get(k).add(key);
        }
        columns.get(valueCol).add(random.nextInt(8) == 0 ? null
            : (long) random.nextInt(2_000_001) - 1_000_000);
      }
      batches.add(columns);
    }
    assertSameOnBoth(spec, batches, scenario);
  }

  /**
   * One string key whose rows come in runs of the same key (sorted or clustered data), where a
   * generated kernel compares a long string with its lane's last one (GroupLookup.recallLong):
   * strings of 17 and 24 bytes that differ only in their last byte, or only in their first,
   * beside short ones, the empty string and NULL, in runs of 1 to {@code longestRun} rows.
   */
  @ParameterizedTest
  @ValueSource(ints = {1, 40, 3000})
  void stringKeysInRunsMatchTheHostReference(int longestRun) {
    List<ColumnType> types = List.of(ColumnType.STRING, ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG)), false);
    List<String> pool = new ArrayList<>(List.of("", "a", "seven77", "eight888"));
    for (int length : new int[] {17, 24}) {
      String middle = "m".repeat(length - 2);
      for (char c : new char[] {'x', 'y', 'z'}) {
        pool.add("k" + middle + c);
        pool.add(c + middle + "k");
      }
    }
    pool.add(null);
    Random random = new Random(longestRun);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 4; batch++) {
      int n = 250_000 + batch * 13;
      List<Object> keys = new ArrayList<>(n);
      List<Object> values = new ArrayList<>(n);
      while (keys.size() < n) {
        String key = pool.get(random.nextInt(pool.size()));
        for (int run = 1 + random.nextInt(longestRun); run > 0 && keys.size() < n; run--) {
          keys.add(key);
          values.add((long) random.nextInt(2_000_001) - 1_000_000);
        }
      }
      batches.add(List.of(keys, values));
    }
    assertSameOnBoth(spec, batches, "string keys in runs of up to " + longestRun);
  }

  /** A string for pool index i: "" for 0, else up to maxLength bytes, some non-ASCII. */
  private static String randomString(Random random, int i, int maxLength) {
    if (i == 0 || maxLength == 0) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    b.append(i); // distinct by construction
    int length = random.nextInt(maxLength + 1);
    while (b.length() < length) {
      b.append(random.nextInt(7) == 0 ? "ü" : String.valueOf((char) ('a' + random.nextInt(26))));
    }
    return b.toString();
  }

  /**
   * String keys made by the program (string-pool constants through COALESCE, with a filter):
   * the key heap is bounded by the constants too, and with two keys each row may copy one.
   * Generated, its batches of 100,000 rows give blocks of 128 threads one 512-row tile each,
   * launched without the per-block table (CudaHashAggregate's updateShape).
   */
  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void programMadeStringKeysMatchTheHostReference(int keyCount) {
    List<ColumnType> inputs = List.of(ColumnType.STRING, ColumnType.INT);
    ProgramBuilder b = new ProgramBuilder(inputs, false);
    int s = b.loadColumn(0);
    int i = b.loadColumn(1);
    int fallback = b.loadString("no name, a constant of the string pool".getBytes(
        java.nio.charset.StandardCharsets.UTF_8));
    int name = b.emitNew(Opcode.COALESCE, s, fallback, 0);
    int zero = b.loadConstant(0);
    int keep = b.emitNew(Opcode.CMP_INT, i, zero, Comparison.GE.code());
    List<Program.Output> outputs = new ArrayList<>();
    outputs.add(new Program.Output(name, ColumnType.STRING));
    if (keyCount == 2) {
      outputs.add(new Program.Output(i, ColumnType.INT));
    }
    outputs.add(new Program.Output(i, ColumnType.INT));
    Program program = b.build(keep, outputs);
    AggregateSpec spec = new AggregateSpec(outputs.stream().map(Program.Output::type).toList(),
        keyCount, List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, keyCount, ColumnType.LONG)), false);
    Random random = new Random(keyCount);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 3; batch++) {
      List<List<Object>> columns = List.of(new ArrayList<>(), new ArrayList<>());
      for (int r = 0; r < 100_000; r++) {
        columns.get(0).add(random.nextInt(3) == 0 ? null : "s" + random.nextInt(500));
        columns.get(1).add(random.nextInt(20_000) - 1000);
      }
      batches.add(columns);
    }
    assertSameRows(aggregateWithProgram(host, hostStream, spec, program, batches),
        aggregateWithProgram(cuda, cudaStream, spec, program, batches), spec,
        "program-made string keys, " + keyCount + " keys");
  }

  /**
   * Batches of several rounds of the launch's tiles (as many as the multiprocessors hold at
   * once), the last round partial, behind a filter: aggregates by two INT keys (the kept rows
   * queued for the update), by one (the per-block table found by key, blocks as large as
   * registers allow) and of none (accumulators in registers), whose tile loops and item checks
   * count rows in 32 bits. The sizes are SSB SF10's batch and one just past a round of 132
   * multiprocessors' 9 blocks of 512-row tiles; the keys repeat, the values have NULLs.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 1, 0})
  void batchesOfSeveralRoundsMatchTheHostReference(int keyCount) {
    List<ColumnType> inputs = List.of(ColumnType.INT, ColumnType.INT, ColumnType.INT);
    ProgramBuilder b = new ProgramBuilder(inputs, false);
    int value = b.loadColumn(2);
    int keep = b.emitNew(Opcode.CMP_INT, value, b.loadConstant(-500_000), Comparison.GT.code());
    List<Program.Output> outputs = new ArrayList<>();
    for (int k = 0; k < keyCount; k++) {
      outputs.add(new Program.Output(b.loadColumn(k), ColumnType.INT));
    }
    outputs.add(new Program.Output(value, ColumnType.INT));
    Program program = b.build(keep, outputs);
    AggregateSpec spec = new AggregateSpec(outputs.stream().map(Program.Output::type).toList(),
        keyCount, List.of(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, keyCount, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, keyCount, ColumnType.INT),
        new AggregateFunction(Kind.MAX, keyCount, ColumnType.INT)), false);
    Random random = new Random(keyCount);
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int n : new int[] {3_749_128, 608_257}) {
      List<List<Object>> columns =
          List.of(new ArrayList<>(n), new ArrayList<>(n), new ArrayList<>(n));
      for (int r = 0; r < n; r++) {
        columns.get(0).add(random.nextInt(1000));
        columns.get(1).add(random.nextInt(7));
        columns.get(2).add(random.nextInt(10) == 0 ? null : random.nextInt(2_000_001) - 1_000_000);
      }
      batches.add(columns);
    }
    assertSameRows(aggregateWithProgram(host, hostStream, spec, program, batches),
        aggregateWithProgram(cuda, cudaStream, spec, program, batches), spec,
        "several rounds, " + keyCount + " keys");
  }

  /**
   * A lookup that sees a slot's group before its hash (the inserting thread writes the hash
   * first and publishes the group after a fence, but a relaxed reader may see the group first:
   * hash_aggregate.cuh Slot) finds the group by its keys, never inserts it again. Between the
   * two batches every slot's hash is made kUnknownHash; the second batch repeats the first's
   * groups (most of its rows miss a block's table: 50,000 groups) and adds new ones. Scenario:
   * the keys (one LONG, decided by its hash where the hash is known; one nullable LONG, among
   * them NULL and the value HashKeys hashes as NULL; two INTs; a STRING).
   */
  @ParameterizedTest
  @ValueSource(strings = {"long", "nullable long", "two ints", "string"})
  void groupsWhoseSlotsHashIsNotYetSeenAreFoundByTheirKeys(String scenario) {
    List<ColumnType> keyTypes = switch (scenario) {
      case "two ints" -> List.of(ColumnType.INT, ColumnType.INT);
      case "string" -> List.of(ColumnType.STRING);
      default -> List.of(ColumnType.LONG);
    };
    List<ColumnType> types = new ArrayList<>(keyTypes);
    types.add(ColumnType.LONG);
    int value = keyTypes.size();
    AggregateSpec spec = new AggregateSpec(types, keyTypes.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, value, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, value, ColumnType.LONG)), false);
    Random random = new Random(scenario.hashCode());
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int groups : new int[] {50_000, 60_000}) {
      int n = 400_000;
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(new ArrayList<>(n));
      }
      for (int r = 0; r < n; r++) {
        int g = r < groups ? r : random.nextInt(groups);
        boolean nullKey = scenario.equals("nullable long") && g % 1000 == 7;
        switch (scenario) {
          case "two ints" -> {
            columns.get(0).add(g / 100);
            columns.get(1).add(g % 100);
          }
          case "string" -> columns.get(0).add("key-" + g);
          // g = 8: the value HashKeys hashes as it hashes NULL (kNullKeyHash + kNullKeySalt):
          // its group and NULL's have one hash, which must not make them one group.
          default -> columns.get(0).add(nullKey ? null
              : g == 8 ? NULL_LIKE_KEY : (long) g * 0x9E3779B97L);
        }
        columns.get(value).add((long) random.nextInt(2_000_001) - 1_000_000);
      }
      batches.add(columns);
    }
    List<List<Object>> want = aggregate(host, hostStream, spec, batches);
    List<List<Object>> got;
    try (HashAggregateKernel.Aggregation aggregation =
        cuda.hashAggregateKernel().open(spec, cuda.deviceMemory(), cudaStream)) {
      feed(cuda, cudaStream, aggregation, types, batches.get(0), batches.get(0).get(0).size());
      CudaHashAggregate.forgetSlotHashes(aggregation);
      feed(cuda, cudaStream, aggregation, types, batches.get(1), batches.get(1).get(0).size());
      got = finish(cuda, cudaStream, aggregation);
    }
    assertSameRows(want, got, spec, "slots' hashes not yet seen, " + scenario);
  }

  /**
   * The direct group map (Crystal's SSB group-by): small dense integer keys (SSB-like: a year, a
   * nation code) decided from the first batch; later batches leave the range (values below and
   * above it, and NULLs), which must go through the hash table and still group with the rest.
   * Scenario: key layout (0: INT year; 1: INT year, SHORT nation, BOOLEAN; 2: LONG near
   * Long.MIN_VALUE, later also near 0: offsets past 2^63; 3: LONG spread over 10^16, too wide for
   * a map), ansi.
   */
  @ParameterizedTest
  @ValueSource(strings = {"0:false", "1:false", "1:true", "2:false", "3:false"})
  void denseIntegerKeysMatchTheHostReference(String scenario) {
    int layout = Integer.parseInt(scenario.split(":")[0]);
    boolean ansi = Boolean.parseBoolean(scenario.split(":")[1]);
    List<ColumnType> keyTypes = switch (layout) {
      case 0 -> List.of(ColumnType.INT);
      case 1 -> List.of(ColumnType.INT, ColumnType.SHORT, ColumnType.BOOLEAN);
      default -> List.of(ColumnType.LONG);
    };
    List<ColumnType> types = new ArrayList<>(keyTypes);
    int valueCol = types.size();
    types.add(ColumnType.INT);
    AggregateSpec spec = new AggregateSpec(types, keyTypes.size(), List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, valueCol, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, valueCol, ColumnType.INT),
        new AggregateFunction(Kind.MAX, valueCol, ColumnType.INT)), ansi);
    Random random = new Random(scenario.hashCode());
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 5; batch++) {
      int n = 300_000 + batch;
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(new ArrayList<>(n));
      }
      for (int r = 0; r < n; r++) {
        // Batch 0 sees years 1992..1998 only; later batches also 1990..2001 and NULL.
        boolean wide = batch > 0 && random.nextInt(20) == 0;
        int year = wide ? 1990 + random.nextInt(12) : 1992 + random.nextInt(7);
        for (int k = 0; k < keyTypes.size(); k++) {
          Object key = switch (keyTypes.get(k).id()) {
            case INT -> batch > 0 && random.nextInt(100) == 0 ? null : year;
            case SHORT -> (short) (wide ? random.nextInt(30) - 2 : random.nextInt(25));
            case BOOLEAN -> batch > 1 && random.nextInt(50) == 0 ? null : random.nextBoolean();
            default -> layout == 3 ? (year - 1990) * 1_000_000_000_000_000L
                : Long.MIN_VALUE + (wide ? Long.MAX_VALUE : 0L) + year;
          };
          columns.get(k).add(key);
        }
        columns.get(valueCol).add(random.nextInt(10) == 0 ? null
            : random.nextInt(2_000_001) - 1_000_000);
      }
      batches.add(columns);
    }
    assertSameOnBoth(spec, batches, scenario);
  }

  /**
   * A key that can be NULL over values that cannot (HashAggregateBench's "nullable keys"): the
   * generated kernel updates the rows of a NULL key apart from the others and their runs,
   * remembering the NULL group's per-block entry (GroupedAggregateEmitter.nullKeyRows). The key
   * 0, whose stored value a NULL key shares in the global table, is among the keys. One group, a
   * few, and more than the per-block table holds; a NULL key one row in 100, every other row
   * (warps of many NULL rows, reduced together), and every row. Two keys (a LONG and an INT,
   * either or both with NULLs; held by key in the per-block table): (0, NULL) must not meet (0, 0)
   * nor (NULL, 0). With 10 and 1,000 groups, the LONG key of one group is Long.MIN_VALUE + 1, the
   * value a NULL key has in the per-block table (LocalKeyTable.NULL_KEY): it must not meet NULL
   * either (the other scenarios keep their keys dense, for the direct group map). Scenario:
   * groups, one row in how many has a NULL key, and per key whether it has NULLs ("n") or not
   * ("-").
   */
  @ParameterizedTest
  @ValueSource(strings = {"1:100:n", "10:100:n", "1000:100:n", "100000:100:n", "7:2:n", "1:1:n",
      "1:100:nn", "10:100:nn", "1000:100:n-", "1000:100:-n", "100000:100:nn", "7:2:nn",
      "1:1:-n"})
  void nullableKeysOverValuesWithoutNullsMatchTheHostReference(String scenario) {
    String[] parts = scenario.split(":");
    int groups = Integer.parseInt(parts[0]);
    int nullEvery = Integer.parseInt(parts[1]);
    String nulls = parts[2];
    int keyCount = nulls.length();
    List<ColumnType> types = keyCount == 1 ? List.of(ColumnType.LONG, ColumnType.LONG)
        : List.of(ColumnType.LONG, ColumnType.INT, ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, keyCount, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, keyCount, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, keyCount, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, keyCount, ColumnType.LONG)), false);
    boolean nullKeyValue = groups == 10 || groups == 1000;
    Random random = new Random(scenario.hashCode());
    List<List<List<Object>>> batches = new ArrayList<>();
    for (int batch = 0; batch < 5; batch++) {
      int n = 600_000 + batch;
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        columns.add(new ArrayList<>(n));
      }
      for (int r = 0; r < n; r++) {
        int g = random.nextInt(groups) - groups / 2;
        for (int k = 0; k < keyCount; k++) {
          boolean isNull = nulls.charAt(k) == 'n' && random.nextInt(nullEvery) == 0;
          // The second key, g % 3, is 0 for a third of the groups: the stored value of NULL.
          long first = nullKeyValue && g == 1 ? Long.MIN_VALUE + 1 : g;
          columns.get(k).add(isNull ? null : k == 0 ? (Object) first : (Object) (g % 3));
        }
        columns.get(keyCount).add(switch (random.nextInt(8)) {
          case 0 -> Long.MIN_VALUE;
          case 1 -> Long.MAX_VALUE;
          default -> random.nextLong();
        });
      }
      batches.add(columns);
    }
    assertSameOnBoth(spec, batches, scenario);
  }

  /** The rows, or one row naming the error (and its row) the first failing update raised. */
  private static List<List<Object>> aggregateWithProgram(Backend backend, GpuStream stream,
      AggregateSpec spec, Program program, List<List<List<Object>>> batches) {
    try (HashAggregateKernel.Aggregation aggregation =
        backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
      for (List<List<Object>> columns : batches) {
        List<HostColumn> hostColumns = new ArrayList<>();
        for (int c = 0; c < columns.size(); c++) {
          hostColumns.add(TestColumns.build(program.inputTypes().get(c), columns.get(c),
              backend.stagingAllocator()));
        }
        try (ColumnBatch<HostColumn> h = new ColumnBatch<>(hostColumns, columns.get(0).size());
            ColumnBatch<DeviceColumn> d =
                ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream)) {
          stream.synchronize();
          aggregation.update(program, d);
        } catch (RowErrorException e) {
          return List.of(List.of("error " + e.error() + " at row " + e.row()));
        }
      }
      return finish(backend, stream, aggregation);
    }
  }

  private static List<List<Object>> batch(List<ColumnType> types, int keyCount, int groups,
      int n, Random random, boolean nullKeys, int intCol, int longCol, int doubleCol,
      int decimalCol, int floatCol) {
    List<List<Object>> columns = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      columns.add(new ArrayList<>(n));
    }
    for (int r = 0; r < n; r++) {
      int g = random.nextInt(Math.max(groups, 1));
      boolean nullKey = nullKeys && random.nextInt(50) == 0;
      for (int k = 0; k < keyCount; k++) {
        Object key;
        if (nullKey && k == keyCount - 1) {
          key = null;
        } else {
          // Split g over the key columns so the tuple determines g (and vice versa).
          key = switch (types.get(k).id()) {
            case LONG -> k == 0 ? (long) g * 0x9E3779B97L : (long) (g % 3);
            case INT -> k == 0 ? g : g % 7;
            case DOUBLE -> g % 11 == 0 ? Double.NaN : (double) (g % 13) - 6.5;
            default -> throw new IllegalStateException();
          };
        }
        columns.get(k).add(key);
      }
      columns.get(intCol).add(random.nextInt(10) == 0 ? null
          : random.nextInt(2_000_001) - 1_000_000);
      columns.get(longCol).add(random.nextInt(10) == 0 ? null
          : random.nextInt(4) == 0 ? (random.nextBoolean() ? Long.MAX_VALUE : Long.MIN_VALUE)
          : random.nextLong());
      double d = switch (random.nextInt(12)) {
        case 0 -> Double.NaN;
        case 1 -> Double.POSITIVE_INFINITY;
        case 2 -> Double.NEGATIVE_INFINITY;
        default -> (random.nextInt(2001) - 1000) / 8.0 + 0.5; // never 0
      };
      columns.get(doubleCol).add(random.nextInt(8) == 0 ? null : d);
      columns.get(floatCol).add(random.nextInt(8) == 0 ? null
          : random.nextInt(13) == 0 ? Float.NaN : (float) d);
      // |unscaled| < 10^14: never wraps int64, sometimes leaves precision 16.
      long unscaled = random.nextInt(3) == 0
          ? (random.nextBoolean() ? 1 : -1) * (99_999_999_999_999L - random.nextInt(1000))
          : random.nextInt(2_000_001) - 1_000_000;
      columns.get(decimalCol).add(random.nextInt(6) == 0 ? null
          : BigDecimal.valueOf(unscaled, DECIMAL_IN.scale()));
    }
    return columns;
  }

  private static void feed(Backend backend, GpuStream stream,
      HashAggregateKernel.Aggregation aggregation, List<ColumnType> types,
      List<List<Object>> columns, int rows) {
    List<HostColumn> hostColumns = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      hostColumns.add(TestColumns.build(types.get(c), columns.get(c), backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> h = new ColumnBatch<>(hostColumns, rows);
        ColumnBatch<DeviceColumn> d =
            ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream)) {
      stream.synchronize();
      aggregation.update(d);
    }
  }

  /** The sorted rows, or one row naming the RowError an ANSI overflow raised. */
  private static List<List<Object>> finish(Backend backend, GpuStream stream,
      HashAggregateKernel.Aggregation aggregation) {
    ColumnBatch<DeviceColumn> result;
    try {
      result = aggregation.finish();
    } catch (RowErrorException e) {
      return List.of(List.of("error " + e.error()));
    }
    return rowsOf(backend, stream, result);
  }

  private static List<List<Object>> rowsOf(Backend backend, GpuStream stream,
      ColumnBatch<DeviceColumn> result) {
    try (ColumnBatch<DeviceColumn> out = result;
        ColumnBatch<HostColumn> back =
            ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < back.columns().size(); c++) {
        columns.add(TestColumns.values(back.column(c).type(), back.column(c)));
      }
      List<List<Object>> rows = new ArrayList<>(back.rowCount());
      for (int r = 0; r < back.rowCount(); r++) {
        List<Object> row = new ArrayList<>(columns.size());
        for (List<Object> column : columns) {
          row.add(column.get(r));
        }
        rows.add(row);
      }
      TestColumns.sortByText(rows);
      return rows;
    }
  }
}
