package dev.tessera.gpu.expr;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.TypeId;
import java.util.List;
import org.apache.arrow.memory.util.MemoryUtil;

/**
 * The reference semantics of {@link Opcode}: evaluates a {@link Program} for one row at a time over
 * columns in host-addressable memory (the host reference backend's "device" memory). Written for
 * obviousness, not speed; the CUDA interpreter must agree with it on every row.
 */
public final class HostInterpreter {
  private final Program program;
  private final int[] code;
  private final long[] constants;
  private final long stringPool;
  private final ColumnReader[] columns;
  private final HostProbeTable[] tables;
  /** Per join table, a reader per payload column (LOAD_BUILD loads as LOAD_COLUMN does). */
  private final ColumnReader[][] payloads;

  // The register file of the row being evaluated.
  private final long[] value;
  private final int[] length;
  private final boolean[] valid;
  private final byte[] error;

  /**
   * @param inputs the input columns, in host-addressable memory
   * @param stringPoolAddress where the program's string pool has been copied
   */
  public HostInterpreter(Program program, List<DeviceColumn> inputs, long stringPoolAddress) {
    this(program, inputs, List.of(), stringPoolAddress);
  }

  /**
   * @param inputs the input columns, in host-addressable memory
   * @param tables the join tables PROBE and LOAD_BUILD read, in the order of
   *     {@link Program#tables()}
   * @param stringPoolAddress where the program's string pool has been copied
   */
  public HostInterpreter(Program program, List<DeviceColumn> inputs,
      List<? extends HostProbeTable> tables, long stringPoolAddress) {
    if (tables.size() != program.tables().size()) {
      throw new IllegalArgumentException("the program probes " + program.tables().size()
          + " join tables, " + tables.size() + " were given");
    }
    if (inputs.size() != program.inputTypes().size()) {
      throw new IllegalArgumentException("the program reads " + program.inputTypes().size()
          + " columns, the batch has " + inputs.size());
    }
    this.program = program;
    this.code = program.code();
    this.constants = program.constants();
    this.stringPool = stringPoolAddress;
    this.columns = new ColumnReader[inputs.size()];
    for (int i = 0; i < inputs.size(); i++) {
      if (!inputs.get(i).type().equals(program.inputTypes().get(i))) {
        throw new IllegalArgumentException("input column " + i + " is " + inputs.get(i).type()
            + ", the program expects " + program.inputTypes().get(i));
      }
      columns[i] = new ColumnReader(inputs.get(i));
    }
    this.tables = tables.toArray(new HostProbeTable[0]);
    this.payloads = new ColumnReader[tables.size()][];
    for (int t = 0; t < tables.size(); t++) {
      List<ColumnType> types = program.tables().get(t).payloadTypes();
      payloads[t] = new ColumnReader[types.size()];
      for (int p = 0; p < types.size(); p++) {
        payloads[t][p] = new ColumnReader(tables.get(t).payload(p));
      }
    }
    int n = Math.max(1, program.registerCount());
    value = new long[n];
    length = new int[n];
    valid = new boolean[n];
    error = new byte[n];
  }

  /** Runs every instruction for {@code row}; read the results with the register accessors. */
  public void evaluate(int row) {
    for (int pc = 0; pc < code.length; pc += Program.WORDS) {
      execute(Opcode.ofCode(code[pc]), code[pc + 1], code[pc + 2], code[pc + 3], code[pc + 4], row);
    }
  }

  public long value(int register) {
    return value[register];
  }

  public int length(int register) {
    return length[register];
  }

  public boolean isValid(int register) {
    return valid[register];
  }

  public RowError error(int register) {
    return RowError.ofCode(error[register]);
  }

  /**
   * Whether the filter keeps the evaluated row (valid and true); a program without one keeps all.
   */
  public boolean keeps() {
    int f = program.filterRegister();
    return f < 0 || (valid[f] && value[f] != 0);
  }

