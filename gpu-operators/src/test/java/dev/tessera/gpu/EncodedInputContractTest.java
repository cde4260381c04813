package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.agg.HashAggregateKernel;
import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.gpu.memory.DeviceBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.arrow.memory.ArrowBuf;
import org.junit.jupiter.api.Test;

/**
 * Encoded (cached) columns as program input, on every backend: a program reading GPU-FOR,
 * GPU-DFOR, dictionary and plain columns sees the values the reference codec decodes (the CUDA
 * kernels decode in their loads, GPU-DFOR a tile at a time; the host reference decodes up front).
 * The batches span several tiles and end in a partial one, whose GPU-DFOR set is short.
 */
public abstract class EncodedInputContractTest extends BackendTestBase {
  private static final int ROWS = 1300; // 2 full tiles of 512 and a partial one of 276
  /**
   * A thread's run of consecutive rows in an aggregate's last tile cut by the batch's end: rows
   * 1,296-1,303 of the eight-row runs of 1,024-row tiles, six in the batch.
   */
  private static final int AGGREGATED_ROWS = 1302;

  private static List<EncodedColumn> columns(long seed) {
    return columns(seed, ROWS);
  }

  /** The test's columns of {@code n} rows (at least 778), from {@code seed}. */
  protected static List<EncodedColumn> columns(long seed, int n) {
    Random random = new Random(seed);
    long[] small = new long[n];
    boolean[] smallValid = new boolean[n];
    long[] sorted = new long[n];
    long[] wide = new long[n];
    long[] dates = new long[n];
    long[] shorts = new long[n];
    long[] decimals = new long[n];
    long[] doubles = new long[n];
    byte[][] fewStrings = new byte[n][];
    byte[][] sortedStrings = new byte[n][];
    long[] fullInts = new long[n];
    long[] fullLongs = new long[n];
    for (int i = 0; i < n; i++) {
      small[i] = random.nextInt(1000) - 500;
      smallValid[i] = i % 7 != 3;
      sorted[i] = (1L << 40) + 1000L * i + random.nextInt(50);
      wide[i] = random.nextLong() >>> 2; // 62 bits: GPU-FOR, values across three words
      dates[i] = 18000 + i / 3;
      shorts[i] = (short) (-30000 + random.nextInt(200));
      decimals[i] = random.nextInt(100000) - 50000;
      doubles[i] = Double.doubleToRawLongBits(i % 11 == 0 ? Double.NaN : i % 13 == 0 ? -0.0
          : random.nextGaussian());
      fewStrings[i] = i % 9 == 0 ? null
          : ("" + "abcdé".substring(0, random.nextInt(5))).getBytes(StandardCharsets.UTF_8);
      sortedStrings[i] = ("key-" + (1000 + i / 40)).getBytes(StandardCharsets.UTF_8);
      // Each block's first miniblock one value (width 0), the others the whole int range (width
      // 32, the reference plus the bits wrapping modulo 2^32); the longs' widths are 64.
      fullInts[i] = i % GpuForLayout.BLOCK_VALUES < GpuForLayout.MINIBLOCK_VALUES ? 7
          : random.nextInt();
      fullLongs[i] = i % 5 == 0 ? (i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE)
          : random.nextLong();
    }
    boolean[] sortedValid = new boolean[n];
    java.util.Arrays.fill(sortedValid, true);
    sortedValid[777] = false;
    return List.of(
        EncodedColumn.encodeFixed(ColumnType.INT, small, smallValid, n),
        EncodedColumn.encodeFixed(ColumnType.LONG, sorted, sortedValid, n),
        EncodedColumn.encodeFixed(ColumnType.LONG, wide, null, n),
        EncodedColumn.encodeFixed(ColumnType.DATE, dates, null, n),
        EncodedColumn.encodeFixed(ColumnType.SHORT, shorts, null, n),
        EncodedColumn.encodeFixed(ColumnType.decimal(9, 2), decimals, null, n),
        EncodedColumn.encodeFixed(ColumnType.DOUBLE, doubles, null, n),
        EncodedColumn.encodeStrings(fewStrings, n),
        EncodedColumn.encodeStrings(sortedStrings, n),
        EncodedColumn.encodeFixed(ColumnType.INT, fullInts, null, n, Encoding.FOR),
        EncodedColumn.encodeFixed(ColumnType.LONG, fullLongs, null, n, Encoding.FOR));
  }

