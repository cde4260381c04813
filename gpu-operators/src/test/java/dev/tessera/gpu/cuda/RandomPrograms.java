package dev.tessera.gpu.cuda;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
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
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Random, well-typed expression programs over given input columns, for differential tests of the
 * backends. Every register has a SQL type (a {@link ColumnType}); each step picks an instruction,
 * takes operands of the types it needs (existing registers, preferably, or fresh constants and
 * NULLs) and records its result's type. Now and then a result overwrites its first operand, to
 * exercise dst == a. The filter is a boolean register (or none), the outputs are random registers
 * with their types.
 *
 * <p>{@link #generateProbing} also probes small random join tables (PROBE, then LOAD_BUILD of
 * their payloads), whose build columns it returns with the program.
 */
final class RandomPrograms {
  private RandomPrograms() {}

  /** Join key types besides decimals: what PROBE compares (64-bit integers or bytes). */
  static final List<ColumnType> KEY_TYPES = List.of(ColumnType.BYTE, ColumnType.SHORT,
      ColumnType.INT, ColumnType.LONG, ColumnType.DATE, ColumnType.TIMESTAMP, ColumnType.STRING);
  private static final int MAX_TABLES = 3;
  private static final int MAX_BUILD_ROWS = 12;

  /** A join table's build side: its schema and columns (keys, then payload) as Java values. */
  record JoinBuild(JoinTableSchema schema, List<List<Object>> columns) {
    /** Builds the table on {@code backend}; the caller closes it. */
    JoinTable build(Backend backend, GpuStream stream) {
      List<ColumnType> types = new ArrayList<>(schema.keyTypes());
      types.addAll(schema.payloadTypes());
      List<HostColumn> host = new ArrayList<>();
      for (int c = 0; c < types.size(); c++) {
        host.add(TestColumns.build(types.get(c), columns.get(c), backend.stagingAllocator()));
      }
      try (ColumnBatch<HostColumn> h = new ColumnBatch<>(host, columns.get(0).size());
          ColumnBatch<DeviceColumn> d =
              ColumnTransfer.toDeviceAsync(h, backend.deviceMemory(), stream)) {
        stream.synchronize();
        return backend.hashJoinKernel().build(schema, d, backend.deviceMemory(), stream);
      }
    }
  }

  /** A program and the build sides of the join tables it probes (by index). */
  record Probing(Program program, List<JoinBuild> tables) {
    /** Builds every table on {@code backend}; the caller closes them. */
    List<JoinTable> buildTables(Backend backend, GpuStream stream) {
      List<JoinTable> built = new ArrayList<>();
      try {
        for (JoinBuild t : tables) {
          built.add(t.build(backend, stream));
        }
      } catch (RuntimeException e) {
        built.forEach(JoinTable::close);
        throw e;
      }
      return built;
    }
  }

  /**
   * As {@link #generate}, but the program may also probe join tables (up to three, of up to a
   * dozen rows with keys from the small ranges RandomBatches draws from, so probes do match).
   */
  static Probing generateProbing(List<ColumnType> inputTypes, boolean ansi, long seed) {
    Generator g = new Generator(inputTypes, ansi, new Random(seed));
    g.probes = true;
    Program program = g.generate();
    return new Probing(program, List.copyOf(g.joinTables));
  }

  static final List<ColumnType> INTEGERS =
      List.of(ColumnType.BYTE, ColumnType.SHORT, ColumnType.INT, ColumnType.LONG);
  /** Types whose values CMP_INT, IN_SET_INT and EQ_NULL_SAFE kind 0 compare as integers. */
  static final List<ColumnType> INTEGER_LIKE = List.of(ColumnType.BOOLEAN, ColumnType.BYTE,
      ColumnType.SHORT, ColumnType.INT, ColumnType.LONG, ColumnType.DATE, ColumnType.TIMESTAMP);
  private static final List<ColumnType> FLOATS = List.of(ColumnType.FLOAT, ColumnType.DOUBLE);
  private static final String[] STRING_CONSTANTS = {"", "a", "x", "xx", "Tessera", "ess", "grü",
      "ße", "日本", "テキスト", "\uD83D\uDE80", "1", "7", "row", "comma,", "Tessera on GPUs",
      "MFGR#2221", "grüße, grü"};
  private static final float[] FLOAT_SPECIALS = {Float.NaN, -0.0f, 0.0f, 1.0f, -1.5f, 0.5f,
      Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.MIN_VALUE, Float.MAX_VALUE, 3e9f,
      -3e9f, 1e19f, 127.5f, -128.5f, 2.5f};
  private static final double[] DOUBLE_SPECIALS = {Double.NaN, -0.0, 0.0, 1.0, -1.5, 0.5,
      Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE, 3e9,
      -3e9, 9.3e18, -9.3e18, 9.223372036854775807e18, 32767.5, -32768.9, 2.5};
  /**
   * Registers the main steps may fill. A step adds at most 4 registers, the closing ANSI steps at
   * most 9 and the filter at most 3, and a join's conjunct 6 more (a probe, 3 payloads, its NULL
   * test and the AND), so every program stays within Program.MAX_REGISTERS.
   */
  private static final int REGISTER_BUDGET = Program.MAX_REGISTERS - 20;
  private static final int MAX_OUTPUTS = 6;
  private static final int MAX_SET_SIZE = 6;

