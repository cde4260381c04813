package dev.tessera.gpu.codegen;

import dev.tessera.gpu.expr.Program;
import java.util.List;

/**
 * The words of a program that a generated kernel reads as its last parameter, through the constant
 * cache, instead of from the plan in memory: its input columns' descriptors (program.cuh
 * InputColumn), its join tables' views (JoinTableView) and its constants, none of which changes
 * during a launch. A loop-form kernel reads them again for every item (held across the items,
 * they would take registers through the group's update): SSB Q3.1's item about 40 loads, each an
 * L1 round trip at the head of a chain of dependent reads (the column's block start, the probe's
 * slot). As a parameter each is an operand of the instruction that uses it. {@link PlanWords} did
 * this for the aggregation's plan. On an H200 (ncu): SSB SF10's generated kernels -2.9% (Q2.1
 * -5.8%; Q1.1's kernel 72 to 62 registers), StarJoinBench's fused aggregate -8% (dense),
 * FilterProjectBench's kernel -6%, HashAggregateBench within 1%.
 *
 * <p>Layout: the descriptors in column order, {@link ProgramEmitter#INPUT_COLUMN_BYTES} each, then
 * the tables' views in table order, {@link ProgramEmitter#TABLE_VIEW_BYTES} each, then the
 * constants, 8 bytes each. The host (ProgramPlan.words) copies its sections into this layout.
 * Where the words do not fit the parameter space beside the kernel's other parameters, the kernel
 * reads them from memory, as the interpreter does.
 */
public final class ProgramWords {
  /** The parameter's name; the host passes it after the kernel's other parameters. */
  static final String PARAM = "program_words";
  /** Bytes of a kernel's parameters that PTX 8.0 allows. */
  static final int PARAM_SPACE_BYTES = 4096;

  private final int inputColumns;
  private final int tables;
  private final int constants;

  private ProgramWords(int inputColumns, int tables, int constants) {
    this.inputColumns = inputColumns;
    this.tables = tables;
    this.constants = constants;
  }

  /** The words of {@code program} over {@code inputColumns} input columns. */
  public static ProgramWords of(Program program, int inputColumns) {
    return new ProgramWords(inputColumns, program.tables().size(), program.constants().length);
  }

  /**
   * The words of {@code program} over {@code inputs}, where they fit beside parameters of {@code
   * otherBytes} (each of the kernel's other parameters counted as 8 bytes, arrays as their
   * bytes); null where they do not, where there are none, or where an input is GPU-DFOR: such a
   * kernel compiles with {@link GeneratedModule#DFOR_OPTION}, under which a projection of five
   * GPU-DFOR columns reading its words as a parameter spilled (GeneratedFilterProjectCompileTest).
   */
  static ProgramWords within(Program program, List<InputSpec> inputs, int otherBytes) {
    if (InputSpec.anyDfor(inputs)) {
      return null;
    }
    ProgramWords words = of(program, inputs.size());
    return words.bytes() > 0 && otherBytes + words.bytes() <= PARAM_SPACE_BYTES ? words : null;
  }

  /** Bytes of the parameter. */
  public int bytes() {
    return constantAt(constants);
  }

  /** Byte offset of input column {@code column}'s descriptor. */
  public int inputAt(int column) {
    return ProgramEmitter.INPUT_COLUMN_BYTES * column;
  }

  /** Byte offset of join table {@code table}'s view. */
  public int tableAt(int table) {
    return inputAt(inputColumns) + ProgramEmitter.TABLE_VIEW_BYTES * table;
  }

  /** Byte offset of constant {@code index}. */
  public int constantAt(int index) {
    return tableAt(tables) + Long.BYTES * index;
  }

  /** The parameter's declaration, to follow the kernel's other parameters. */
  String declaration(ProgramEmitter body) {
    return ",\n\t.param .align 8 .b8 " + body.param(PARAM) + "[" + bytes() + "]";
  }

  /** The part of a kernel's key that says it reads these words as a parameter. */
  String key() {
    return ";w" + bytes();
  }
}
