package dev.tessera.gpu.expr;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.join.JoinTableSchema;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/** Builds a {@link Program}: allocates registers, collects constants, appends instructions. */
public final class ProgramBuilder {
  private final List<ColumnType> inputTypes;
  private final boolean ansi;
  private final List<Integer> code = new ArrayList<>();
  private final List<Long> constants = new ArrayList<>();
  private final ByteArrayOutputStream strings = new ByteArrayOutputStream();
  private final List<JoinTableSchema> tables = new ArrayList<>();
  private int registers;

  /** A builder for a program over input columns of {@code inputTypes} (more may be added). */
  public ProgramBuilder(List<ColumnType> inputTypes, boolean ansi) {
    this.inputTypes = new ArrayList<>(inputTypes);
    this.ansi = ansi;
  }

  /** A builder whose input columns are added as the program first reads them. */
  public ProgramBuilder(boolean ansi) {
    this(List.of(), ansi);
  }

  /** Adds an input column and returns its index in the batch the program reads. */
  public int addInput(ColumnType type) {
    inputTypes.add(type);
    return inputTypes.size() - 1;
  }

  public List<ColumnType> inputTypes() {
    return List.copyOf(inputTypes);
  }

  /** Registers allocated so far. */
  public int registerCount() {
    return registers;
  }

  /** A fresh register. */
  public int register() {
    return registers++;
  }

  /** Appends {@code op dst, a, b, c}. */
  public ProgramBuilder emit(Opcode op, int dst, int a, int b, int c) {
    code.add(op.code());
    code.add(dst);
    code.add(a);
    code.add(b);
    code.add(c);
    return this;
  }

  /** Emits {@code op} into a fresh register and returns it. */
  public int emitNew(Opcode op, int a, int b, int c) {
    int dst = register();
    emit(op, dst, a, b, c);
    return dst;
  }

  /** The index of a new constant holding these bits. */
  public int constant(long bits) {
    constants.add(bits);
    return constants.size() - 1;
  }

  /** Loads the column {@code column} into a fresh register. */
  public int loadColumn(int column) {
    if (column < 0 || column >= inputTypes.size()) {
      throw new IllegalArgumentException("no input column " + column);
    }
    return emitNew(Opcode.LOAD_COLUMN, column, 0, 0);
  }

  /** Loads an INT (or F32/F64 bit pattern) constant into a fresh register. */
  public int loadConstant(long bits) {
    return emitNew(Opcode.LOAD_CONST, constant(bits), 0, 0);
  }

  public int loadNull() {
    return emitNew(Opcode.LOAD_NULL, 0, 0, 0);
  }

  /** Loads UTF-8 bytes from the string pool into a fresh register. */
  public int loadString(byte[] utf8) {
    int offset = strings.size();
    strings.writeBytes(utf8);
    return emitNew(Opcode.LOAD_STRING_CONST, offset, utf8.length, 0);
  }

  /** Adds a join table the program probes and returns its index (PROBE's and LOAD_BUILD's a). */
  public int table(JoinTableSchema schema) {
    tables.add(schema);
    return tables.size() - 1;
  }

  public Program build(int filterRegister, List<Program.Output> outputs) {
    int[] words = code.stream().mapToInt(Integer::intValue).toArray();
    long[] pool = constants.stream().mapToLong(Long::longValue).toArray();
    return new Program(words, pool, strings.toByteArray(), registers, inputTypes, filterRegister,
        outputs, ansi, tables);
  }

  /**
   * The program that outputs every input column unchanged and has no filter: what an operator
   * that takes a program runs over a batch that needs no filter or projection.
   */
  public static Program identity(List<ColumnType> types, boolean ansi) {
    ProgramBuilder b = new ProgramBuilder(types, ansi);
    List<Program.Output> outputs = new ArrayList<>();
    for (int c = 0; c < types.size(); c++) {
      outputs.add(new Program.Output(b.loadColumn(c), types.get(c)));
    }
    return b.build(-1, outputs);
  }
}
