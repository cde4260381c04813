package dev.tessera.gpu.cuda;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;

/**
 * Checks a {@link Program} before the CUDA interpreter (native-kernels/include/tessera/program.cuh)
 * runs it. The device cannot throw Java's exceptions, and a bad address there is a fault that
 * ends the CUDA context, so everything the host interpreter would trip over, and everything that
 * would make the device read memory it does not own, is refused here with an
 * {@link IllegalArgumentException}:
 *
 * <ul>
 *   <li>unknown opcodes; registers outside the program's register count;
 *   <li>a register read before any instruction writes it (the host interpreter would read the
 *       previous row's value there, which no parallel evaluation can reproduce);
 *   <li>immediates outside what {@link Opcode} documents: constant and string-pool ranges, column
 *       numbers, widths (8, 16, 32, 64), comparison codes, decimal scales and precisions;
 *   <li>a string operand or string output whose register may hold something other than a string
 *       (its value would be taken for an address), and a non-string operand, filter or output
 *       whose register may hold a string (its value would be an address, which differs between
 *       backends);
 *   <li>join probes: PROBE's table number, key count and key registers (listed in the constants
 *       pool, each of its key column's kind; float and boolean keys are refused, as the host
 *       reference refuses them), and LOAD_BUILD's table number and payload column, with a build row that a
 *       PROBE of the same table wrote (so the device never reads past the table's rows). The
 *       tables given at run time must be CUDA tables of the program's schemas.
 * </ul>
 */
final class ProgramChecks {
  private ProgramChecks() {}

  /** The join tables a run is given: one CUDA table per Program.tables() entry, of its schema. */
  static void checkTables(Program program, List<JoinTable> tables) {
    if (tables.size() != program.tables().size()) {
      throw new IllegalArgumentException("the program probes " + program.tables().size()
          + " join tables, " + tables.size() + " were given");
    }
    for (int t = 0; t < tables.size(); t++) {
      JoinTableSchema schema = CudaJoinTable.of(tables.get(t)).schema();
      if (!schema.equals(program.tables().get(t))) {
        throw new IllegalArgumentException("join table " + t + " is " + schema
            + ", the program expects " + program.tables().get(t));
      }
    }
  }

  /** The checks HostInterpreter makes, and equal row counts (the kernel reads every row). */
  static void checkInputs(Program program, ColumnBatch<DeviceColumn> input) {
    if (input.columns().size() != program.inputTypes().size()) {
      throw new IllegalArgumentException("the program reads " + program.inputTypes().size()
          + " columns, the batch has " + input.columns().size());
    }
    for (int i = 0; i < input.columns().size(); i++) {
      DeviceColumn column = input.column(i);
      if (!column.type().equals(program.inputTypes().get(i))) {
        throw new IllegalArgumentException("input column " + i + " is " + column.type()
            + ", the program expects " + program.inputTypes().get(i));
      }
      if (column.rowCount() != input.rowCount()) {
        throw new IllegalArgumentException("input column " + i + " has " + column.rowCount()
            + " rows, the batch " + input.rowCount());
      }
    }
  }

  /** Bits of the widths integer instructions take (Opcode.java: c = 8, 16, 32 or 64). */
  private static final int[] WIDTHS = {8, 16, 32, 64};
  /** The largest decimal scale with a power of ten in an int64 (Decimals.POW10). */
  private static final int MAX_POW10 = 18;
  /** EQ_NULL_SAFE's kinds: 0 INT, 1 F32, 2 F64, 3 STR. */
  private static final int EQ_KIND_STRING = 3;
  /** IN_SET_INT's c: the constant count in the low 16 bits. */
  private static final int IN_SET_COUNT_MASK = 0xffff;

  /** What a register may hold at a point of the program (a lattice: NULL below NUM and STR). */
  private enum Kind {
    UNWRITTEN, NULL, NUMBER, STRING, MIXED;

    Kind join(Kind other) {
      if (this == other || other == NULL) {
        return this;
      }
      if (this == NULL) {
        return other;
      }
      return MIXED;
    }
  }

  /** Throws an IllegalArgumentException saying what is wrong with {@code program}, if anything. */
  static void check(Program program) {
    new Checker(program).run();
  }

  private static final class Checker {
    private final Program program;
    private final Kind[] kinds;
    /** Per register: the join table whose PROBE wrote it (MOVE keeps it), else -1. */
    private final int[] probeOf;
    private int pc;
    private Opcode op;

    Checker(Program program) {
      this.program = program;
      this.kinds = new Kind[Math.max(0, program.registerCount())];
      java.util.Arrays.fill(kinds, Kind.UNWRITTEN);
      this.probeOf = new int[kinds.length];
      java.util.Arrays.fill(probeOf, -1);
    }