  @Test
  void theCodecChoosesEveryEncodingHere() {
    List<EncodedColumn> columns = columns(1);
    assertEquals(Encoding.FOR, columns.get(0).encoding());
    assertEquals(Encoding.DFOR, columns.get(1).encoding());
    assertEquals(Encoding.FOR, columns.get(2).encoding());
    assertEquals(Encoding.DFOR, columns.get(3).encoding());
    assertEquals(Encoding.PLAIN, columns.get(6).encoding());
    assertEquals(true, columns.get(7).isDictionary());
    assertEquals(Encoding.DFOR, columns.get(8).encoding());
  }

  /**
   * The generated kernels read the two words a GPU-FOR value may lie in whatever its width, so
   * an encoded column's device words are its words and then {@link GpuForLayout#TRAILING_WORDS}
   * zero words.
   */
  @Test
  void anEncodedColumnsDeviceWordsEndInZeroWords() {
    for (EncodedColumn c : columns(1)) {
      if (c.encoding() == Encoding.PLAIN) {
        continue;
      }
      int[] words = c.words();
      try (DeviceEncodedColumn copy = DeviceEncodedColumn.upload(c, backend.deviceMemory(),
              backend.stagingAllocator(), stream);
          DeviceColumn device = copy.borrow(() -> { })) {
        DeviceBuffer deviceWords = device.words();
        assertEquals(4L * (words.length + GpuForLayout.TRAILING_WORDS), deviceWords.size(),
            c.type() + " " + c.encoding());
        try (ArrowBuf host = backend.stagingAllocator().buffer(deviceWords.size())) {
          stream.copyDeviceToHost(deviceWords.address(), host.memoryAddress(),
              deviceWords.size());
          stream.synchronize();
          for (int i = 0; i < words.length + GpuForLayout.TRAILING_WORDS; i++) {
            assertEquals(i < words.length ? words[i] : 0, host.getInt(4L * i),
                c.type() + " " + c.encoding() + " word " + i);
          }
        }
      }
    }
  }

