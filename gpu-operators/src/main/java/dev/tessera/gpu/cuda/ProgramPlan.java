package dev.tessera.gpu.cuda;

import dev.tessera.gpu.codegen.ProgramWords;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTable;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;

/**
 * The sections of a kernel's plan buffer that hold a {@link Program} and the input columns it
 * reads (program.cuh's InputColumn), for every kernel that runs the interpreter: where they lie,
 * how they are written, and the kernel arguments that point at them, which such kernels take
 * first (code, instruction count, register count, constants, strings, inputs, tables). The tables
 * section holds one program.cuh JoinTableView per entry of {@link Program#tables()}, copied from
 * the join tables given at run time (PROBE and LOAD_BUILD index it by table number).
 */
final class ProgramPlan {
  /**
   * program.cuh struct InputColumn: data, validity, offsets (8 bytes each), type, encoding (4
   * each), words, block starts (8 each).
   */
  static final int INPUT_COLUMN_BYTES = 48;
  private static final int INPUT_DATA = 0;
  private static final int INPUT_VALIDITY = 8;
  private static final int INPUT_OFFSETS = 16;
  private static final int INPUT_TYPE = 24;
  private static final int INPUT_ENCODING = 28;
  private static final int INPUT_WORDS = 32;
  private static final int INPUT_BLOCK_STARTS = 40;

  private final Program program;
  private final ColumnBatch<DeviceColumn> input;
  private final long inputsAt;
  private final long codeAt;
  private final long constantsAt;
  private final long stringsAt;
  private final List<CudaJoinTable> tables;
  private final long tablesAt;

  /** Reserves the program's sections in {@code plan}; {@code tables} as ProgramChecks accepted. */
  ProgramPlan(Sections plan, Program program, ColumnBatch<DeviceColumn> input,
      List<JoinTable> tables) {
    this.program = program;
    this.input = input;
    this.tables = new ArrayList<>(tables.size());
    for (JoinTable table : tables) {
      this.tables.add(CudaJoinTable.of(table));
    }
    inputsAt = plan.add((long) INPUT_COLUMN_BYTES * input.columns().size());
    codeAt = plan.add((long) Integer.BYTES * program.code().length);
    constantsAt = plan.add((long) Long.BYTES * program.constants().length);
    stringsAt = plan.add(program.strings().length);
    tablesAt = plan.add((long) CudaJoinTable.TABLE_VIEW_BYTES * tables.size());
  }

  /**
   * The program's join tables that have a probe filter (CudaHashJoin's ProbeFilter), by table
   * index: a generated aggregate kernel is made for them (AggregateUpdateGenerator).
   */
  BitSet probeFiltered() {
    BitSet filtered = new BitSet();
    for (int t = 0; t < tables.size(); t++) {
      if (tables.get(t).hasProbeFilter()) {
        filtered.set(t);
      }
    }
    return filtered;
  }

  /** Writes the sections into the staging copy of the plan. */
  void write(ArrowBuf host) {
    for (int i = 0; i < input.columns().size(); i++) {
      writeInputColumn(host, inputsAt + (long) INPUT_COLUMN_BYTES * i, input.column(i));
    }
    int[] code = program.code();
    for (int i = 0; i < code.length; i++) {
      host.setInt(codeAt + (long) Integer.BYTES * i, code[i]);
    }
    long[] constants = program.constants();
    for (int i = 0; i < constants.length; i++) {
      host.setLong(constantsAt + (long) Long.BYTES * i, constants[i]);
    }
    host.setBytes(stringsAt, program.strings());
    for (int t = 0; t < tables.size(); t++) {
      tables.get(t).writeView(host, tablesAt + (long) CudaJoinTable.TABLE_VIEW_BYTES * t);
    }
  }

  /**
   * The program's words in {@code words}' layout (the generated kernel's last parameter,
   * ProgramWords), read from the staging copy {@code host} that {@link #write} filled.
   */
  long[] words(ArrowBuf host, ProgramWords words) {
    long[] out = new long[words.bytes() / Long.BYTES];
    for (int i = 0; i < input.columns().size(); i++) {
      copyWords(host, inputsAt + (long) INPUT_COLUMN_BYTES * i, out, words.inputAt(i),
          INPUT_COLUMN_BYTES);
    }
    for (int t = 0; t < tables.size(); t++) {
      copyWords(host, tablesAt + (long) CudaJoinTable.TABLE_VIEW_BYTES * t, out,
          words.tableAt(t), CudaJoinTable.TABLE_VIEW_BYTES);
    }
    copyWords(host, constantsAt, out, words.constantAt(0),
        Long.BYTES * program.constants().length);
    return out;
  }

  private static void copyWords(ArrowBuf host, long from, long[] out, int to, int bytes) {
    for (int b = 0; b < bytes; b += Long.BYTES) {
      out[(to + b) / Long.BYTES] = host.getLong(from + b);
    }
  }

  /** Writes {@code column}'s InputColumn at {@code at}. */
  static void writeInputColumn(ArrowBuf host, long at, DeviceColumn column) {
    writeInputColumn(host, at, column, column.data().address(),
        column.validity() == null ? 0 : column.validity().address(),
        column.offsets() == null ? 0 : column.offsets().address());
  }

  /** Writes an InputColumn of {@code column}'s type and encoding over the buffers given. */
  static void writeInputColumn(ArrowBuf host, long at, DeviceColumn column, long data,
      long validity, long offsets) {
    host.setLong(at + INPUT_DATA, data);
    host.setLong(at + INPUT_VALIDITY, validity);
    host.setLong(at + INPUT_OFFSETS, offsets);
    host.setInt(at + INPUT_TYPE, column.type().id().ordinal());
    host.setInt(at + INPUT_ENCODING, column.encoding().ordinal());
    host.setLong(at + INPUT_WORDS, column.isEncoded() ? column.words().address() : 0);
    host.setLong(at + INPUT_BLOCK_STARTS,
        column.isEncoded() ? column.blockStarts().address() : 0);
  }

  /** The leading kernel arguments, for the plan uploaded at {@code planAddress}. */
  KernelArgs arguments(long planAddress) {
    return new KernelArgs()
        .address(planAddress + codeAt)
        .i32(program.instructionCount())
        .i32(program.registerCount())
        .address(planAddress + constantsAt)
        .address(planAddress + stringsAt)
        .address(planAddress + inputsAt)
        .address(tables.isEmpty() ? 0 : planAddress + tablesAt);
  }
}