    void run() {
      if (program.registerCount() < 0) {
        throw new IllegalArgumentException("a program cannot use " + program.registerCount()
            + " registers");
      }
      int[] code = program.code();
      for (pc = 0; pc < program.instructionCount(); pc++) {
        int at = pc * Program.WORDS;
        try {
          op = Opcode.ofCode(code[at]);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("instruction " + pc + ": " + e.getMessage());
        }
        int dst = code[at + 1];
        Kind result = instruction(code[at + 2], code[at + 3], code[at + 4]);
        int probed = op == Opcode.PROBE ? code[at + 2]
            : op == Opcode.MOVE ? probeOf[register(code[at + 2])] : -1;
        kinds[register(dst)] = result;
        probeOf[dst] = probed;
      }
      op = null;
      if (program.hasFilter()) {
        requireKind("the filter", program.filterRegister(), Kind.NUMBER);
      }
      for (int o = 0; o < program.outputs().size(); o++) {
        Program.Output output = program.outputs().get(o);
        requireKind("output " + o + " (" + output.type() + ")", output.register(),
            output.type().isString() ? Kind.STRING : Kind.NUMBER);
      }
    }

    /** Checks one instruction's operands; returns what its destination then holds. */
    private Kind instruction(int a, int b, int c) {
      switch (op) {
        case LOAD_COLUMN -> {
          if (a < 0 || a >= program.inputTypes().size()) {
            throw fail("reads input column " + a + " of " + program.inputTypes().size());
          }
          ColumnType type = program.inputTypes().get(a);
          return type.isString() ? Kind.STRING : Kind.NUMBER;
        }
        case LOAD_CONST -> {
          constantRange(a, 1);
          return Kind.NUMBER;
        }
        case LOAD_NULL -> {
          return Kind.NULL;
        }
        case LOAD_STRING_CONST -> {
          if (a < 0 || b < 0 || (long) a + b > program.strings().length) {
            throw fail("slices bytes [" + a + ", " + a + " + " + b + ") of a string pool of "
                + program.strings().length);
          }
          return Kind.STRING;
        }
        case MOVE -> {
          return written(a);
        }
        case ADD_INT, SUB_INT, MUL_INT, REM_INT, PMOD_INT -> {
          numbers(a, b);
          width(c);
          return Kind.NUMBER;
        }
        case NEG_INT, ABS_INT, CAST_INT_TO_INT, CAST_F32_TO_INT, CAST_F64_TO_INT -> {
          number(a);
          width(c);
          return Kind.NUMBER;
        }
        case ADD_F32, ADD_F64, SUB_F32, SUB_F64, MUL_F32, MUL_F64, DIV_F32, DIV_F64, REM_F32,
            REM_F64, PMOD_F32, PMOD_F64, AND, OR -> {
          numbers(a, b);
          return Kind.NUMBER;
        }
        case NEG_F32, NEG_F64, ABS_F32, ABS_F64, NORMALIZE_F32, NORMALIZE_F64, NOT, CAST_INT_TO_F32, CAST_INT_TO_F64,
            CAST_F32_TO_F64, CAST_F64_TO_F32, CAST_INT_TO_BOOL, CAST_F32_TO_BOOL,
            CAST_F64_TO_BOOL, YEAR, MONTH, DAY_OF_MONTH -> {
          number(a);
          return Kind.NUMBER;
        }
        case RESCALE_DECIMAL -> {
          number(a);
          if (b < 0) {
            throw fail("has a negative scale operand " + b);
          }
          precision(c);
          return Kind.NUMBER;
        }
        case ADD_DECIMAL, SUB_DECIMAL, MUL_DECIMAL -> {
          numbers(a, b);
          precision(c);
          return Kind.NUMBER;
        }
        case CMP_INT, CMP_F32, CMP_F64 -> {
          numbers(a, b);
          comparison(c);
          return Kind.NUMBER;
        }
        case CMP_STRING -> {
          strings(a, b);
          comparison(c);
          return Kind.NUMBER;
        }
        case EQ_NULL_SAFE -> {
          if (c < 0 || c > EQ_KIND_STRING) {
            throw fail("compares values of kind " + c + " (0 INT, 1 F32, 2 F64, 3 STR)");
          }
          if (c == EQ_KIND_STRING) {
            strings(a, b);
          } else {
            numbers(a, b);
          }
          return Kind.NUMBER;
        }
        case IS_NULL, IS_NOT_NULL -> {
          written(a);
          return Kind.NUMBER;
        }
        case SELECT -> {
          number(a);
          return written(b).join(written(c));
        }
        case COALESCE -> {
          return written(a).join(written(b));
        }
        case CAST_INT_TO_DECIMAL -> {
          number(a);
          if (b < 0) {
            throw fail("casts to a negative scale " + b);
          }
          precision(c);
          return Kind.NUMBER;
        }
        case CAST_DECIMAL_TO_INT -> {
          number(a);
          scale(b);
          width(c);
          return Kind.NUMBER;
        }
        case CAST_DECIMAL_TO_F64 -> {
          number(a);
          scale(b);
          return Kind.NUMBER;
        }
        case STARTS_WITH, ENDS_WITH, CONTAINS -> {
          strings(a, b);
          return Kind.NUMBER;
        }
        case LENGTH -> {
          string(a);
          return Kind.NUMBER;
        }
        case IN_SET_INT -> {
          number(a);
          constantRange(b, c & IN_SET_COUNT_MASK);
          return Kind.NUMBER;
        }
        case PROBE -> {
          probeKeys(table(a), b, c);
          return Kind.NUMBER;
        }
        case LOAD_BUILD -> {
          JoinTableSchema schema = table(a);
          number(b);
          if (probeOf[b] != a) {
            throw fail("reads build row register r" + b + ", which no PROBE of join table " + a
                + " wrote");
          }
          if (c < 0 || c >= schema.payloadTypes().size()) {
            throw fail("reads payload column " + c + " of join table " + a + "'s "
                + schema.payloadTypes().size());
          }
          return schema.payloadTypes().get(c).isString() ? Kind.STRING : Kind.NUMBER;
        }
      }
      throw fail("is not supported by the CUDA interpreter");
    }