  private void execute(Opcode op, int d, int a, int b, int c, int row) {
    switch (op) {
      case LOAD_COLUMN -> columns[a].load(row, d);
      case LOAD_CONST -> set(d, constants[a], (byte) 0);
      case LOAD_NULL -> setNull(d, (byte) 0);
      case LOAD_STRING_CONST -> {
        set(d, stringPool + a, (byte) 0);
        length[d] = b;
      }
      case MOVE -> {
        value[d] = value[a];
        length[d] = length[a];
        valid[d] = valid[a];
        error[d] = error[a];
      }
      case ADD_INT, SUB_INT, MUL_INT -> integerArithmetic(op, d, a, b, c);
      case REM_INT, PMOD_INT -> integerRemainder(op, d, a, b, c);
      case NEG_INT, ABS_INT -> {
        if (unaryNull(d, a)) {
          return;
        }
        long x = value[a];
        boolean negate = op == Opcode.NEG_INT || x < 0;
        long r = negate ? wrap(-x, c) : x;
        byte e = error[a];
        if (negate && x == minimum(c) && program.ansi() && e == 0) {
          e = (byte) RowError.ARITHMETIC_OVERFLOW.code();
        }
        set(d, r, e);
      }
      case ADD_F32, SUB_F32, MUL_F32, DIV_F32, REM_F32, PMOD_F32 -> floatArithmetic(op, d, a, b);
      case ADD_F64, SUB_F64, MUL_F64, DIV_F64, REM_F64, PMOD_F64 -> doubleArithmetic(op, d, a, b);
      case NEG_F32, ABS_F32 -> {
        if (!unaryNull(d, a)) {
          float x = f32(a);
          set(d, f32Bits(op == Opcode.NEG_F32 ? -x : Math.abs(x)), error[a]);
        }
      }
      case NEG_F64, ABS_F64 -> {
        if (!unaryNull(d, a)) {
          double x = f64(a);
          set(d, Double.doubleToRawLongBits(op == Opcode.NEG_F64 ? -x : Math.abs(x)), error[a]);
        }
      }
      case NORMALIZE_F32 -> {
        if (!unaryNull(d, a)) {
          float x = f32(a);
          set(d, f32Bits(Float.isNaN(x) ? Float.NaN : x == 0.0f ? 0.0f : x), error[a]);
        }
      }
      case NORMALIZE_F64 -> {
        if (!unaryNull(d, a)) {
          double x = f64(a);
          set(d, Double.doubleToRawLongBits(Double.isNaN(x) ? Double.NaN : x == 0.0 ? 0.0 : x),
              error[a]);
        }
      }
      case RESCALE_DECIMAL -> {
        if (!unaryNull(d, a)) {
          decimalResult(d, Decimals.rescale(value[a], b >> 8, b & 0xff), c, error[a]);
        }
      }
      case ADD_DECIMAL, SUB_DECIMAL, MUL_DECIMAL -> {
        if (binaryNull(d, a, b)) {
          return;
        }
        Long r = switch (op) {
          case ADD_DECIMAL -> Decimals.exact(() -> Math.addExact(value[a], value[b]));
          case SUB_DECIMAL -> Decimals.exact(() -> Math.subtractExact(value[a], value[b]));
          default -> Decimals.exact(() -> Math.multiplyExact(value[a], value[b]));
        };
        decimalResult(d, r, c, firstError(a, b));
      }
      case CMP_INT, CMP_F32, CMP_F64, CMP_STRING -> {
        if (!binaryNull(d, a, b)) {
          int order = compare(op, a, b);
          set(d, Comparison.ofCode(c).holds(order) ? 1 : 0, firstError(a, b));
        }
      }
      case EQ_NULL_SAFE -> {
        boolean eq;
        if (!valid[a] || !valid[b]) {
          eq = !valid[a] && !valid[b];
        } else {
          Opcode kind = switch (c) {
            case 0 -> Opcode.CMP_INT;
            case 1 -> Opcode.CMP_F32;
            case 2 -> Opcode.CMP_F64;
            default -> Opcode.CMP_STRING;
          };
          eq = compare(kind, a, b) == 0;
        }
        set(d, eq ? 1 : 0, firstError(a, b));
      }
      case AND, OR -> logic(op == Opcode.AND, d, a, b);
      case NOT -> {
        if (!unaryNull(d, a)) {
          set(d, value[a] != 0 ? 0 : 1, error[a]);
        }
      }
      case IS_NULL -> set(d, valid[a] ? 0 : 1, error[a]);
      case IS_NOT_NULL -> set(d, valid[a] ? 1 : 0, error[a]);
      case SELECT -> {
        int chosen = valid[a] && value[a] != 0 ? b : c;
        copyChosen(d, chosen, error[a]);
      }
      case COALESCE -> copyChosen(d, valid[a] ? a : b, error[a]);
      case CAST_INT_TO_INT -> {
        if (!unaryNull(d, a)) {
          long r = wrap(value[a], c);
          byte e = error[a];
          if (r != value[a] && program.ansi() && e == 0) {
            e = (byte) RowError.CAST_OVERFLOW.code();
          }
          set(d, r, e);
        }
      }
      case CAST_INT_TO_F32 -> {
        if (!unaryNull(d, a)) {
          set(d, f32Bits((float) value[a]), error[a]);
        }
      }
      case CAST_INT_TO_F64 -> {
        if (!unaryNull(d, a)) {
          set(d, Double.doubleToRawLongBits((double) value[a]), error[a]);
        }
      }
      case CAST_F32_TO_INT, CAST_F64_TO_INT -> {
        if (!unaryNull(d, a)) {
          double x = op == Opcode.CAST_F32_TO_INT ? f32(a) : f64(a);
          castFractionToInt(d, x, c, error[a]);
        }
      }
      case CAST_F32_TO_F64 -> {
        if (!unaryNull(d, a)) {
          set(d, Double.doubleToRawLongBits(f32(a)), error[a]);
        }
      }
      case CAST_F64_TO_F32 -> {
        if (!unaryNull(d, a)) {
          set(d, f32Bits((float) f64(a)), error[a]);
        }
      }
      case CAST_INT_TO_DECIMAL -> {
        if (!unaryNull(d, a)) {
          decimalResult(d, Decimals.rescale(value[a], 0, b), c, error[a]);
        }
      }
      case CAST_DECIMAL_TO_INT -> {
        if (!unaryNull(d, a)) {
          long truncated = value[a] / Decimals.POW10[b];
          long r = wrap(truncated, c);
          byte e = error[a];
          if (r != truncated && program.ansi() && e == 0) {
            e = (byte) RowError.CAST_OVERFLOW.code();
          }
          set(d, r, e);
        }
      }
      case CAST_DECIMAL_TO_F64 -> {
        if (!unaryNull(d, a)) {
          double r = (double) value[a] / (double) Decimals.POW10[b];
          set(d, Double.doubleToRawLongBits(r), error[a]);
        }
      }
      case CAST_INT_TO_BOOL -> {
        if (!unaryNull(d, a)) {
          set(d, value[a] != 0 ? 1 : 0, error[a]);
        }
      }
      case CAST_F32_TO_BOOL -> {
        if (!unaryNull(d, a)) {
          set(d, f32(a) != 0 ? 1 : 0, error[a]);
        }
      }
      case CAST_F64_TO_BOOL -> {
        if (!unaryNull(d, a)) {
          set(d, f64(a) != 0 ? 1 : 0, error[a]);
        }
      }
      case YEAR, MONTH, DAY_OF_MONTH -> {
        if (!unaryNull(d, a)) {
          int[] ymd = CivilDate.fromEpochDays(value[a]);
          int part = op == Opcode.YEAR ? ymd[0] : op == Opcode.MONTH ? ymd[1] : ymd[2];
          set(d, part, error[a]);
        }
      }
      case STARTS_WITH, ENDS_WITH, CONTAINS -> {
        if (!binaryNull(d, a, b)) {
          boolean r = switch (op) {
            case STARTS_WITH -> Utf8.startsWith(value[a], length[a], value[b], length[b]);
            case ENDS_WITH -> Utf8.endsWith(value[a], length[a], value[b], length[b]);
            default -> Utf8.contains(value[a], length[a], value[b], length[b]);
          };
          set(d, r ? 1 : 0, firstError(a, b));
        }
      }
      case LENGTH -> {
        if (!unaryNull(d, a)) {
          set(d, Utf8.characterCount(value[a], length[a]), error[a]);
        }
      }
      case IN_SET_INT -> {
        if (unaryNull(d, a)) {
          return;
        }
        int count = c & 0xffff;
        boolean listHasNull = (c & 0x10000) != 0;
        boolean found = java.util.Arrays.binarySearch(constants, b, b + count, value[a]) >= 0;
        if (found || !listHasNull) {
          set(d, found ? 1 : 0, error[a]);
        } else {
          setNull(d, error[a]);
        }
      }
      case PROBE -> probe(d, a, b, c);
      case LOAD_BUILD -> {
        if (!unaryNull(d, b)) {
          byte e = error[b];
          payloads[a][c].load((int) value[b], d);
          error[d] = e;
        }
      }
    }
  }