  /**
   * A wide projection: {@code outputs} outputs, each a load of a random input column (columns
   * repeat), kept where the first column is not NULL or, for half the seeds, unfiltered. Every
   * output holds its buffers' addresses through phase B of a generated kernel: past about 20
   * outputs they need more registers than a kernel may take.
   */
  static Program wideProjection(List<ColumnType> inputTypes, int outputs, long seed) {
    Random random = new Random(seed);
    ProgramBuilder b = new ProgramBuilder(inputTypes, random.nextBoolean());
    List<Program.Output> written = new ArrayList<>();
    for (int o = 0; o < outputs; o++) {
      int c = random.nextInt(inputTypes.size());
      written.add(new Program.Output(b.loadColumn(c), inputTypes.get(c)));
    }
    int filter = random.nextBoolean() ? -1
        : b.emitNew(Opcode.IS_NOT_NULL, b.loadColumn(0), 0, 0);
    return b.build(filter, written);
  }

  /** A program over columns of {@code inputTypes}, from {@code seed}. */
  static Program generate(List<ColumnType> inputTypes, boolean ansi, long seed) {
    return new Generator(inputTypes, ansi, new Random(seed)).generate();
  }

  static int bits(ColumnType type) {
    return switch (type.id()) {
      case BOOLEAN, BYTE -> 8;
      case SHORT -> 16;
      case INT, DATE -> 32;
      default -> 64;
    };
  }

  private static final class Generator {
    private final List<ColumnType> inputTypes;
    private final Random random;
    private final ProgramBuilder builder;
    private final boolean builderAnsi;
    /** The SQL type of each register, by register number. */
    private final List<ColumnType> types = new ArrayList<>();
    /** The register the last instruction wrote. */
    private int last = -1;
    /** Whether steps may probe join tables, and the tables probed so far. */
    private boolean probes;
    private final List<JoinBuild> joinTables = new ArrayList<>();

    Generator(List<ColumnType> inputTypes, boolean ansi, Random random) {
      this.inputTypes = inputTypes;
      this.random = random;
      this.builder = new ProgramBuilder(inputTypes, ansi);
      this.builderAnsi = ansi;
    }

    Program generate() {
      for (int c = 0; c < inputTypes.size(); c++) {
        if (random.nextInt(8) != 0) {
          typed(builder.loadColumn(c), inputTypes.get(c));
        }
      }
      int steps = 1 + random.nextInt(25);
      for (int i = 0; i < steps && types.size() < REGISTER_BUDGET; i++) {
        step();
      }
      List<Program.Output> outputs = new ArrayList<>();
      if (builderAnsi && random.nextBoolean()) {
        // Errors matter only where they reach the filter or an output: end some ANSI programs
        // with instructions that can raise one, and project the last result.
        for (int i = 1 + random.nextInt(3); i > 0; i--) {
          riskyStep();
        }
        outputs.add(new Program.Output(last, types.get(last)));
      }
      int filter = -1;
      if (random.nextInt(4) != 0) {
        filter = random.nextInt(3) == 0 ? comparison() : operand(ColumnType.BOOLEAN);
      }
      if (probes && filter >= 0 && random.nextInt(3) == 0) {
        // A join's conjunct, as Spark's inner joins compile: a probe that only the filter's last
        // AND reads (the generated kernels guard it, and may hold the rows that reach it).
        int row = probe();
        if (row >= 0) {
          filter = builder.emitNew(Opcode.AND, filter,
              typed(builder.emitNew(Opcode.IS_NOT_NULL, row, 0, 0), ColumnType.BOOLEAN), 0);
        }
      }
      int outputCount = random.nextInt(10) == 0 ? 0 : 1 + random.nextInt(MAX_OUTPUTS);
      for (int o = 0; o < outputCount && !types.isEmpty(); o++) {
        int r = recent(types.size());
        outputs.add(new Program.Output(r, types.get(r)));
      }
      return builder.build(filter, outputs);
    }

