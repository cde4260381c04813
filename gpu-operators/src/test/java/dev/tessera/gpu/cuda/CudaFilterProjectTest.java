package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.column.Validity;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.gpu.join.JoinTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.ArrowBuf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CUDA filter-project operator against the host reference (HostFilterProject): random input
 * batches of every type, random well-typed programs (filters, strings, nulls, ANSI on and off),
 * and the outputs compared exactly: row counts, null counts, validity bitmaps, values bit for bit
 * (any NaN equals any NaN: the bits of a NaN that arithmetic makes differ between the JVM and the
 * GPU, and Spark treats every NaN as one value), string offsets and bytes, and the
 * RowErrorException's error and row when one is raised. A mismatch prints the program.
 */
@RequiresCuda
class CudaFilterProjectTest extends CudaVersusHostTest {
  /** Programs per batch size: many where batches are small, a few at 3M rows. */
  private static final int SMALL_PROGRAMS = 60;
  private static final int MEDIUM_PROGRAMS = 25;
  private static final int LARGE_PROGRAMS = 4;
  private static final int LARGE_ROWS = 1_000_000;
  private static final int MAX_INPUT_COLUMNS = 5;
  private static final int WIDE_PROGRAMS = 8;

  // ---- the differential test -------------------------------------------------------------------

