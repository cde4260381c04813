package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
import dev.tessera.gpu.expr.RowError;
import dev.tessera.gpu.expr.RowErrorException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Hand-checked semantics of the filter-project operator, the same on every backend: Spark's
 * results for overflow, division by zero, NULLs, NaN and -0.0, decimals, dates and strings.
 */
public abstract class FilterProjectContractTest extends BackendTestBase {
  /** Input columns as Java values (null = SQL NULL). */
  private record Input(ColumnType type, List<Object> values) {
    static Input of(ColumnType type, Object... values) {
      return new Input(type, Arrays.asList(values));
    }
  }

  /**
   * Builds a program with {@code body} (which returns the output registers, with the filter
   * register, if any, last when {@code filtered}), runs it and returns each output column's values.
   */
  private List<List<Object>> run(List<Input> inputs, boolean ansi, List<ColumnType> outputTypes,
      boolean filtered, Function<ProgramBuilder, int[]> body) {
    List<ColumnType> types = inputs.stream().map(Input::type).toList();
    ProgramBuilder builder = new ProgramBuilder(types, ansi);
    int[] registers = body.apply(builder);
    List<Program.Output> outputs = new ArrayList<>();
    for (int i = 0; i < outputTypes.size(); i++) {
      outputs.add(new Program.Output(registers[i], outputTypes.get(i)));
    }
    Program program = builder.build(filtered ? registers[registers.length - 1] : -1, outputs);
    int rows = inputs.isEmpty() ? 0 : inputs.get(0).values().size();
    List<HostColumn> hostColumns = new ArrayList<>();
    for (Input in : inputs) {
      hostColumns.add(TestColumns.build(in.type(), in.values(), backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(hostColumns, rows);
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
        ColumnBatch<DeviceColumn> result =
            backend.programKernel().run(program, device, backend.deviceMemory(), stream);
        ColumnBatch<HostColumn> back =
            ColumnTransfer.toHost(result, backend.stagingAllocator(), stream)) {
      List<List<Object>> columns = new ArrayList<>();
      for (int c = 0; c < outputTypes.size(); c++) {
        columns.add(TestColumns.values(outputTypes.get(c), back.column(c)));
      }
      return columns;
    }
  }

  private List<Object> project(Input input, boolean ansi, ColumnType outType,
      Function<ProgramBuilder, Integer> body) {
    return run(List.of(input), ansi, List.of(outType), false,
        b -> new int[] {body.apply(b)}).get(0);
  }

  private static final ColumnType INT = ColumnType.INT;
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType BOOL = ColumnType.BOOLEAN;

  @Test
  void integerAdditionWrapsWithoutAnsi() {
    Input in = Input.of(INT, Integer.MAX_VALUE, -5, null);
    List<Object> out = project(in, false, INT, b -> b.emitNew(Opcode.ADD_INT, b.loadColumn(0),
        b.loadConstant(1), 32));
    assertEquals(Arrays.asList(Integer.MIN_VALUE, -4, null), out);
  }

  @Test
  void integerOverflowRaisesUnderAnsiNamingTheRow() {
    Input in = Input.of(LONG, 1L, Long.MAX_VALUE, 3L);
    RowErrorException e = assertThrows(RowErrorException.class, () -> project(in, true, LONG,
        b -> b.emitNew(Opcode.ADD_INT, b.loadColumn(0), b.loadConstant(1), 64)));
    assertEquals(RowError.ARITHMETIC_OVERFLOW, e.error());
    assertEquals(1, e.row());
  }

  @Test
  void anErrorInARowTheFilterDropsIsNoError() {
    Input in = Input.of(LONG, 1L, Long.MAX_VALUE, 3L);
    // SELECT x + 1 WHERE x < 100: the overflowing row is filtered out.
    List<List<Object>> out = run(List.of(in), true, List.of(LONG), true, b -> {
      int x = b.loadColumn(0);
      int sum = b.emitNew(Opcode.ADD_INT, x, b.loadConstant(1), 64);
      int keep = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(100), Comparison.LT.code());
      return new int[] {sum, keep};
    });
    assertEquals(Arrays.asList(2L, 4L), out.get(0));
  }

  @Test
  void remainderByZeroIsNullOrAnError() {
    Input in = Input.of(INT, 7, -7, Integer.MIN_VALUE);
    Function<ProgramBuilder, Integer> rem = b -> b.emitNew(Opcode.REM_INT, b.loadColumn(0),
        b.loadConstant(0), 32);
    assertEquals(Arrays.asList(null, null, null), project(in, false, INT, rem));
    RowErrorException e = assertThrows(RowErrorException.class, () -> project(in, true, INT, rem));
    assertEquals(RowError.REMAINDER_BY_ZERO, e.error());
    assertEquals(0, e.row());
    Function<ProgramBuilder, Integer> pmod = b -> b.emitNew(Opcode.PMOD_INT, b.loadColumn(0),
        b.loadConstant(3), 32);
    assertEquals(Arrays.asList(1, 2, 1), project(in, false, INT, pmod));
    Function<ProgramBuilder, Integer> minByMinusOne = b -> b.emitNew(Opcode.REM_INT,
        b.loadColumn(0), b.loadConstant(-1), 32);
    assertEquals(Arrays.asList(0, 0, 0), project(in, false, INT, minByMinusOne));
  }

  /**
   * LONG remainders on both sides of 2^32, where generated kernels switch between the unsigned
   * 32-bit remainder and the 64-bit one: every pair of these dividends and divisors, as Java's
   * {@code %} gives them (PMOD as Math.floorMod for a positive divisor).
   */
  @Test
  void longRemaindersAcrossThirtyTwoBits() {
    long[] dividends = {0, 1, 7, -7, 4294967295L, 4294967296L, 4294967301L, -4294967296L,
        2147483647L, -2147483648L, Long.MAX_VALUE, Long.MIN_VALUE};
    long[] divisors = {3, -3, 1, -1, 4294967295L, 4294967296L, -4294967296L, 2147483648L,
        Long.MAX_VALUE, Long.MIN_VALUE};
    List<Object> values = new ArrayList<>();
    for (long x : dividends) {
      values.add(x);
    }
    Input in = new Input(LONG, values);
    for (long n : divisors) {
      List<Object> rem = new ArrayList<>();
      List<Object> pmod = new ArrayList<>();
      for (long x : dividends) {
        rem.add(x % n);
        pmod.add(n > 0 ? Math.floorMod(x, n) : null);
      }
      assertEquals(rem, project(in, false, LONG, b -> b.emitNew(Opcode.REM_INT,
          b.loadColumn(0), b.loadConstant(n), 64)), "x % " + n);
      if (n > 0) {
        assertEquals(pmod, project(in, false, LONG, b -> b.emitNew(Opcode.PMOD_INT,
            b.loadColumn(0), b.loadConstant(n), 64)), "pmod(x, " + n + ")");
      }
    }
  }

  @Test
  void floatComparisonsFollowSparkForNaNAndNegativeZero() {
    Input in = Input.of(ColumnType.DOUBLE, Double.NaN, -0.0, 1.0, Double.POSITIVE_INFINITY, null);
    long nan = Double.doubleToRawLongBits(Double.NaN);
    long zero = Double.doubleToRawLongBits(0.0);
    assertEquals(Arrays.asList(true, false, false, false, null), project(in, false, BOOL,
        b -> b.emitNew(Opcode.CMP_F64, b.loadColumn(0), b.loadConstant(nan), 0)));
    assertEquals(Arrays.asList(false, true, false, false, null), project(in, false, BOOL,
        b -> b.emitNew(Opcode.CMP_F64, b.loadColumn(0), b.loadConstant(zero), 0)));
    // NaN is larger than infinity.
    assertEquals(Arrays.asList(true, false, false, false, null), project(in, false, BOOL,
        b -> b.emitNew(Opcode.CMP_F64, b.loadColumn(0),
            b.loadConstant(Double.doubleToRawLongBits(Double.POSITIVE_INFINITY)),
            Comparison.GT.code())));
  }

  @Test
  void normalizingGivesOneNaNAndNoNegativeZero() {
    Input in = Input.of(ColumnType.DOUBLE, Double.longBitsToDouble(0x7ff0000000000123L), -0.0,
        1.5, null);
    List<Object> out = project(in, false, LONG, b -> b.emitNew(Opcode.CAST_F64_TO_INT,
        b.emitNew(Opcode.NORMALIZE_F64, b.loadColumn(0), 0, 0), 0, 64));
    assertEquals(Arrays.asList(0L, 0L, 1L, null), out);
    List<Object> bits = project(in, false, ColumnType.DOUBLE,
        b -> b.emitNew(Opcode.NORMALIZE_F64, b.loadColumn(0), 0, 0));
    assertEquals(Double.doubleToRawLongBits(Double.NaN),
        Double.doubleToRawLongBits((Double) bits.get(0)));
    assertEquals(Double.doubleToRawLongBits(0.0), Double.doubleToRawLongBits((Double) bits.get(1)));
    Input f = Input.of(ColumnType.FLOAT, Float.intBitsToFloat(0xffc00001), -0.0f);
    List<Object> fbits = project(f, false, ColumnType.FLOAT,
        b -> b.emitNew(Opcode.NORMALIZE_F32, b.loadColumn(0), 0, 0));
    assertEquals(Float.floatToRawIntBits(Float.NaN), Float.floatToRawIntBits((Float) fbits.get(0)));
    assertEquals(0, Float.floatToRawIntBits((Float) fbits.get(1)));
  }

  @Test
  void doubleDivisionByZeroIsNull() {
    Input in = Input.of(ColumnType.DOUBLE, 1.0, -0.0, 6.0);
    assertEquals(Arrays.asList(null, null, null), project(in, false, ColumnType.DOUBLE,
        b -> b.emitNew(Opcode.DIV_F64, b.loadColumn(0), b.loadConstant(
            Double.doubleToRawLongBits(-0.0)), 0)));
    assertEquals(Arrays.asList(0.5, -0.0, 3.0), project(in, false, ColumnType.DOUBLE,
        b -> b.emitNew(Opcode.DIV_F64, b.loadColumn(0), b.loadConstant(
            Double.doubleToRawLongBits(2.0)), 0)));
  }

  @Test
  void threeValuedLogic() {
    List<Input> in = List.of(Input.of(BOOL, true, true, true, false, false, false, null, null, null),
        Input.of(BOOL, true, false, null, true, false, null, true, false, null));
    List<List<Object>> out = run(in, false, List.of(BOOL, BOOL, BOOL), false, b -> {
      int x = b.loadColumn(0);
      int y = b.loadColumn(1);
      return new int[] {b.emitNew(Opcode.AND, x, y, 0), b.emitNew(Opcode.OR, x, y, 0),
          b.emitNew(Opcode.NOT, x, 0, 0)};
    });
    assertEquals(Arrays.asList(true, false, null, false, false, false, null, false, null),
        out.get(0));
    assertEquals(Arrays.asList(true, true, true, true, false, null, true, null, null), out.get(1));
    assertEquals(Arrays.asList(false, false, false, true, true, true, null, null, null),
        out.get(2));
  }

  @Test
  void filterKeepsOnlyTrueRowsInOrder() {
    List<Object> values = new ArrayList<>();
    for (long i = 0; i < 5000; i++) {
      values.add(i % 7 == 3 ? null : i);
    }
    List<List<Object>> out = run(List.of(new Input(LONG, values)), false, List.of(LONG), true,
        b -> {
          int x = b.loadColumn(0);
          int rem = b.emitNew(Opcode.REM_INT, x, b.loadConstant(2), 64);
          int keep = b.emitNew(Opcode.CMP_INT, rem, b.loadConstant(0), 0);
          return new int[] {x, keep};
        });
    List<Object> expected = values.stream().filter(v -> v != null && (Long) v % 2 == 0).toList();
    assertEquals(expected, out.get(0));
  }

  @Test
  void decimalsRescaleHalfUpAndOverflowToNull() {
    ColumnType dec = ColumnType.decimal(5, 3);
    Input in = Input.of(dec, new BigDecimal("12.345"), new BigDecimal("-12.345"),
        new BigDecimal("99.995"), null);
    ColumnType out = ColumnType.decimal(4, 2);
    List<Object> r = project(in, false, out, b -> b.emitNew(Opcode.RESCALE_DECIMAL,
        b.loadColumn(0), (3 << 8) | 2, 4));
    assertEquals(Arrays.asList(new BigDecimal("12.35"), new BigDecimal("-12.35"), null, null), r);
  }

  @Test
  void datePartsOfTheProlepticGregorianCalendar() {
    // 1970-01-01, 2000-02-29, 1900-03-01, 0001-01-01, 2262-04-11
    Input in = Input.of(ColumnType.DATE, 0, 11016, -25508, -719162, 106751);
    List<List<Object>> out = run(List.of(in), false, List.of(INT, INT, INT), false, b -> {
      int d = b.loadColumn(0);
      return new int[] {b.emitNew(Opcode.YEAR, d, 0, 0), b.emitNew(Opcode.MONTH, d, 0, 0),
          b.emitNew(Opcode.DAY_OF_MONTH, d, 0, 0)};
    });
    assertEquals(Arrays.asList(1970, 2000, 1900, 1, 2262), out.get(0));
    assertEquals(Arrays.asList(1, 2, 3, 1, 4), out.get(1));
    assertEquals(Arrays.asList(1, 29, 1, 1, 11), out.get(2));
  }

  @Test
  void stringPredicatesAndLengthWorkOnUtf8Bytes() {
    Input in = Input.of(ColumnType.STRING, "grüße", "", "grün", null, "日本語");
    List<List<Object>> out = run(List.of(in), false, List.of(BOOL, BOOL, INT, BOOL), false, b -> {
      int s = b.loadColumn(0);
      return new int[] {
          b.emitNew(Opcode.STARTS_WITH, s, b.loadString("grü".getBytes(UTF8)), 0),
          b.emitNew(Opcode.CONTAINS, s, b.loadString("".getBytes(UTF8)), 0),
          b.emitNew(Opcode.LENGTH, s, 0, 0),
          b.emitNew(Opcode.CMP_STRING, s, b.loadString("grün".getBytes(UTF8)),
              Comparison.LT.code())};
    });
    assertEquals(Arrays.asList(true, false, true, null, false), out.get(0));
    assertEquals(Arrays.asList(true, true, true, null, true), out.get(1));
    assertEquals(Arrays.asList(5, 0, 4, null, 3), out.get(2));
    // "grüße" < "grün": ß (0xC3 0x9F) sorts before n (0x6E)? No: 0xC3 > 0x6E, so false.
    assertEquals(Arrays.asList(false, true, false, null, false), out.get(3));
  }

  /**
   * Spark's order of strings (UTF8String.binaryCompare): unsigned bytes, then length. The pairs
   * differ at each place of an 8-byte step (the kernels compare eight bytes at a time: the first
   * byte of a step, the last, the first of the second and third steps), by a byte of 0x80 or
   * more where a signed comparison would order them the other way, or by length alone.
   */
  @Test
  void stringsCompareByUnsignedBytesThenLength() {
    Input x = Input.of(ColumnType.STRING, "MFGR#2221", "MFGR#12", "Tessera on GPUs",
        "abcdefgh", "abcdefgh\u00e9", "", "", null, "abcdefg1abcdefg1X", "b", "1234567\u00e9",
        "MFGR#12", "\u00e9");
    Input y = Input.of(ColumnType.STRING, "MFGR#2228", "MFGR#12", "Tessera on GPUS",
        "abcdefgh!", "abcdefghz", "a", "", "a", "abcdefg1abcdefg1Y", "abcdefghij", "1234567e",
        "MFGR#13", "e");
    List<List<Object>> out = run(List.of(x, y), false, List.of(BOOL, BOOL, BOOL), false, b -> {
      int l = b.loadColumn(0);
      int r = b.loadColumn(1);
      return new int[] {b.emitNew(Opcode.CMP_STRING, l, r, Comparison.EQ.code()),
          b.emitNew(Opcode.CMP_STRING, l, r, Comparison.LT.code()),
          b.emitNew(Opcode.CMP_STRING, l, r, Comparison.GT.code())};
    });
    assertEquals(Arrays.asList(false, true, false, false, false, false, true, null, false,
        false, false, false, false), out.get(0));
    assertEquals(Arrays.asList(true, false, false, true, false, true, false, null, true, false,
        false, true, false), out.get(1));
    assertEquals(Arrays.asList(false, false, true, false, true, false, false, null, false, true,
        true, false, true), out.get(2));
  }

  /**
   * STARTS_WITH, ENDS_WITH and CONTAINS with patterns of 7 to 12 bytes (the kernels compare eight
   * bytes a step): a miss at a pattern's last byte, in its second step, by case, and a match of
   * CONTAINS after a near miss that differs at its eighth byte.
   */
  @Test
  void stringPredicatesMatchPatternsLongerThanAStep() {
    Input in = Input.of(ColumnType.STRING, "Tessera on GPUs", "Tessera on GPUS", "Tessera on g",
        "abcdefgh", "xxabcdefghyy", "abcdefgXabcdefgh", "abcdefg", "", null,
        "Tessera on G\u00e9 on GPUs", "zzzzzzzzabcdefgh\u00e9");
    List<List<Object>> out = run(List.of(in), false, List.of(BOOL, BOOL, BOOL), false, b -> {
      int s = b.loadColumn(0);
      return new int[] {
          b.emitNew(Opcode.STARTS_WITH, s, b.loadString("Tessera on G".getBytes(UTF8)), 0),
          b.emitNew(Opcode.ENDS_WITH, s, b.loadString("on GPUs".getBytes(UTF8)), 0),
          b.emitNew(Opcode.CONTAINS, s, b.loadString("abcdefgh".getBytes(UTF8)), 0)};
    });
    assertEquals(Arrays.asList(true, true, false, false, false, false, false, false, null, true,
        false), out.get(0));
    assertEquals(Arrays.asList(true, false, false, false, false, false, false, false, null, true,
        false), out.get(1));
    assertEquals(Arrays.asList(false, false, false, true, true, true, false, false, null, false,
        true), out.get(2));
  }

  @Test
  void projectedStringsAreCopiedWithNullsAndCaseChoices() {
    Input in = Input.of(ColumnType.STRING, "a", null, "ccc", "");
    // CASE WHEN s IS NULL THEN 'none' ELSE s END, and s itself
    List<List<Object>> out = run(List.of(in), false, List.of(ColumnType.STRING, ColumnType.STRING),
        false, b -> {
          int s = b.loadColumn(0);
          int isNull = b.emitNew(Opcode.IS_NULL, s, 0, 0);
          int none = b.loadString("none".getBytes(UTF8));
          return new int[] {b.emitNew(Opcode.SELECT, isNull, none, s), s};
        });
    assertEquals(Arrays.asList("a", "none", "ccc", ""), out.get(0));
    assertEquals(Arrays.asList("a", null, "ccc", ""), out.get(1));
  }

  @Test
  void castsFollowJavaAndSparkRules() {
    Input in = Input.of(ColumnType.DOUBLE, 3.99, -3.99, Double.NaN, 1e20, null);
    assertEquals(Arrays.asList(3, -3, 0, Integer.MAX_VALUE, null), project(in, false, INT,
        b -> b.emitNew(Opcode.CAST_F64_TO_INT, b.loadColumn(0), 0, 32)));
    assertEquals(Arrays.asList((byte) 3, (byte) -3, (byte) 0, (byte) -1, null),
        project(in, false, ColumnType.BYTE,
            b -> b.emitNew(Opcode.CAST_F64_TO_INT, b.loadColumn(0), 0, 8)));
    RowErrorException e = assertThrows(RowErrorException.class, () -> project(in, true, INT,
        b -> b.emitNew(Opcode.CAST_F64_TO_INT, b.loadColumn(0), 0, 32)));
    assertEquals(RowError.CAST_OVERFLOW, e.error());
    assertEquals(2, e.row()); // NaN is the first value out of range
  }

  @Test
  void inSetWithAndWithoutNullInTheList() {
    Input in = Input.of(LONG, 1L, 5L, null, 9L);
    List<Object> plain = project(in, false, BOOL, b -> {
      int first = b.constant(1);
      b.constant(9);
      return b.emitNew(Opcode.IN_SET_INT, b.loadColumn(0), first, 2);
    });
    assertEquals(Arrays.asList(true, false, null, true), plain);
    List<Object> withNull = project(in, false, BOOL, b -> {
      int first = b.constant(1);
      b.constant(9);
      return b.emitNew(Opcode.IN_SET_INT, b.loadColumn(0), first, 2 | 0x10000);
    });
    assertEquals(Arrays.asList(true, null, null, true), withNull);
  }

  @Test
  void emptyInputGivesEmptyOutput() {
    Input in = Input.of(LONG);
    List<List<Object>> out = run(List.of(in), false, List.of(LONG), true, b -> {
      int x = b.loadColumn(0);
      return new int[] {x, b.emitNew(Opcode.IS_NOT_NULL, x, 0, 0)};
    });
    assertEquals(List.of(), out.get(0));
  }

  private static final java.nio.charset.Charset UTF8 = java.nio.charset.StandardCharsets.UTF_8;
}