    /**
     * An index below {@code n}, biased towards the end: later registers hold deeper expressions,
     * so choosing them makes errors and nulls reach the filter and the outputs more often.
     */
    private int recent(int n) {
      return Math.max(random.nextInt(n), random.nextInt(n));
    }

    // ---- registers ------------------------------------------------------------------------------

    private int typed(int register, ColumnType type) {
      if (register != types.size()) {
        throw new IllegalStateException("register numbering out of step");
      }
      types.add(type);
      last = register;
      return register;
    }

    /** Emits {@code op} with a result of {@code type}; sometimes into register a itself. */
    private int result(Opcode op, ColumnType type, int a, int b, int c) {
      if (a >= 0 && a < types.size() && types.get(a).equals(type) && random.nextInt(6) == 0) {
        builder.emit(op, a, a, b, c);
        last = a;
        return a;
      }
      return typed(builder.emitNew(op, a, b, c), type);
    }

    /** An existing register of {@code type} (usually), else a fresh constant or NULL of it. */
    private int operand(ColumnType type) {
      List<Integer> candidates = new ArrayList<>();
      for (int r = 0; r < types.size(); r++) {
        if (types.get(r).equals(type)) {
          candidates.add(r);
        }
      }
      if (!candidates.isEmpty() && random.nextInt(7) != 0) {
        return candidates.get(recent(candidates.size()));
      }
      if (random.nextInt(12) == 0) {
        return typed(builder.loadNull(), type);
      }
      if (type.isString()) {
        String s = STRING_CONSTANTS[random.nextInt(STRING_CONSTANTS.length)];
        return typed(builder.loadString(s.getBytes(StandardCharsets.UTF_8)), type);
      }
      return typed(builder.loadConstant(constant(type)), type);
    }

    /** A type from {@code options}, preferring those some register already has. */
    private ColumnType pick(List<ColumnType> options) {
      List<ColumnType> present = new ArrayList<>();
      for (ColumnType t : options) {
        if (types.contains(t)) {
          present.add(t);
        }
      }
      List<ColumnType> from = !present.isEmpty() && random.nextInt(7) != 0 ? present : options;
      return from.get(random.nextInt(from.size()));
    }

    /** The type of a random existing register, or a random type. */
    private ColumnType anyType() {
      if (!types.isEmpty() && random.nextInt(5) != 0) {
        return types.get(random.nextInt(types.size()));
      }
      return randomType();
    }

    private ColumnType randomType() {
      return switch (random.nextInt(11)) {
        case 0 -> ColumnType.BOOLEAN;
        case 1 -> ColumnType.BYTE;
        case 2 -> ColumnType.SHORT;
        case 3 -> ColumnType.INT;
        case 4 -> ColumnType.LONG;
        case 5 -> ColumnType.FLOAT;
        case 6 -> ColumnType.DOUBLE;
        case 7 -> ColumnType.DATE;
        case 8 -> ColumnType.TIMESTAMP;
        case 9 -> randomDecimal(ColumnType.MAX_DECIMAL_PRECISION);
        default -> ColumnType.STRING;
      };
    }

    private ColumnType randomDecimal(int maxPrecision) {
      int precision = 1 + random.nextInt(maxPrecision);
      return ColumnType.decimal(precision, random.nextInt(precision + 1));
    }

    private ColumnType decimalOperandType(int maxPrecision) {
      List<ColumnType> decimals = new ArrayList<>();
      for (ColumnType t : types) {
        if (t.id() == TypeId.DECIMAL && t.precision() <= maxPrecision) {
          decimals.add(t);
        }
      }
      if (!decimals.isEmpty() && random.nextInt(4) != 0) {
        return decimals.get(random.nextInt(decimals.size()));
      }
      return randomDecimal(maxPrecision);
    }

    // ---- constants ------------------------------------------------------------------------------