  @Test
  void aProgramReadsTheDecodedValues() {
    for (long seed = 1; seed <= 3; seed++) {
      List<EncodedColumn> encoded = columns(seed);
      List<ColumnType> types = new ArrayList<>();
      List<DeviceEncodedColumn> copies = new ArrayList<>();
      List<DeviceColumn> input = new ArrayList<>();
      try {
        for (EncodedColumn c : encoded) {
          types.add(c.type());
          DeviceEncodedColumn copy = DeviceEncodedColumn.upload(c, backend.deviceMemory(),
              backend.stagingAllocator(), stream);
          copies.add(copy);
          input.add(copy.borrow(() -> { }));
        }
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(input, ROWS);
            ColumnBatch<DeviceColumn> out = backend.programKernel().run(
                ProgramBuilder.identity(types, false), batch, backend.deviceMemory(), stream);
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
          assertEquals(ROWS, host.rowCount());
          for (int c = 0; c < encoded.size(); c++) {
            assertColumn(encoded.get(c), host.column(c), "seed " + seed + " column " + c);
          }
        }
        // The rare host path (a replay, a split) decodes the same values.
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(borrowAll(copies), ROWS);
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(batch, backend.stagingAllocator(), stream)) {
          for (int c = 0; c < encoded.size(); c++) {
            assertColumn(encoded.get(c), host.column(c), "download, column " + c);
          }
        }
      } finally {
        copies.forEach(DeviceEncodedColumn::close);
      }
    }
  }

  /**
   * A global aggregate (accumulated in registers on CUDA) of encoded columns behind a filter on
   * a nullable one: GPU-FOR columns only, whose rows a thread takes four consecutive ones sharing
   * their miniblocks' headers (among them widths 0, 32 and 64 and values across three words);
   * then with a GPU-DFOR column, whose tiles the kernel decodes block-wide. Checked against the
   * values the reference codec decodes.
   */
  @Test
  void aGlobalAggregateReadsTheDecodedValues() {
    for (long seed = 1; seed <= 2; seed++) {
      List<EncodedColumn> encoded = columns(seed, AGGREGATED_ROWS);
      assertEquals(Encoding.FOR, encoded.get(0).encoding());
      assertEquals(Encoding.DFOR, encoded.get(3).encoding());
      assertGlobalAggregate(encoded, List.of(0, 2, 9, 10), "seed " + seed + ", GPU-FOR");
      assertGlobalAggregate(encoded, List.of(0, 3, 9), "seed " + seed + ", with GPU-DFOR");
    }
  }

  /**
   * Where column 0 (INT, nullable) is above -250: COUNT_ROWS, then per column of {@code picked}
   * its MIN, MAX and COUNT, and SUM (wrapping, as without ANSI) where it is INT or LONG; over all
   * the rows of {@code encoded}, one batch.
   */
  protected void assertGlobalAggregate(List<EncodedColumn> encoded, List<Integer> picked,
      String what) {
    int rows = encoded.get(0).rowCount();
    List<ColumnType> types = encoded.stream().map(EncodedColumn::type).toList();
    ProgramBuilder program = new ProgramBuilder(types, false);
    int keep = program.emitNew(Opcode.CMP_INT, program.loadColumn(0),
        program.loadConstant(-250), Comparison.GT.code());
    List<Program.Output> outputs = new ArrayList<>();
    List<AggregateFunction> functions = new ArrayList<>();
    functions.add(new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG));
    List<Long> expected = new ArrayList<>();
    List<Integer> kept = new ArrayList<>();
    for (int row = 0; row < rows; row++) {
      if (!encoded.get(0).isNull(row) && encoded.get(0).fixedValue(row) > -250) {
        kept.add(row);
      }
    }
    expected.add((long) kept.size());
    for (int c : picked) {
      EncodedColumn column = encoded.get(c);
      int input = outputs.size();
      outputs.add(new Program.Output(program.loadColumn(c), column.type()));
      long min = Long.MAX_VALUE;
      long max = Long.MIN_VALUE;
      long sum = 0;
      long count = 0;
      for (int row : kept) {
        if (!column.isNull(row)) {
          long v = column.fixedValue(row);
          min = Math.min(min, v);
          max = Math.max(max, v);
          sum += v;
          count++;
        }
      }
      functions.add(new AggregateFunction(Kind.MIN, input, column.type()));
      functions.add(new AggregateFunction(Kind.MAX, input, column.type()));
      functions.add(new AggregateFunction(Kind.COUNT, input, ColumnType.LONG));
      expected.addAll(List.of(min, max, count));
      if (column.type().id() == TypeId.INT || column.type().id() == TypeId.LONG) {
        functions.add(new AggregateFunction(Kind.SUM, input, ColumnType.LONG));
        expected.add(sum);
      }
    }
    AggregateSpec spec = new AggregateSpec(
        outputs.stream().map(Program.Output::type).toList(), 0, functions, false);
    List<DeviceEncodedColumn> copies = new ArrayList<>();
    try {
      uploadAll(encoded, copies);
      try (HashAggregateKernel.Aggregation aggregation =
          backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
        try (ColumnBatch<DeviceColumn> batch =
            new ColumnBatch<>(borrowAll(copies), rows)) {
          aggregation.update(program.build(keep, outputs), batch);
        }
        assertOneRow(aggregation, functions, expected, what);
      }
    } finally {
      copies.forEach(DeviceEncodedColumn::close);
    }
  }

  /**
   * A global aggregate whose filter probes a join table only for the rows its other conjuncts
   * pass, SSB Q1.1's shape, in ANSI mode: the generated kernel holds those rows in its warps'
   * stacks until 32 are there, then probes and aggregates 32 at once (PrefilteredRows). The rows
   * carry a nullable INT (its NULLs pass, through COALESCE) and a 62-bit LONG to the aggregate;
   * the probe's key, a SHORT checked only for NULLs before (Spark's IS NOT NULL of a join key),
   * is loaded after; a product of a full-range INT and the probed payload is summed. Checked
   * against the values the reference codec decodes, and with {@code errs}, every tenth key's
   * payload 3, whose products may overflow: the error names the first such row the filter keeps.
   */
  @Test
  void aGlobalAggregateProbesOnlyTheRowsItsOtherConjunctsPass() {
    for (long seed = 1; seed <= 2; seed++) {
      List<EncodedColumn> encoded = columns(seed, AGGREGATED_ROWS);
      assertProbedGlobalAggregate(encoded, false, "seed " + seed);
      assertProbedGlobalAggregate(encoded, true, "seed " + seed + ", overflowing");
    }
  }

  /** The probe's table: the even SHORT keys of {@link #columns}' column 4, payload 1 (or 3). */
  private static final int PROBED_KEYS = 100;
  private static final long FIRST_KEY = -30000;

  private static int payload(long key, boolean errs) {
    return errs && (key - FIRST_KEY) / 2 % 10 == 0 ? 3 : 1;
  }

  protected void assertProbedGlobalAggregate(List<EncodedColumn> encoded, boolean errs,
      String what) {
    int rows = encoded.get(0).rowCount();
    List<ColumnType> types = encoded.stream().map(EncodedColumn::type).toList();
    JoinTableSchema schema = new JoinTableSchema(List.of(ColumnType.SHORT),
        List.of(ColumnType.INT));
    List<Object> keys = new ArrayList<>();
    List<Object> payloads = new ArrayList<>();
    for (int k = 0; k < PROBED_KEYS; k++) {
      keys.add((short) (FIRST_KEY + 2 * k));
      payloads.add(payload(FIRST_KEY + 2 * k, errs));
    }
    ProgramBuilder b = new ProgramBuilder(types, true);
    int table = b.table(schema);
    int small = b.loadColumn(0);
    int wide = b.loadColumn(2);
    int keyColumn = b.loadColumn(4);
    int cheap = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, keyColumn, 0, 0),
        b.emitNew(Opcode.CMP_INT, b.emitNew(Opcode.COALESCE, small, b.loadConstant(0), 0),
            b.loadConstant(-250), Comparison.GT.code()), 0);
    cheap = b.emitNew(Opcode.AND, cheap, b.emitNew(Opcode.CMP_INT, wide,
        b.loadConstant(1L << 61), Comparison.GT.code()), 0);
    int buildRow = b.emitNew(Opcode.PROBE, table, b.constant(b.loadColumn(4)), 1);
    int keep = b.emitNew(Opcode.AND, cheap, b.emitNew(Opcode.IS_NOT_NULL, buildRow, 0, 0), 0);
    int product = b.emitNew(Opcode.MUL_INT, b.loadColumn(9),
        b.emitNew(Opcode.LOAD_BUILD, table, buildRow, 0), 32);
    Program program = b.build(keep, List.of(new Program.Output(small, ColumnType.INT),
        new Program.Output(wide, ColumnType.LONG), new Program.Output(product, ColumnType.INT)));
    List<AggregateFunction> functions = List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 0, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT, 0, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 0, ColumnType.INT),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 2, ColumnType.LONG));
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.INT, ColumnType.LONG,
        ColumnType.INT), 0, functions, true);

    long count = 0;
    long smallSum = 0;
    long smallCount = 0;
    long smallMin = Long.MAX_VALUE;
    long wideMax = Long.MIN_VALUE;
    long productSum = 0;
    long firstError = -1;
    EncodedColumn smallValues = encoded.get(0);
    for (int row = 0; row < rows; row++) {
      long key = encoded.get(4).fixedValue(row);
      long coalesced = smallValues.isNull(row) ? 0 : smallValues.fixedValue(row);
      boolean probed = key >= FIRST_KEY && key < FIRST_KEY + 2 * PROBED_KEYS
          && (key - FIRST_KEY) % 2 == 0;
      if (coalesced <= -250 || encoded.get(2).fixedValue(row) <= 1L << 61 || !probed) {
        continue;
      }
      long exact = encoded.get(9).fixedValue(row) * payload(key, errs);
      if (exact != (int) exact) {
        firstError = firstError < 0 ? row : firstError;
        continue;
      }
      count++;
      if (!smallValues.isNull(row)) {
        smallSum += smallValues.fixedValue(row);
        smallCount++;
        smallMin = Math.min(smallMin, smallValues.fixedValue(row));
      }
      wideMax = Math.max(wideMax, encoded.get(2).fixedValue(row));
      productSum += exact;
    }
    assertEquals(errs, firstError >= 0, what + ": the data overflows only with payload 3");
    List<Long> expected = List.of(count, smallSum, smallCount, smallMin, wideMax, productSum);

    List<DeviceEncodedColumn> copies = new ArrayList<>();
    JoinTable built = null;
    try {
      uploadAll(encoded, copies);
      built = buildTable(schema, keys, payloads);
      try (HashAggregateKernel.Aggregation aggregation =
          backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(borrowAll(copies), rows)) {
          if (errs) {
            JoinTable probed = built;
            RowErrorException error = assertThrows(RowErrorException.class,
                () -> aggregation.update(program, List.of(probed), batch), what);
            assertEquals(firstError, error.row(), what + ": " + error.getMessage());
            return;
          }
          aggregation.update(program, List.of(built), batch);
        }
        assertOneRow(aggregation, functions, expected, what);
      }
    } finally {
      if (built != null) {
        built.close();
      }
      copies.forEach(DeviceEncodedColumn::close);
    }
  }

  /**
   * A grouped aggregate whose filter probes two join tables, SSB Q2.1's shape, in ANSI mode:
   * the first probe behind NULL checks of keys without NULLs, the second behind a comparison.
   * The generated kernel runs the first probe and the comparison for every row, and the second
   * probe, the groups' lookup and the update for 32 rows at once, taken from the warps' stacks
   * (PrefilteredRows), the kept ones through the kept-row queue. The rows carry the first
   * probe's build row (the group's STRING key, empty strings among them, is loaded after) and a
   * 62-bit LONG; the second probe's key is a nullable INT. With {@code errs}, products of the
   * second table's payload 3 may overflow: the error names the first such row the filter keeps.
   */
  @Test
  void aGroupedAggregateProbesItsSecondTableOnlyForTheRowsTheFirstKeeps() {
    for (long seed = 1; seed <= 2; seed++) {
      List<EncodedColumn> encoded = columns(seed, AGGREGATED_ROWS);
      assertProbedGroupedAggregate(encoded, false, "seed " + seed);
      assertProbedGroupedAggregate(encoded, true, "seed " + seed + ", overflowing");
    }
  }

  /** The first table's group names: 6, one of them empty. */
  private static String groupName(long key) {
    long k = (key - FIRST_KEY) / 2 % 6;
    return k == 5 ? "" : "g" + k;
  }

  /** The second table's keys: those of {@link #columns}' column 0 not divisible by 3. */
  private static boolean inSecondTable(long key) {
    return key >= -500 && key < 500 && key % 3 != 0;
  }

  protected void assertProbedGroupedAggregate(List<EncodedColumn> encoded, boolean errs,
      String what) {
    int rows = encoded.get(0).rowCount();
    List<ColumnType> types = encoded.stream().map(EncodedColumn::type).toList();
    JoinTableSchema names = new JoinTableSchema(List.of(ColumnType.SHORT),
        List.of(ColumnType.STRING));
    JoinTableSchema factors = new JoinTableSchema(List.of(ColumnType.INT),
        List.of(ColumnType.INT));
    List<Object> nameKeys = new ArrayList<>();
    List<Object> nameValues = new ArrayList<>();
    for (int k = 0; k < PROBED_KEYS; k++) {
      nameKeys.add((short) (FIRST_KEY + 2 * k));
      nameValues.add(groupName(FIRST_KEY + 2 * k));
    }
    List<Object> factorKeys = new ArrayList<>();
    List<Object> factorValues = new ArrayList<>();
    for (int k = -500; k < 500; k++) {
      if (inSecondTable(k)) {
        factorKeys.add(k);
        factorValues.add(errs && k % 10 == 0 ? 3 : 1);
      }
    }
    ProgramBuilder b = new ProgramBuilder(types, true);
    int nameTable = b.table(names);
    int factorTable = b.table(factors);
    int nameRow = b.emitNew(Opcode.PROBE, nameTable, b.constant(b.loadColumn(4)), 1);
    int keep = b.emitNew(Opcode.AND,
        b.emitNew(Opcode.IS_NOT_NULL, b.loadColumn(4), 0, 0),
        b.emitNew(Opcode.IS_NOT_NULL, nameRow, 0, 0), 0);
    int wide = b.loadColumn(2);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.CMP_INT, wide,
        b.loadConstant(1L << 61), Comparison.GT.code()), 0);
    int factorRow = b.emitNew(Opcode.PROBE, factorTable, b.constant(b.loadColumn(0)), 1);
    keep = b.emitNew(Opcode.AND, keep, b.emitNew(Opcode.IS_NOT_NULL, factorRow, 0, 0), 0);
    int product = b.emitNew(Opcode.MUL_INT, b.loadColumn(9),
        b.emitNew(Opcode.LOAD_BUILD, factorTable, factorRow, 0), 32);
    Program program = b.build(keep, List.of(
        new Program.Output(b.emitNew(Opcode.LOAD_BUILD, nameTable, nameRow, 0),
            ColumnType.STRING),
        new Program.Output(product, ColumnType.INT), new Program.Output(wide, ColumnType.LONG)));
    List<AggregateFunction> functions = List.of(
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 2, ColumnType.LONG));
    AggregateSpec spec = new AggregateSpec(List.of(ColumnType.STRING, ColumnType.INT,
        ColumnType.LONG), 1, functions, true);

    TreeMap<String, long[]> groups = new TreeMap<>();
    long firstError = -1;
    for (int row = 0; row < rows; row++) {
      long key = encoded.get(4).fixedValue(row);
      boolean named = key >= FIRST_KEY && key < FIRST_KEY + 2 * PROBED_KEYS
          && (key - FIRST_KEY) % 2 == 0;
      EncodedColumn factorKey = encoded.get(0);
      if (!named || encoded.get(2).fixedValue(row) <= 1L << 61 || factorKey.isNull(row)
          || !inSecondTable(factorKey.fixedValue(row))) {
        continue;
      }
      long factor = errs && factorKey.fixedValue(row) % 10 == 0 ? 3 : 1;
      long exact = encoded.get(9).fixedValue(row) * factor;
      if (exact != (int) exact) {
        firstError = firstError < 0 ? row : firstError;
        continue;
      }
      long[] group = groups.computeIfAbsent(groupName(key), g -> new long[] {0, 0, Long.MIN_VALUE});
      group[0] += exact;
      group[1]++;
      group[2] = Math.max(group[2], encoded.get(2).fixedValue(row));
    }
    assertEquals(errs, firstError >= 0, what + ": the data overflows only with payload 3");
    assertEquals(6, groups.size(), what + ": every group keeps rows");
    List<List<Object>> expected = new ArrayList<>();
    groups.forEach((name, g) -> expected.add(List.of(name, g[0], g[1], g[2])));

    List<DeviceEncodedColumn> copies = new ArrayList<>();
    List<JoinTable> tables = new ArrayList<>();
    try {
      uploadAll(encoded, copies);
      tables.add(buildTable(names, nameKeys, nameValues));
      tables.add(buildTable(factors, factorKeys, factorValues));
      try (HashAggregateKernel.Aggregation aggregation =
          backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(borrowAll(copies), rows)) {
          if (errs) {
            RowErrorException error = assertThrows(RowErrorException.class,
                () -> aggregation.update(program, tables, batch), what);
            assertEquals(firstError, error.row(), what + ": " + error.getMessage());
            return;
          }
          aggregation.update(program, tables, batch);
        }
        try (ColumnBatch<DeviceColumn> out = aggregation.finish();
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
          List<List<Object>> actual = TestColumns.rows(host);
          actual.sort(Comparator.comparing(r -> (String) r.get(0)));
          assertEquals(expected, actual, what);
        }
      }
    } finally {
      tables.forEach(JoinTable::close);
      copies.forEach(DeviceEncodedColumn::close);
    }
  }

  /**
   * A GROUP BY of a dictionary string column (a cached table's), without a filter and with one:
   * strings of 1 to 33 bytes (some sharing their length, or their first 8 bytes, or all but the
   * last), the empty string and NULL, in runs of up to 3,000 rows and alone, over enough rows
   * that a block of the generated kernel (one a multiprocessor) takes two or three tiles. Checked
   * against the values the reference codec decodes. COUNT_ROWS, SUM, MIN and MAX of a LONG.
   */
  @Test
  void aGroupedAggregateByADictionaryStringReadsTheDecodedValues() {
    int rows = 300_000;
    String[] pool = {"", "a", "seven77", "eight888", "customer-key-0000001",
        "customer-key-0000002", "customer-key-1000001", "UNITED STATES", "UNITED KINGDOM",
        "ünïcode, more than thirty bytes"};
    Random random = new Random(17);
    byte[][] keys = new byte[rows][];
    long[] values = new long[rows];
    for (int row = 0; row < rows; ) {
      int pick = random.nextInt(pool.length + 1); // pool.length: NULL
      for (int run = random.nextBoolean() ? 1 : 1 + random.nextInt(3000); run > 0 && row < rows;
          run--, row++) {
        keys[row] = pick == pool.length ? null : pool[pick].getBytes(StandardCharsets.UTF_8);
        values[row] = random.nextInt(2_000_001) - 1_000_000;
      }
    }
    List<EncodedColumn> encoded = List.of(EncodedColumn.encodeStrings(keys, rows),
        EncodedColumn.encodeFixed(ColumnType.LONG, values, null, rows));
    assertNotEquals(Encoding.PLAIN, encoded.get(0).encoding(), "a dictionary");
    for (boolean filtered : new boolean[] {false, true}) {
      assertDictionaryGroups(List.of(encoded), filtered);
    }
  }

  @Test
  void manyDictionaryStringsAcrossBatchesFindTheirGroups() {
    // More strings than a block's table holds (at most 2,048 entries, LocalTableSize: rows that
    // miss it find their group by their code's, CodeGroups), in two batches whose dictionaries
    // number the same strings apart.
    Random random = new Random(29);
    List<List<EncodedColumn>> batches = new ArrayList<>();
    for (int batch = 0; batch < 2; batch++) {
      int rows = 120_000;
      byte[][] keys = new byte[rows][];
      long[] values = new long[rows];
      for (int row = 0; row < rows; ) {
        int n = random.nextInt(12_000) + batch * 4_000; // batches share 8,000 strings
        String name = switch (n % 4) {
          case 0 -> "k" + n; // at most 7 bytes
          case 1 -> "customer-key-" + n; // the first 8 bytes shared
          case 2 -> n % 1_000 == 2 ? "" : "key-" + n;
          default -> n % 500 == 3 ? null : "ünïcode-" + n + "-" + "x".repeat(n % 29);
        };
        for (int run = random.nextInt(4) == 0 ? 1 + random.nextInt(100) : 1;
            run > 0 && row < rows; run--, row++) {
          keys[row] = name == null ? null : name.getBytes(StandardCharsets.UTF_8);
          values[row] = random.nextInt(2_000_001) - 1_000_000;
        }
      }
      batches.add(List.of(EncodedColumn.encodeStrings(keys, rows),
          EncodedColumn.encodeFixed(ColumnType.LONG, values, null, rows)));
      assertNotEquals(Encoding.PLAIN, batches.get(batch).get(0).encoding(), "a dictionary");
    }
    for (boolean filtered : new boolean[] {false, true}) {
      assertDictionaryGroups(batches, filtered);
    }
  }

  @Test
  void aGroupedAggregateByTwoDictionaryStringsFindsThePairs() {
    // TPC-H Q1's GROUP BY l_returnflag, l_linestatus over a cached table: two dictionary string
    // columns, found by their pair of codes (CodeGroups.tuple), in two batches whose
    // dictionaries number the strings apart; NULLs, the empty string, a string past a word.
    String[] flags = {"A", "N", "R", "", null};
    String[] statuses = {"F", "O", "a status of more than eight bytes", null};
    Random random = new Random(41);
    List<List<EncodedColumn>> batches = new ArrayList<>();
    for (int batch = 0; batch < 2; batch++) {
      int rows = 150_000;
      byte[][] flag = new byte[rows][];
      byte[][] status = new byte[rows][];
      long[] values = new long[rows];
      for (int row = 0; row < rows; ) {
        // The second batch meets the strings in another order: other codes.
        String f = flags[batch == 0 ? random.nextInt(flags.length)
            : flags.length - 1 - random.nextInt(flags.length)];
        String s = statuses[random.nextInt(statuses.length)];
        for (int run = random.nextBoolean() ? 1 : 1 + random.nextInt(500); run > 0 && row < rows;
            run--, row++) {
          flag[row] = f == null ? null : f.getBytes(StandardCharsets.UTF_8);
          status[row] = s == null ? null : s.getBytes(StandardCharsets.UTF_8);
          values[row] = random.nextInt(2_000_001) - 1_000_000;
        }
      }
      batches.add(List.of(EncodedColumn.encodeStrings(flag, rows),
          EncodedColumn.encodeStrings(status, rows),
          EncodedColumn.encodeFixed(ColumnType.LONG, values, null, rows)));
    }
    for (boolean filtered : new boolean[] {false, true}) {
      assertDictionaryGroups(batches, filtered);
    }
  }

  /**
   * The dictionary tests' aggregate ({@link
   * #aGroupedAggregateByADictionaryStringReadsTheDecodedValues}): GROUP BY the string column,
   * COUNT(*), SUM, MIN and MAX of the LONG one, over every batch of {@code batches} in turn.
   */
  private void assertDictionaryGroups(List<List<EncodedColumn>> batches, boolean filtered) {
    // Every column but the last (the LONG) is a string key.
    int keys = batches.get(0).size() - 1;
    List<ColumnType> types = new ArrayList<>(Collections.nCopies(keys, ColumnType.STRING));
    types.add(ColumnType.LONG);
    ProgramBuilder b = new ProgramBuilder(types, false);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
    }
    int value = outputs.get(keys).register();
    int keep = filtered
        ? b.emitNew(Opcode.CMP_INT, value, b.loadConstant(0), Comparison.GT.code()) : -1;
    Program program = b.build(keep, outputs);
    AggregateSpec spec = new AggregateSpec(types, keys, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, keys, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, keys, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, keys, ColumnType.LONG)), false);
    Map<List<String>, long[]> groups = new HashMap<>();
    for (List<EncodedColumn> encoded : batches) {
      for (int row = 0; row < encoded.get(0).rowCount(); row++) {
        long v = encoded.get(keys).fixedValue(row);
        if (filtered && v <= 0) {
          continue;
        }
        List<String> names = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
          names.add(encoded.get(k).isNull(row) ? null
              : new String(encoded.get(k).stringValue(row), StandardCharsets.UTF_8));
        }
        long[] group = groups.computeIfAbsent(names,
            n -> new long[] {0, 0, Long.MAX_VALUE, Long.MIN_VALUE});
        group[0]++;
        group[1] += v;
        group[2] = Math.min(group[2], v);
        group[3] = Math.max(group[3], v);
      }
    }
    Comparator<List<Object>> byNames =
        Comparator.comparing(r -> String.valueOf(r.subList(0, keys)));
    List<List<Object>> expected = new ArrayList<>();
    groups.forEach((names, g) -> {
      List<Object> row = new ArrayList<>(names);
      row.addAll(List.of(g[0], g[1], g[2], g[3]));
      expected.add(row);
    });
    expected.sort(byNames);
    String what = (filtered ? "WHERE v > 0" : "every row") + ", " + keys + " keys";
    List<DeviceEncodedColumn> copies = new ArrayList<>();
    try {
      try (HashAggregateKernel.Aggregation aggregation =
          backend.hashAggregateKernel().open(spec, backend.deviceMemory(), stream)) {
        for (List<EncodedColumn> encoded : batches) {
          List<DeviceEncodedColumn> batchCopies = new ArrayList<>();
          uploadAll(encoded, batchCopies);
          copies.addAll(batchCopies);
          try (ColumnBatch<DeviceColumn> batch =
              new ColumnBatch<>(borrowAll(batchCopies), encoded.get(0).rowCount())) {
            aggregation.update(program, batch);
          }
        }
        try (ColumnBatch<DeviceColumn> out = aggregation.finish();
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
          List<List<Object>> actual = TestColumns.rows(host);
          actual.sort(byNames);
          assertEquals(expected, actual, what);
        }
      }
    } finally {
      copies.forEach(DeviceEncodedColumn::close);
    }
  }

  /** Device copies of {@code encoded}, added to {@code copies} (which the caller closes). */
  private void uploadAll(List<EncodedColumn> encoded, List<DeviceEncodedColumn> copies) {
    for (EncodedColumn c : encoded) {
      copies.add(DeviceEncodedColumn.upload(c, backend.deviceMemory(),
          backend.stagingAllocator(), stream));
    }
  }

  /** A global aggregate's result: one row, each function's value the {@code expected} one. */
  private void assertOneRow(HashAggregateKernel.Aggregation aggregation,
      List<AggregateFunction> functions, List<Long> expected, String what) {
    try (ColumnBatch<DeviceColumn> out = aggregation.finish();
        ColumnBatch<HostColumn> host =
            ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
      assertEquals(1, host.rowCount(), what);
      for (int f = 0; f < functions.size(); f++) {
        HostColumn result = host.column(f);
        long actual = result.type().id() == TypeId.LONG ? result.getLong(0) : result.getInt(0);
        assertEquals(expected.get(f), actual, what + ", function " + f + " " + functions.get(f));
      }
    }
  }

  /** A join table of {@code schema}: one key and one payload column. */
  private JoinTable buildTable(JoinTableSchema schema, List<Object> keys, List<Object> payloads) {
    List<HostColumn> columns = List.of(
        TestColumns.build(schema.keyTypes().get(0), keys, backend.stagingAllocator()),
        TestColumns.build(schema.payloadTypes().get(0), payloads, backend.stagingAllocator()));
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, keys.size());
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream)) {
      stream.synchronize();
      return backend.hashJoinKernel().build(schema, device, backend.deviceMemory(), stream);
    }
  }

  private static List<DeviceColumn> borrowAll(List<DeviceEncodedColumn> copies) {
    List<DeviceColumn> columns = new ArrayList<>();
    for (DeviceEncodedColumn copy : copies) {
      columns.add(copy.borrow(() -> { }));
    }
    return columns;
  }

  private static void assertColumn(EncodedColumn expected, HostColumn actual, String what) {
    for (int row = 0; row < expected.rowCount(); row++) {
      String at = what + " row " + row;
      assertEquals(expected.isNull(row), actual.isNull(row), at);
      if (expected.isNull(row)) {
        continue;
      }
      if (expected.type().isString()) {
        assertArrayEquals(expected.stringValue(row), actual.getUtf8(row), at);
        continue;
      }
      long value = switch (expected.type().id()) {
        case SHORT -> actual.getShort(row);
        case INT, DATE -> actual.getInt(row);
        case DOUBLE -> Double.doubleToRawLongBits(actual.getDouble(row));
        default -> actual.getLong(row);
      };
      assertEquals(expected.fixedValue(row), value, at);
    }
  }
}
