package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * A GROUP BY whose keys are all dictionary strings as the batch holds them (a cached table's
 * string columns: codes into the batch's dictionaries), found by their codes. Such a kernel
 * treats the row's keys as one fixed-width key, their <em>code index</em>: each key's digit
 * (0 for NULL, its code + 1 otherwise) in mixed radix, the second key's digits as many as its
 * dictionary's entries + 1. Within the launch's one batch one index is one tuple of strings and
 * one tuple one index, whatever the strings' lengths, so the block's table, the lane's last
 * group and the runs take the index as they take a LONG key ({@link GroupLookup#codeIndex}).
 *
 * <p>A row that misses the block's table reads its index's group in the launch's map: one .s32
 * an index, -1 until a row of that index has found its group in the global table. Only where
 * it is -1 does the row hash its strings, walk the global table's slots and compare the key
 * heap's bytes; it then stores the group it found. Every row of the same index finds the same
 * group, so a stale -1 (a store not yet seen) costs a lookup, never a wrong group. The launch
 * clears the map before the kernel runs, and it serves that launch alone; where the indexes
 * would need more than {@link #MAX_ENTRIES} entries the launch gives none (address 0) and every
 * such row looks.
 */
public final class CodeGroups {
  /** The generated aggregate kernel's parameter with the map's address (0 where none). */
  static final String PARAMETER = "code_groups";
  /** The parameter with the second key's digits (1 where the kernel has one key). */
  static final String SHAPE_PARAMETER = "code_shape";
  /** Bytes of one index's entry. */
  public static final int ENTRY_BYTES = Integer.BYTES;
  /** The most keys found by their codes: two digits of up to 2^31 keep the index in 63 bits. */
  static final int MAX_KEYS = 2;
  /** The most entries a launch's map takes (16 MiB). */
  public static final long MAX_ENTRIES = 1L << 22;

  private CodeGroups() {}

  /**
   * Per key of {@code spec}, the input of {@code inputs} it is, a dictionary string as loaded
   * (by {@code program}'s LOAD_COLUMN, through MOVEs); null where a key is anything else, the
   * keys are more than {@link #MAX_KEYS}, or the kernel does not fill a multiprocessor (one
   * with join tables or GPU-DFOR inputs: only a kernel that fills one keeps a row's codes from
   * its load to its update). A kernel of such keys fills a multiprocessor, with a filter too
   * (AggregateUpdateGenerator.fillsMultiprocessor).
   */
  public static int[] keyInputs(Program program, AggregateSpec spec, List<InputSpec> inputs) {
    int keys = spec.keyCount();
    if (keys == 0 || keys > MAX_KEYS || !program.tables().isEmpty()
        || InputSpec.anyDfor(inputs)) {
      return null;
    }
    int[] code = program.code();
    int[] keyInputs = new int[keys];
    for (int k = 0; k < keys; k++) {
      int register = program.outputs().get(k).register();
      int writer = lastWriter(code, register, program.instructionCount());
      while (writer >= 0 && code[writer * Program.WORDS] == Opcode.MOVE.code()) {
        writer = lastWriter(code, code[writer * Program.WORDS + 2], writer);
      }
      if (writer < 0 || code[writer * Program.WORDS] != Opcode.LOAD_COLUMN.code()) {
        return null;
      }
      int input = code[writer * Program.WORDS + 2];
      if (input >= inputs.size() || !inputs.get(input).dictionary()) {
        return null;
      }
      keyInputs[k] = input;
    }
    return keyInputs;
  }

  /**
   * Per key of {@code keyInputs} ({@link #keyInputs}), whether its strings are decoded only
   * where a row looks its group up in the global table (GroupLookup): where no instruction of
   * {@code program} reads a string its column's loads give, nor is it the filter or a
   * function's input, a row's load keeps its code alone, and the two reads of the dictionary's
   * offsets that make the string happen only for the rows that need it.
   */
  static boolean[] decodedAtLookup(Program program, AggregateSpec spec, int[] keyInputs) {
    BitSet read = ProgramEmitter.readRegisters(program);
    BitSet functionInputs = new BitSet();
    for (int o = spec.keyCount(); o < program.outputs().size(); o++) {
      functionInputs.set(program.outputs().get(o).register());
    }
    BitSet decoded = new BitSet(); // columns a load of which gives a string something reads
    int[] code = program.code();
    for (int i = 0; i < program.instructionCount(); i++) {
      int register = code[i * Program.WORDS + 1];
      if (code[i * Program.WORDS] == Opcode.LOAD_COLUMN.code() && (read.get(register)
          || register == program.filterRegister() || functionInputs.get(register))) {
        decoded.set(code[i * Program.WORDS + 2]);
      }
    }
    boolean[] atLookup = new boolean[keyInputs.length];
    for (int k = 0; k < keyInputs.length; k++) {
      atLookup[k] = !decoded.get(keyInputs[k]);
    }
    return atLookup;
  }

  /**
   * A kernel's keys found by their codes: per key, its input column ({@link #keyInputs}) and
   * whether its strings are decoded where a row looks alone ({@link #decodedAtLookup}).
   */
  record Keys(int[] inputs, boolean[] decodedAtLookup) {
    /** The keys of a kernel of {@code spec} over {@code inputs}, or null where not coded. */
    static Keys of(Program program, AggregateSpec spec, List<InputSpec> inputs) {
      int[] keyInputs = keyInputs(program, spec, inputs);
      return keyInputs == null ? null
          : new Keys(keyInputs, CodeGroups.decodedAtLookup(program, spec, keyInputs));
    }
  }

  /** Whether the kernel's keys are found by their codes ({@link #keyInputs}). */
  public static boolean coded(Program program, AggregateSpec spec, List<InputSpec> inputs) {
    return keyInputs(program, spec, inputs) != null;
  }

  /** The last of the program's first {@code before} instructions that writes {@code register}. */
  private static int lastWriter(int[] code, int register, int before) {
    for (int i = before - 1; i >= 0; i--) {
      if (code[i * Program.WORDS + 1] == register) {
        return i;
      }
    }
    return -1;
  }

  /**
   * {@code spec} as its block's table holds it where its keys are found by their codes: one
   * LONG key, the code index, then the functions' inputs.
   */
  static AggregateSpec tableSpec(AggregateSpec spec) {
    int dropped = spec.keyCount() - 1;
    List<ColumnType> types = new ArrayList<>();
    types.add(ColumnType.LONG);
    types.addAll(spec.inputTypes().subList(spec.keyCount(), spec.inputTypes().size()));
    List<AggregateFunction> functions = new ArrayList<>();
    for (AggregateFunction f : spec.functions()) {
      functions.add(f.kind() == AggregateFunction.Kind.COUNT_ROWS ? f
          : new AggregateFunction(f.kind(), f.input() - dropped, f.resultType(),
              f.zeroWhenEmpty()));
    }
    return new AggregateSpec(types, 1, functions, spec.ansi());
  }

  /**
   * A launch's map: its entries (0: none) and the second key's digits ({@link
   * #SHAPE_PARAMETER}).
   */
  public record Shape(long entries, long secondDigits) {
    static final Shape NONE = new Shape(0, 1);
  }

  /**
   * The map a launch over {@code columns} gives a kernel whose keys are the inputs {@code
   * keyInputs} ({@link #keyInputs}; null: none). A key's digits are its dictionary's entries
   * + 1, the words of its offsets (rounded up by the pool at most, which leaves some indexes
   * unused).
   */
  public static Shape shape(int[] keyInputs, List<DeviceColumn> columns) {
    if (keyInputs == null) {
      return Shape.NONE;
    }
    long[] digits = new long[keyInputs.length];
    for (int k = 0; k < digits.length; k++) {
      digits[k] = columns.get(keyInputs[k]).offsets().size() / Integer.BYTES;
    }
    return shape(digits);
  }

  /** The map of keys of {@code digits} digits each: none past {@link #MAX_ENTRIES} entries. */
  static Shape shape(long[] digits) {
    long entries = 1;
    for (long d : digits) {
      entries = entries > MAX_ENTRIES / d ? MAX_ENTRIES + 1 : entries * d;
    }
    return new Shape(entries > MAX_ENTRIES ? 0 : entries, digits.length > 1 ? digits[1] : 1);
  }
}