  /** PROBE: the key registers are constants[b .. b + c); their first error carries over. */
  private void probe(int d, int table, int b, int c) {
    List<ColumnType> keyTypes = program.tables().get(table).keyTypes();
    Object[] key = new Object[c];
    byte e = 0;
    boolean anyNull = false;
    for (int k = 0; k < c; k++) {
      int r = (int) constants[b + k];
      e = e != 0 ? e : error[r];
      if (!valid[r]) {
        anyNull = true;
      } else if (keyTypes.get(k).isString()) {
        byte[] bytes = new byte[length[r]];
        MemoryUtil.copyFromMemory(value[r], bytes, 0, bytes.length);
        key[k] = bytes;
      } else {
        key[k] = value[r];
      }
    }
    int row = anyNull ? -1 : tables[table].firstMatch(key);
    if (row < 0) {
      setNull(d, e);
    } else {
      set(d, row, e);
    }
  }

  // ---- helpers -----------------------------------------------------------------------------

  private void set(int d, long v, byte e) {
    value[d] = v;
    length[d] = 0;
    valid[d] = true;
    error[d] = e;
  }

  private void setNull(int d, byte e) {
    value[d] = 0;
    length[d] = 0;
    valid[d] = false;
    error[d] = e;
  }

  /** Sets dst to NULL (carrying a's error) when a is NULL; returns whether it did. */
  private boolean unaryNull(int d, int a) {
    if (!valid[a]) {
      setNull(d, error[a]);
      return true;
    }
    return false;
  }