    private JoinTableSchema table(int a) {
      if (a < 0 || a >= program.tables().size()) {
        throw fail("reads join table " + a + " of the program's " + program.tables().size());
      }
      return program.tables().get(a);
    }

    /** PROBE's key registers, constants[first .. first + count), against the table's keys. */
    private void probeKeys(JoinTableSchema schema, int first, int count) {
      List<ColumnType> keyTypes = schema.keyTypes();
      if (count != keyTypes.size()) {
        throw fail("gives " + count + " key registers for a table of " + keyTypes.size()
            + " key columns");
      }
      constantRange(first, count);
      for (int k = 0; k < count; k++) {
        long r = program.constants()[first + k];
        if (r < 0 || r >= kinds.length) {
          throw fail("names key register " + r + ", outside the program's " + kinds.length
              + " registers");
        }
        ColumnType type = keyTypes.get(k);
        switch (type.id()) {
          case FLOAT, DOUBLE, BOOLEAN -> throw fail("probes a " + type + " key: join keys are"
              + " integral, date, timestamp, decimal or string");
          case STRING -> string((int) r);
          default -> number((int) r);
        }
      }
    }

    private int register(int r) {
      if (r < 0 || r >= kinds.length) {
        throw fail("uses register r" + r + ", outside the program's " + kinds.length
            + " registers");
      }
      return r;
    }

    private Kind written(int r) {
      Kind kind = kinds[register(r)];
      if (kind == Kind.UNWRITTEN) {
        throw fail("reads register r" + r + " before any instruction writes it");
      }
      return kind;
    }

    private void number(int r) {
      Kind kind = written(r);
      if (kind != Kind.NUMBER && kind != Kind.NULL) {
        throw fail("reads register r" + r + " as a number, but it may hold a string");
      }
    }

    private void numbers(int a, int b) {
      number(a);
      number(b);
    }

    private void string(int r) {
      Kind kind = written(r);
      if (kind != Kind.STRING && kind != Kind.NULL) {
        throw fail("reads register r" + r + " as a string, but it may hold a number");
      }
    }

    private void strings(int a, int b) {
      string(a);
      string(b);
    }

    private void requireKind(String what, int r, Kind wanted) {
      Kind kind = kinds[register(r)];
      if (kind == Kind.UNWRITTEN) {
        throw fail(what + " is register r" + r + ", which no instruction writes");
      }
      if (kind != wanted && kind != Kind.NULL) {
        throw fail(what + " is register r" + r + ", which may hold a "
            + (kind == Kind.STRING ? "string" : kind == Kind.NUMBER ? "number"
                : "string or a number"));
      }
    }

    private void width(int c) {
      for (int w : WIDTHS) {
        if (c == w) {
          return;
        }
      }
      throw fail("has width " + c + " (8, 16, 32 or 64)");
    }

    private void precision(int c) {
      if (c < 0) {
        throw fail("has a negative decimal precision " + c);
      }
    }

    private void scale(int b) {
      if (b < 0 || b > MAX_POW10) {
        throw fail("has decimal scale " + b + " (0 to " + MAX_POW10 + ")");
      }
    }

    private void comparison(int c) {
      if (c < 0 || c >= Comparison.values().length) {
        throw fail("has comparison code " + c + " (0 to " + (Comparison.values().length - 1)
            + ")");
      }
    }

    private void constantRange(int first, int count) {
      if (first < 0 || count < 0 || (long) first + count > program.constants().length) {
        throw fail("reads constants [" + first + ", " + first + " + " + count + ") of "
            + program.constants().length);
      }
    }

    private IllegalArgumentException fail(String what) {
      String where = op == null ? "program:" : "instruction " + pc + " (" + op + ")";
      return new IllegalArgumentException(where + " " + what
          + "; the CUDA backend runs only well-formed programs" + listing());
    }

    private String listing() {
      try {
        return ":\n" + program.disassemble();
      } catch (IllegalArgumentException e) {
        return ""; // a later instruction has an unknown opcode; it is reported when reached
      }
    }
  }
}