    /** A constant's bits for a register of {@code type}: small values, edges, or anything. */
    private long constant(ColumnType type) {
      int kind = random.nextInt(4);
      return switch (type.id()) {
        case BOOLEAN -> random.nextInt(2);
        case BYTE, SHORT, INT, LONG -> {
          int width = bits(type);
          long min = width == 64 ? Long.MIN_VALUE : -(1L << (width - 1));
          long max = width == 64 ? Long.MAX_VALUE : (1L << (width - 1)) - 1;
          yield switch (kind) {
            case 0, 1 -> random.nextInt(11) - 5;
            case 2 -> new long[] {min, max, -1, 0, 1, 2, min + 1, max - 1}[random.nextInt(8)];
            default -> width == 64 ? random.nextLong()
                : (random.nextLong() << (64 - width)) >> (64 - width);
          };
        }
        case FLOAT -> {
          float f = kind < 2 ? FLOAT_SPECIALS[random.nextInt(FLOAT_SPECIALS.length)]
              : kind == 2 ? random.nextInt(41) - 20 : (random.nextFloat() - 0.5f) * 1e6f;
          yield Float.floatToRawIntBits(f) & 0xffffffffL;
        }
        case DOUBLE -> {
          double d = kind < 2 ? DOUBLE_SPECIALS[random.nextInt(DOUBLE_SPECIALS.length)]
              : kind == 2 ? random.nextInt(41) - 20 : random.nextGaussian() * 1e9;
          yield Double.doubleToRawLongBits(d);
        }
        case DATE -> kind < 2 ? random.nextInt(30_000) - 1000 : random.nextInt(200_000) - 100_000;
        case TIMESTAMP -> kind < 2 ? random.nextInt(1000) : random.nextLong() / 1000;
        case DECIMAL -> {
          long bound = pow10(type.precision());
          yield switch (kind) {
            case 0, 1 -> (random.nextInt(2001) - 1000) % bound;
            case 2 -> random.nextBoolean() ? bound - 1 : 1 - bound;
            default -> random.nextLong() % bound;
          };
        }
        case STRING -> throw new IllegalArgumentException("strings are LOAD_STRING_CONST");
      };
    }

    private static long pow10(int n) {
      long p = 1;
      for (int i = 0; i < n; i++) {
        p *= 10;
      }
      return p;
    }

    // ---- steps ----------------------------------------------------------------------------------

    private void step() {
      if (probes && random.nextInt(8) == 0 && types.size() < REGISTER_BUDGET - 8) {
        probe();
        return;
      }
      switch (random.nextInt(21)) {
        case 0, 1 -> integerArithmetic();
        case 2 -> integerUnary();
        case 3 -> floatArithmetic();
        case 4 -> floatUnary();
        case 5 -> decimalArithmetic();
        case 6 -> rescale();
        case 7, 8 -> comparison();
        case 9 -> equalNullSafe();
        case 10 -> logic();
        case 11 -> nullTest();
        case 12 -> select();
        case 13 -> coalesce();
        case 14, 15 -> cast();
        case 16 -> datePart();
        case 17 -> stringPredicate();
        case 18 -> stringLength();
        case 19 -> inSet();
        default -> move();
      }
    }

    /** An instruction that can raise an ANSI error. */
    private void riskyStep() {
      switch (random.nextInt(5)) {
        case 0, 1 -> integerArithmetic();
        case 2 -> decimalArithmetic();
        case 3 -> floatArithmetic();
        default -> cast();
      }
    }

    private void integerArithmetic() {
      ColumnType t = pick(INTEGERS);
      int a = operand(t);
      int b = operand(t);
      Opcode op = new Opcode[] {Opcode.ADD_INT, Opcode.SUB_INT, Opcode.MUL_INT, Opcode.REM_INT,
          Opcode.PMOD_INT}[random.nextInt(5)];
      result(op, t, a, b, bits(t));
    }

    private void integerUnary() {
      ColumnType t = pick(INTEGERS);
      result(random.nextBoolean() ? Opcode.NEG_INT : Opcode.ABS_INT, t, operand(t), 0, bits(t));
    }