  private boolean binaryNull(int d, int a, int b) {
    if (!valid[a] || !valid[b]) {
      setNull(d, firstError(a, b));
      return true;
    }
    return false;
  }

  private byte firstError(int a, int b) {
    return error[a] != 0 ? error[a] : error[b];
  }

  private byte raise(byte carried, RowError e) {
    return carried != 0 ? carried : (byte) e.code();
  }

  private void copyChosen(int d, int chosen, byte conditionError) {
    value[d] = value[chosen];
    length[d] = length[chosen];
    valid[d] = valid[chosen];
    error[d] = conditionError != 0 ? conditionError : error[chosen];
  }

  private void integerArithmetic(Opcode op, int d, int a, int b, int width) {
    if (binaryNull(d, a, b)) {
      return;
    }
    long x = value[a];
    long y = value[b];
    long wrapped;
    boolean overflow;
    if (width == 64) {
      wrapped = switch (op) {
        case ADD_INT -> x + y;
        case SUB_INT -> x - y;
        default -> x * y;
      };
      overflow = switch (op) {
        case ADD_INT -> ((x ^ wrapped) & (y ^ wrapped)) < 0;
        case SUB_INT -> ((x ^ y) & (x ^ wrapped)) < 0;
        default -> Math.multiplyHigh(x, y) != (wrapped >> 63);
      };
    } else {
      // Narrower operands fit in 32 bits, so the exact result fits in 64.
      long exact = switch (op) {
        case ADD_INT -> x + y;
        case SUB_INT -> x - y;
        default -> x * y;
      };
      wrapped = wrap(exact, width);
      overflow = wrapped != exact;
    }
    byte e = firstError(a, b);
    if (overflow && program.ansi()) {
      e = raise(e, RowError.ARITHMETIC_OVERFLOW);
    }
    set(d, wrapped, e);
  }