  // 512 and 1,024 rows: the interpreter's tile and a short generated program's (8 items).
  @ParameterizedTest(name = "{0} rows")
  @ValueSource(ints = {0, 1, 511, 512, 513, 1_023, 1_024, 1_025, 100_000, 3_000_000})
  void randomProgramsMatchTheHostReference(int rows) {
    int programs = rows <= 1000 ? SMALL_PROGRAMS : rows < LARGE_ROWS ? MEDIUM_PROGRAMS
        : LARGE_PROGRAMS;
    for (int i = 0; i < programs; i++) {
      long seed = rows * 1_000L + i;
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(
          MAX_INPUT_COLUMNS));
      Program program = RandomPrograms.generate(types, random.nextBoolean(), random.nextLong());
      try (ColumnBatch<HostColumn> input =
               RandomBatches.build(types, rows, random.nextLong(), cuda.stagingAllocator())) {
        assertSameOutcome("seed " + seed + ", " + rows + " rows of " + types, program, input);
      }
    }
  }

  /**
   * Wide projections (RandomPrograms.wideProjection, 20 to 32 outputs): most generated kernels
   * for them need more registers than a kernel may take in their first forms, so their rows are
   * written by the last form (FilterProjectGenerator.Form.POINTERS_PER_USE), or by the
   * interpreter where that too needs more.
   */
  @ParameterizedTest(name = "{0} rows")
  @ValueSource(ints = {1, 1_025, 100_000})
  void wideProjectionsMatchTheHostReference(int rows) {
    for (int i = 0; i < WIDE_PROGRAMS; i++) {
      long seed = 8_000_000_000L + rows * 1_000L + i;
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(
          MAX_INPUT_COLUMNS));
      Program program = RandomPrograms.wideProjection(types, 20 + random.nextInt(13),
          random.nextLong());
      try (ColumnBatch<HostColumn> input =
               RandomBatches.build(types, rows, random.nextLong(), cuda.stagingAllocator())) {
        assertSameOutcome("seed " + seed + ", " + rows + " rows of " + types, program, input);
      }
    }
  }

  /**
   * Random programs that also probe small join tables (PROBE, LOAD_BUILD; repeated and NULL keys,
   * empty tables), each table built on both backends from the same rows.
   */
  @ParameterizedTest(name = "{0} rows")
  @ValueSource(ints = {1, 513, 100_000})
  void randomProbingProgramsMatchTheHostReference(int rows) {
    int programs = rows <= 1000 ? SMALL_PROGRAMS : MEDIUM_PROGRAMS;
    for (int i = 0; i < programs; i++) {
      long seed = 7_000_000_000L + rows * 1_000L + i;
      Random random = new Random(seed);
      List<ColumnType> types = RandomBatches.randomTypes(random, 1 + random.nextInt(
          MAX_INPUT_COLUMNS));
      RandomPrograms.Probing probing =
          RandomPrograms.generateProbing(types, random.nextBoolean(), random.nextLong());
      try (ColumnBatch<HostColumn> input =
               RandomBatches.build(types, rows, random.nextLong(), cuda.stagingAllocator())) {
        assertSameOutcome("seed " + seed + ", " + rows + " rows of " + types, probing, input);
      }
    }
  }

  /** Runs {@code program} on both backends and fails, with the program, unless they agree. */
  private void assertSameOutcome(String context, Program program,
      ColumnBatch<HostColumn> input) {
    assertSameOutcome(context, new RandomPrograms.Probing(program, List.of()), input);
  }

  private void assertSameOutcome(String context, RandomPrograms.Probing probing,
      ColumnBatch<HostColumn> input) {
    Program program = probing.program();
    List<JoinTable> hostTables = probing.buildTables(host, hostStream);
    List<JoinTable> cudaTables = List.of();
    try {
      cudaTables = probing.buildTables(cuda, cudaStream);
      try (Outcome expected = run(host, hostStream, program, hostTables, input);
          Outcome actual = run(cuda, cudaStream, program, cudaTables, input)) {
        String difference = difference(expected, actual);
        if (difference != null) {
          fail(difference + "\n  (" + context + ")\n" + program.disassemble());
        }
      }
    } finally {
      hostTables.forEach(JoinTable::close);
      cudaTables.forEach(JoinTable::close);
    }
  }

  /** What one backend produced: the error it raised, or its output copied to the host. */
  private record Outcome(RowErrorException error, ColumnBatch<HostColumn> output)
      implements AutoCloseable {
    @Override
    public void close() {
      if (output != null) {
        output.close();
      }
    }
  }

  private static Outcome run(Backend backend, GpuStream stream, Program program,
      List<JoinTable> tables, ColumnBatch<HostColumn> input) {
    try (ColumnBatch<DeviceColumn> onDevice =
             ColumnTransfer.toDeviceAsync(input, backend.deviceMemory(), stream)) {
      ColumnBatch<DeviceColumn> result;
      try {
        result = backend.programKernel().run(program, tables, onDevice, backend.deviceMemory(),
            stream);
      } catch (RowErrorException e) {
        return new Outcome(e, null);
      }
      try (result) {
        return new Outcome(null, ColumnTransfer.toHost(result, backend.stagingAllocator(),
            stream));
      }
    }
  }

  /** The first difference between two outcomes, or null when they are identical. */
  private static String difference(Outcome expected, Outcome actual) {
    if (expected.error() != null || actual.error() != null) {
      if (expected.error() == null || actual.error() == null
          || expected.error().error() != actual.error().error()
          || expected.error().row() != actual.error().row()) {
        return "host reference: " + describe(expected) + "; CUDA: " + describe(actual);
      }
      return null;
    }
    ColumnBatch<HostColumn> e = expected.output();
    ColumnBatch<HostColumn> a = actual.output();
    if (e.rowCount() != a.rowCount()) {
      return "row count: host reference " + e.rowCount() + ", CUDA " + a.rowCount();
    }
    if (e.columns().size() != a.columns().size()) {
      return "columns: host reference " + e.columns().size() + ", CUDA " + a.columns().size();
    }
    for (int c = 0; c < e.columns().size(); c++) {
      String d = columnDifference(e.column(c), a.column(c));
      if (d != null) {
        return "output " + c + " (" + e.column(c).type() + "): " + d;
      }
    }
    return null;
  }

  private static String describe(Outcome outcome) {
    return outcome.error() != null
        ? outcome.error().error() + " in row " + outcome.error().row()
        : "no error, " + outcome.output().rowCount() + " rows";
  }

  private static String columnDifference(HostColumn e, HostColumn a) {
    if (!e.type().equals(a.type())) {
      return "type " + e.type() + " vs " + a.type();
    }
    if (e.rowCount() != a.rowCount()) {
      return "rows " + e.rowCount() + " vs " + a.rowCount();
    }
    if (e.nullCount() != a.nullCount()) {
      return "null count: host reference " + e.nullCount() + ", CUDA " + a.nullCount();
    }
    if ((e.validity() == null) != (a.validity() == null)) {
      return "validity bitmap: host reference " + (e.validity() == null ? "none" : "present")
          + ", CUDA " + (a.validity() == null ? "none" : "present");
    }
    if (e.dataBytes() != a.dataBytes()) {
      return "data bytes: host reference " + e.dataBytes() + ", CUDA " + a.dataBytes();
    }
    int rows = e.rowCount();
    if (e.validity() != null) {
      String d = bytesDifference("validity byte", e.validity(), a.validity(),
          Validity.bytesFor(rows));
      if (d != null) {
        return d;
      }
    }
    if (e.type().isString()) {
      for (int i = 0; i <= rows; i++) {
        int x = e.offsets().getInt(4L * i);
        int y = a.offsets().getInt(4L * i);
        if (x != y) {
          return "offset " + i + ": host reference " + x + ", CUDA " + y;
        }
      }
      return bytesDifference("string data byte", e.data(), a.data(), e.dataBytes());
    }
    int width = e.type().id().width();
    for (int i = 0; i < rows; i++) {
      long x = element(e.data(), i, width);
      long y = element(a.data(), i, width);
      if (x != y && !bothNaN(e.type().id(), x, y)) {
        return String.format("row %d: host reference 0x%x, CUDA 0x%x (%s)", i, x, y,
            e.isNull(i) ? "NULL" : "valid");
      }
    }
    return null;
  }

  private static long element(ArrowBuf data, int row, int width) {
    return switch (width) {
      case 1 -> data.getByte(row);
      case 2 -> data.getShort(2L * row);
      case 4 -> data.getInt(4L * row);
      default -> data.getLong(8L * row);
    };
  }

  private static boolean bothNaN(TypeId type, long x, long y) {
    return switch (type) {
      case FLOAT -> Float.isNaN(Float.intBitsToFloat((int) x))
          && Float.isNaN(Float.intBitsToFloat((int) y));
      case DOUBLE -> Double.isNaN(Double.longBitsToDouble(x))
          && Double.isNaN(Double.longBitsToDouble(y));
      default -> false;
    };
  }

  private static String bytesDifference(String what, ArrowBuf e, ArrowBuf a, long bytes) {
    for (long i = 0; i < bytes; i++) {
      if (e.getByte(i) != a.getByte(i)) {
        return String.format("%s %d: host reference 0x%02x, CUDA 0x%02x", what, i, e.getByte(i),
            a.getByte(i));
      }
    }
    return null;
  }

  // ---- order, edges and errors, checked directly ---------------------------------------------

  /** x = 0, 1, 2, ... and s = "row" + x; the filter pmod(x, 2) = 0 keeps every other row. */
  @Test
  void aFilterKeepingEveryOtherRowOfOneMillionPreservesInputOrder() {
    int rows = 1_000_000;
    List<Object> numbers = new ArrayList<>(rows);
    List<Object> strings = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      numbers.add((long) i);
      strings.add("row" + i);
    }
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.STRING), false);
    int x = b.loadColumn(0);
    int s = b.loadColumn(1);
    int remainder = b.emitNew(Opcode.PMOD_INT, x, b.loadConstant(2), 64);
    int even = b.emitNew(Opcode.CMP_INT, remainder, b.loadConstant(0), Comparison.EQ.code());
    Program program = b.build(even, List.of(new Program.Output(x, ColumnType.LONG),
        new Program.Output(s, ColumnType.STRING)));
    try (HostColumn xs = TestColumns.build(ColumnType.LONG, numbers, cuda.stagingAllocator());
        HostColumn ss = TestColumns.build(ColumnType.STRING, strings, cuda.stagingAllocator());
        ColumnBatch<HostColumn> input = new ColumnBatch<>(List.of(xs, ss), rows);
        Outcome outcome = run(cuda, cudaStream, program, List.of(), input)) {
      assertNull(outcome.error());
      ColumnBatch<HostColumn> out = outcome.output();
      assertEquals(rows / 2, out.rowCount());
      for (int i = 0; i < rows / 2; i++) {
        if (out.column(0).getLong(i) != 2L * i) {
          fail("output row " + i + " holds " + out.column(0).getLong(i) + ", not " + 2L * i);
        }
        if (!out.column(1).getString(i).equals("row" + 2 * i)) {
          fail("output row " + i + " holds '" + out.column(1).getString(i) + "'");
        }
      }
    }
  }

  /** ANSI: 1000 % (x - 2000) divides by zero in row 2000 only; the filter x < t decides. */
  @Test
  void errorsCountOnlyInRowsTheFilterKeepsAndTheFirstIsReported() {
    int rows = 100_000;
    List<Object> numbers = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      numbers.add((long) i);
    }
    try (HostColumn xs = TestColumns.build(ColumnType.LONG, numbers, cuda.stagingAllocator());
        ColumnBatch<HostColumn> input = new ColumnBatch<>(List.of(xs), rows)) {
      for (long threshold : new long[] {1000, 2000, 2001, 50_000}) {
        Program program = remainderByZeroAt2000(threshold);
        try (Outcome outcome = run(cuda, cudaStream, program, List.of(), input)) {
          if (threshold <= 2000) {
            assertNull(outcome.error(), "row 2000 is filtered out");
            assertEquals(threshold, outcome.output().rowCount());
          } else {
            assertNotNull(outcome.error(), "row 2000 is kept");
            assertEquals(RowError.REMAINDER_BY_ZERO, outcome.error().error());
            assertEquals(2000, outcome.error().row());
          }
        }
        assertSameOutcome("threshold " + threshold, program, input);
      }
    }
  }

  private static Program remainderByZeroAt2000(long threshold) {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG), true);
    int x = b.loadColumn(0);
    int keep = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(threshold), Comparison.LT.code());
    int divisor = b.emitNew(Opcode.SUB_INT, x, b.loadConstant(2000), 64);
    int r = b.emitNew(Opcode.REM_INT, b.loadConstant(1000), divisor, 64);
    return b.build(keep, List.of(new Program.Output(r, ColumnType.LONG)));
  }

  @Test
  void emptyInputsAndEmptyResultsHaveWellFormedColumns() {
    for (int rows : new int[] {0, 1000}) {
      ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.STRING, ColumnType.INT), false);
      int s = b.loadColumn(0);
      int x = b.loadColumn(1);
      int never = b.loadConstant(0);
      Program program = b.build(never, List.of(new Program.Output(s, ColumnType.STRING),
          new Program.Output(x, ColumnType.INT)));
      try (ColumnBatch<HostColumn> input = RandomBatches.build(
              List.of(ColumnType.STRING, ColumnType.INT), rows, 5, cuda.stagingAllocator());
          Outcome outcome = run(cuda, cudaStream, program, List.of(), input)) {
        assertEquals(0, outcome.output().rowCount());
        HostColumn strings = outcome.output().column(0);
        assertEquals(0, strings.offsets().getInt(0));
        assertEquals(0, strings.dataBytes());
        assertEquals(0, strings.nullCount());
        assertNull(strings.validity());
        assertSameOutcome(rows + " rows, filter keeps none", program, input);
      }
    }
  }

  @Test
  void aProgramWithoutOutputsCountsTheKeptRows() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.INT), false);
    int x = b.loadColumn(0);
    int positive = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(0), Comparison.GT.code());
    Program program = b.build(positive, List.of());
    try (ColumnBatch<HostColumn> input = RandomBatches.build(List.of(ColumnType.INT), 77_777, 9,
        cuda.stagingAllocator())) {
      assertSameOutcome("no outputs", program, input);
    }
  }

  @Test
  void malformedProgramsAreRefusedBeforeAnyLaunch() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG), false);
    int x = b.loadColumn(0);
    int unwritten = b.register();
    int sum = b.emitNew(Opcode.ADD_INT, x, unwritten, 64);
    Program program = b.build(-1, List.of(new Program.Output(sum, ColumnType.LONG)));
    try (ColumnBatch<HostColumn> input = RandomBatches.build(List.of(ColumnType.LONG), 10, 1,
            cuda.stagingAllocator());
        ColumnBatch<DeviceColumn> onDevice =
            ColumnTransfer.toDeviceAsync(input, cuda.deviceMemory(), cudaStream)) {
      cudaStream.synchronize(); // the upload is done before anything is closed
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> cuda.programKernel().run(program, onDevice, cuda.deviceMemory(),
              cudaStream));
      assertTrue(e.getMessage().contains("before any instruction writes it"), e.getMessage());
    }
  }

  @Test
  void stringConstantsAndSelectedStringsAreGathered() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.STRING, ColumnType.BOOLEAN), false);
    int s = b.loadColumn(0);
    int flag = b.loadColumn(1);
    int constant = b.loadString("constant ü".getBytes(StandardCharsets.UTF_8));
    int chosen = b.emitNew(Opcode.SELECT, flag, constant, s);
    Program program = b.build(-1, List.of(new Program.Output(chosen, ColumnType.STRING),
        new Program.Output(constant, ColumnType.STRING)));
    try (ColumnBatch<HostColumn> input = RandomBatches.build(
        List.of(ColumnType.STRING, ColumnType.BOOLEAN), 20_000, 3, cuda.stagingAllocator())) {
      assertSameOutcome("string constants", program, input);
    }
  }
}