    private void floatArithmetic() {
      ColumnType t = pick(FLOATS);
      boolean f32 = t.id() == TypeId.FLOAT;
      int a = operand(t);
      int b = operand(t);
      Opcode op = f32
          ? new Opcode[] {Opcode.ADD_F32, Opcode.SUB_F32, Opcode.MUL_F32, Opcode.DIV_F32,
              Opcode.REM_F32, Opcode.PMOD_F32}[random.nextInt(6)]
          : new Opcode[] {Opcode.ADD_F64, Opcode.SUB_F64, Opcode.MUL_F64, Opcode.DIV_F64,
              Opcode.REM_F64, Opcode.PMOD_F64}[random.nextInt(6)];
      result(op, t, a, b, 0);
    }

    private void floatUnary() {
      ColumnType t = pick(FLOATS);
      boolean f32 = t.id() == TypeId.FLOAT;
      Opcode op = switch (random.nextInt(3)) {
        case 0 -> f32 ? Opcode.NEG_F32 : Opcode.NEG_F64;
        case 1 -> f32 ? Opcode.ABS_F32 : Opcode.ABS_F64;
        default -> f32 ? Opcode.NORMALIZE_F32 : Opcode.NORMALIZE_F64;
      };
      result(op, t, operand(t), 0, 0);
    }