  private void integerRemainder(Opcode op, int d, int a, int b, int width) {
    if (binaryNull(d, a, b)) {
      return;
    }
    long x = value[a];
    long n = value[b];
    byte e = firstError(a, b);
    if (n == 0) {
      if (program.ansi()) {
        set(d, 0, raise(e, RowError.REMAINDER_BY_ZERO));
      } else {
        setNull(d, e);
      }
      return;
    }
    long r = x % n; // Java: MIN % -1 == 0, sign of x
    if (op == Opcode.PMOD_INT && r < 0) {
      r = wrap(r + n, width) % n;
    }
    set(d, r, e);
  }

  private void floatArithmetic(Opcode op, int d, int a, int b) {
    if (binaryNull(d, a, b)) {
      return;
    }
    float x = f32(a);
    float y = f32(b);
    byte e = firstError(a, b);
    if ((op == Opcode.DIV_F32 || op == Opcode.REM_F32 || op == Opcode.PMOD_F32) && y == 0) {
      divisionByZero(d, e, op == Opcode.DIV_F32);
      return;
    }
    float r = switch (op) {
      case ADD_F32 -> x + y;
      case SUB_F32 -> x - y;
      case MUL_F32 -> x * y;
      case DIV_F32 -> x / y;
      case REM_F32 -> x % y;
      default -> {
        float m = x % y;
        yield m < 0 ? (m + y) % y : m;
      }
    };
    set(d, f32Bits(r), e);
  }

  private void doubleArithmetic(Opcode op, int d, int a, int b) {
    if (binaryNull(d, a, b)) {
      return;
    }
    double x = f64(a);
    double y = f64(b);
    byte e = firstError(a, b);
    if ((op == Opcode.DIV_F64 || op == Opcode.REM_F64 || op == Opcode.PMOD_F64) && y == 0) {
      divisionByZero(d, e, op == Opcode.DIV_F64);
      return;
    }
    double r = switch (op) {
      case ADD_F64 -> x + y;
      case SUB_F64 -> x - y;
      case MUL_F64 -> x * y;
      case DIV_F64 -> x / y;
      case REM_F64 -> x % y;
      default -> {
        double m = x % y;
        yield m < 0 ? (m + y) % y : m;
      }
    };
    set(d, Double.doubleToRawLongBits(r), e);
  }

  private void divisionByZero(int d, byte e, boolean division) {
    if (program.ansi()) {
      set(d, 0, raise(e, division ? RowError.DIVIDE_BY_ZERO : RowError.REMAINDER_BY_ZERO));
    } else {
      setNull(d, e);
    }
  }

  /** A decimal result, or NULL / DECIMAL_OVERFLOW when it is null (overflowed) or too wide. */
  private void decimalResult(int d, Long result, int precision, byte e) {
    if (result != null && Decimals.fits(result, precision)) {
      set(d, result, e);
    } else if (program.ansi()) {
      set(d, 0, raise(e, RowError.DECIMAL_OVERFLOW));
    } else {
      setNull(d, e);
    }
  }

  private void castFractionToInt(int d, double x, int width, byte e) {
    if (program.ansi()) {
      double max = width == 64 ? (double) Long.MAX_VALUE : (double) ((1L << (width - 1)) - 1);
      double min = width == 64 ? (double) Long.MIN_VALUE : (double) -(1L << (width - 1));
      if (!(Math.floor(x) <= max && Math.ceil(x) >= min)) {
        set(d, 0, raise(e, RowError.CAST_OVERFLOW));
        return;
      }
    }
    long r = width == 64 ? (long) x : wrap((int) x, width);
    set(d, r, e);
  }

  private int compare(Opcode kind, int a, int b) {
    return switch (kind) {
      case CMP_INT -> Long.compare(value[a], value[b]);
      case CMP_F32 -> SparkOrder.compareFloats(f32(a), f32(b));
      case CMP_F64 -> SparkOrder.compareDoubles(f64(a), f64(b));
      default -> Utf8.compare(value[a], length[a], value[b], length[b]);
    };
  }

  private void logic(boolean and, int d, int a, int b) {
    // AND stops at a false left side, OR at a true one: the right side's error then never happens.
    long stop = and ? 0 : 1;
    if (valid[a] && value[a] == stop) {
      set(d, stop, error[a]);
      return;
    }
    byte e = firstError(a, b);
    if (valid[b] && value[b] == stop) {
      set(d, stop, e);
    } else if (!valid[a] || !valid[b]) {
      setNull(d, e);
    } else {
      set(d, 1 - stop, e);
    }
  }

  private float f32(int r) {
    return Float.intBitsToFloat((int) value[r]);
  }

  private double f64(int r) {
    return Double.longBitsToDouble(value[r]);
  }

  static long f32Bits(float f) {
    return Float.floatToRawIntBits(f) & 0xffffffffL;
  }

  /** v wrapped to a {@code width}-bit two's complement integer, sign-extended. */
  static long wrap(long v, int width) {
    return width == 64 ? v : (v << (64 - width)) >> (64 - width);
  }

  static long minimum(int width) {
    return width == 64 ? Long.MIN_VALUE : -(1L << (width - 1));
  }

  /** Reads one input column's rows into registers. */
  private final class ColumnReader {
    private final TypeId type;
    private final long data;
    private final long validity;
    private final long offsets;

    ColumnReader(DeviceColumn column) {
      ColumnType t = column.type();
      this.type = t.id();
      this.data = column.data().address();
      this.validity = column.validity() == null ? 0 : column.validity().address();
      this.offsets = column.offsets() == null ? 0 : column.offsets().address();
    }

    void load(int row, int d) {
      if (validity != 0 && (MemoryUtil.getByte(validity + (row >>> 3)) & (1 << (row & 7))) == 0) {
        setNull(d, (byte) 0);
        return;
      }
      switch (type) {
        case BOOLEAN, BYTE -> set(d, MemoryUtil.getByte(data + row), (byte) 0);
        case SHORT -> set(d, MemoryUtil.getShort(data + 2L * row), (byte) 0);
        case INT, DATE -> set(d, MemoryUtil.getInt(data + 4L * row), (byte) 0);
        case FLOAT -> set(d, MemoryUtil.getInt(data + 4L * row) & 0xffffffffL, (byte) 0);
        case LONG, TIMESTAMP, DECIMAL, DOUBLE -> set(d, MemoryUtil.getLong(data + 8L * row),
            (byte) 0);
        case STRING -> {
          int start = MemoryUtil.getInt(offsets + 4L * row);
          int end = MemoryUtil.getInt(offsets + 4L * row + 4);
          set(d, data + start, (byte) 0);
          length[d] = end - start;
        }
      }
    }
  }
}