    private void decimalArithmetic() {
      ColumnType x = decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION);
      int a = operand(x);
      if (random.nextBoolean()) {
        // ADD / SUB: the same scale on both sides.
        int precision = Math.max(1, x.scale()) + random.nextInt(
            ColumnType.MAX_DECIMAL_PRECISION - Math.max(1, x.scale()) + 1);
        ColumnType y = ColumnType.decimal(precision, x.scale());
        int b = operand(y);
        int resultPrecision = Math.min(ColumnType.MAX_DECIMAL_PRECISION,
            Math.max(x.precision(), y.precision()) + 1);
        result(random.nextBoolean() ? Opcode.ADD_DECIMAL : Opcode.SUB_DECIMAL,
            ColumnType.decimal(resultPrecision, x.scale()), a, b, resultPrecision);
      } else {
        // MUL: the result's scale is the sum of the scales, at most 18.
        ColumnType y = decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION);
        if (x.scale() + y.scale() > ColumnType.MAX_DECIMAL_PRECISION) {
          y = ColumnType.decimal(y.precision(), 0);
        }
        int b = operand(y);
        int scale = x.scale() + y.scale();
        int resultPrecision = Math.max(Math.max(1, scale),
            Math.min(ColumnType.MAX_DECIMAL_PRECISION, x.precision() + y.precision() + 1));
        result(Opcode.MUL_DECIMAL, ColumnType.decimal(resultPrecision, scale), a, b,
            resultPrecision);
      }
    }

    private void rescale() {
      ColumnType from = decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION);
      ColumnType to = randomDecimal(ColumnType.MAX_DECIMAL_PRECISION);
      result(Opcode.RESCALE_DECIMAL, to, operand(from), (from.scale() << 8) | to.scale(),
          to.precision());
    }

    /** A comparison of two values of one type; returns its boolean register. */
    private int comparison() {
      ColumnType t = anyType();
      int a = operand(t);
      int b = operand(t);
      Opcode op = switch (t.id()) {
        case FLOAT -> Opcode.CMP_F32;
        case DOUBLE -> Opcode.CMP_F64;
        case STRING -> Opcode.CMP_STRING;
        default -> Opcode.CMP_INT;
      };
      return result(op, ColumnType.BOOLEAN, a, b, random.nextInt(Comparison.values().length));
    }

    private void equalNullSafe() {
      ColumnType t = anyType();
      int a = operand(t);
      int b = operand(t);
      int kind = switch (t.id()) {
        case FLOAT -> 1;
        case DOUBLE -> 2;
        case STRING -> 3;
        default -> 0;
      };
      result(Opcode.EQ_NULL_SAFE, ColumnType.BOOLEAN, a, b, kind);
    }

    private void logic() {
      int a = operand(ColumnType.BOOLEAN);
      switch (random.nextInt(3)) {
        case 0 -> result(Opcode.AND, ColumnType.BOOLEAN, a, operand(ColumnType.BOOLEAN), 0);
        case 1 -> result(Opcode.OR, ColumnType.BOOLEAN, a, operand(ColumnType.BOOLEAN), 0);
        default -> result(Opcode.NOT, ColumnType.BOOLEAN, a, 0, 0);
      }
    }

    private void nullTest() {
      int a = operand(anyType());
      result(random.nextBoolean() ? Opcode.IS_NULL : Opcode.IS_NOT_NULL, ColumnType.BOOLEAN, a,
          0, 0);
    }

    private void select() {
      int condition = operand(ColumnType.BOOLEAN);
      ColumnType t = anyType();
      int b = operand(t);
      int c = operand(t);
      typed(builder.emitNew(Opcode.SELECT, condition, b, c), t);
    }

    private void coalesce() {
      ColumnType t = anyType();
      int a = operand(t);
      result(Opcode.COALESCE, t, a, operand(t), 0);
    }

    /**
     * PROBE of a table (a fresh one, or one probed before with the same key types) with one or
     * two key registers, then LOAD_BUILD of some of its payload columns: the probe's register,
     * or -1 where no table could be probed (a NULL test instead).
     */
    private int probe() {
      int keyCount = random.nextInt(3) == 0 ? 2 : 1;
      int[] keys = new int[keyCount];
      List<ColumnType> keyTypes = new ArrayList<>();
      for (int k = 0; k < keyCount; k++) {
        ColumnType t = random.nextInt(8) == 0 ? decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION)
            : pick(KEY_TYPES);
        keys[k] = operand(t);
        // An integer key may meet a wider table key: PROBE compares 64-bit values.
        keyTypes.add(INTEGERS.contains(t) && random.nextInt(3) == 0 ? ColumnType.LONG : t);
      }
      int table = -1;
      for (int i = 0; i < joinTables.size(); i++) {
        if (joinTables.get(i).schema().keyTypes().equals(keyTypes) && random.nextBoolean()) {
          table = i;
        }
      }
      if (table < 0 && joinTables.size() < MAX_TABLES) {
        table = builder.table(newTable(keyTypes).schema());
      }
      if (table < 0) {
        nullTest();
        return -1;
      }
      int first = builder.constant(keys[0]);
      for (int k = 1; k < keyCount; k++) {
        builder.constant(keys[k]);
      }
      int row = typed(builder.emitNew(Opcode.PROBE, table, first, keyCount), ColumnType.INT);
      List<ColumnType> payload = joinTables.get(table).schema().payloadTypes();
      for (int c = 0; c < payload.size(); c++) {
        if (c == 0 || random.nextBoolean()) {
          typed(builder.emitNew(Opcode.LOAD_BUILD, table, row, c), payload.get(c));
        }
      }
      return row;
    }

    /** A new table's build side: random rows, repeated and NULL keys included; none sometimes. */
    private JoinBuild newTable(List<ColumnType> keyTypes) {
      List<ColumnType> payloadTypes = new ArrayList<>();
      for (int c = random.nextInt(4); c > 0; c--) {
        payloadTypes.add(randomType());
      }
      int rows = random.nextInt(6) == 0 ? 0 : 1 + random.nextInt(MAX_BUILD_ROWS);
      List<List<Object>> columns = new ArrayList<>();
      for (ColumnType t : keyTypes) {
        List<Object> values = new ArrayList<>();
        for (int r = 0; r < rows; r++) {
          values.add(random.nextInt(10) == 0 ? null : smallKey(t));
        }
        columns.add(values);
      }
      for (ColumnType t : payloadTypes) {
        columns.add(TestColumns.random(t, rows, 0.2, random.nextLong()));
      }
      JoinBuild build = new JoinBuild(new JoinTableSchema(keyTypes, payloadTypes), columns);
      joinTables.add(build);
      return build;
    }

    /** A key value where RandomBatches' small values and the constants often land. */
    private Object smallKey(ColumnType type) {
      int v = random.nextInt(21) - 10;
      return switch (type.id()) {
        case BYTE -> (byte) v;
        case SHORT -> (short) v;
        case INT -> v;
        case LONG -> (long) v;
        case DATE -> random.nextBoolean() ? v : random.nextInt(25_000) - 500;
        case TIMESTAMP -> (long) (random.nextBoolean() ? v : random.nextInt(1000));
        case DECIMAL -> new BigDecimal(BigInteger.valueOf(v), type.scale());
        case STRING -> STRING_CONSTANTS[random.nextInt(STRING_CONSTANTS.length)];
        default -> throw new IllegalArgumentException(type + " is not a join key type");
      };
    }

    private void move() {
      if (types.isEmpty()) {
        operand(randomType());
        return;
      }
      int a = random.nextInt(types.size());
      typed(builder.emitNew(Opcode.MOVE, a, 0, 0), types.get(a));
    }

    private void cast() {
      switch (random.nextInt(10)) {
        case 0 -> {
          List<ColumnType> sources = new ArrayList<>(INTEGERS);
          sources.add(ColumnType.BOOLEAN);
          ColumnType to = INTEGERS.get(random.nextInt(INTEGERS.size()));
          result(Opcode.CAST_INT_TO_INT, to, operand(pick(sources)), 0, bits(to));
        }
        case 1 -> {
          ColumnType to = FLOATS.get(random.nextInt(2));
          result(to.id() == TypeId.FLOAT ? Opcode.CAST_INT_TO_F32 : Opcode.CAST_INT_TO_F64, to,
              operand(pick(INTEGERS)), 0, 0);
        }
        case 2 -> {
          ColumnType from = pick(FLOATS);
          ColumnType to = INTEGERS.get(random.nextInt(INTEGERS.size()));
          result(from.id() == TypeId.FLOAT ? Opcode.CAST_F32_TO_INT : Opcode.CAST_F64_TO_INT, to,
              operand(from), 0, bits(to));
        }
        case 3 -> result(Opcode.CAST_F32_TO_F64, ColumnType.DOUBLE, operand(ColumnType.FLOAT),
            0, 0);
        case 4 -> result(Opcode.CAST_F64_TO_F32, ColumnType.FLOAT, operand(ColumnType.DOUBLE),
            0, 0);
        case 5 -> {
          ColumnType to = randomDecimal(ColumnType.MAX_DECIMAL_PRECISION);
          result(Opcode.CAST_INT_TO_DECIMAL, to, operand(pick(INTEGERS)), to.scale(),
              to.precision());
        }
        case 6 -> {
          ColumnType from = decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION);
          ColumnType to = INTEGERS.get(random.nextInt(INTEGERS.size()));
          result(Opcode.CAST_DECIMAL_TO_INT, to, operand(from), from.scale(), bits(to));
        }
        case 7 -> {
          // Opcode.java: a decimal of precision at most 15 converts exactly-rounded.
          ColumnType from = decimalOperandType(15);
          result(Opcode.CAST_DECIMAL_TO_F64, ColumnType.DOUBLE, operand(from), from.scale(), 0);
        }
        default -> {
          ColumnType from = pick(List.of(ColumnType.INT, ColumnType.LONG, ColumnType.BYTE,
              ColumnType.FLOAT, ColumnType.DOUBLE));
          Opcode op = switch (from.id()) {
            case FLOAT -> Opcode.CAST_F32_TO_BOOL;
            case DOUBLE -> Opcode.CAST_F64_TO_BOOL;
            default -> Opcode.CAST_INT_TO_BOOL;
          };
          result(op, ColumnType.BOOLEAN, operand(from), 0, 0);
        }
      }
    }

    private void datePart() {
      Opcode op = new Opcode[] {Opcode.YEAR, Opcode.MONTH, Opcode.DAY_OF_MONTH}[random.nextInt(3)];
      result(op, ColumnType.INT, operand(ColumnType.DATE), 0, 0);
    }

    private void stringPredicate() {
      int s = operand(ColumnType.STRING);
      int p = operand(ColumnType.STRING);
      Opcode op = new Opcode[] {Opcode.STARTS_WITH, Opcode.ENDS_WITH, Opcode.CONTAINS}[
          random.nextInt(3)];
      result(op, ColumnType.BOOLEAN, s, p, 0);
    }

    private void stringLength() {
      result(Opcode.LENGTH, ColumnType.INT, operand(ColumnType.STRING), 0, 0);
    }

    private void inSet() {
      List<ColumnType> options = new ArrayList<>(INTEGER_LIKE);
      options.add(decimalOperandType(ColumnType.MAX_DECIMAL_PRECISION));
      ColumnType t = pick(options);
      int a = operand(t);
      int count = random.nextInt(MAX_SET_SIZE + 1);
      long[] set = new long[count];
      for (int i = 0; i < count; i++) {
        set[i] = constant(t);
      }
      Arrays.sort(set);
      int first = builder.constant(count > 0 ? set[0] : 0);
      for (int i = 1; i < count; i++) {
        builder.constant(set[i]);
      }
      int hasNull = random.nextInt(4) == 0 ? 0x10000 : 0;
      result(Opcode.IN_SET_INT, ColumnType.BOOLEAN, a, first, count | hasNull);
    }
  }
}
