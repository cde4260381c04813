package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collection;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The part every generated kernel shares: one program's instructions for one row, in PTX. It
 * knows which instruction defines each register operand (so a kernel can emit a filter's cone
 * first and the rest only for kept rows), loads the column descriptors and constants a phase
 * reads, and implements what {@link RowEmitter} asks of the kernel: LOAD_COLUMN per input layout,
 * and the join probes (PROBE and LOAD_BUILD, which read the kernel's {@code tables} argument).
 *
 * <p>Both kernels that embed a program (filter-project and the aggregate update) take the same
 * leading arguments as their interpreter kernels ({@code constants}, {@code strings},
 * {@code inputs}, {@code tables}); this class reads them by those names. Where the kernel takes
 * its program's words as its last parameter ({@link ProgramWords}), it reads the input columns'
 * descriptors, the join tables' views and the constants there instead.
 */
final class ProgramEmitter implements RowEmitter.KernelContext {
  // program.cuh InputColumn (ProgramPlan writes the Java side of this layout).
  static final int INPUT_COLUMN_BYTES = 48;
  /**
   * Opcodes whose result is NULL wherever one of their register operands is (HostInterpreter's
   * unaryNull and binaryNull; PROBE by its keys, LOAD_BUILD by its row), for {@link
   * #splitAtFilteredProbe}. Others may not be, or are not listed.
   */
  private static final Set<Opcode> NULL_WHERE_AN_OPERAND_IS = EnumSet.of(Opcode.MOVE,
      Opcode.ADD_INT, Opcode.SUB_INT, Opcode.MUL_INT, Opcode.NEG_INT, Opcode.ABS_INT,
      Opcode.CMP_INT, Opcode.CMP_F32, Opcode.CMP_F64, Opcode.CMP_STRING, Opcode.NOT,
      Opcode.CAST_INT_TO_INT, Opcode.CAST_INT_TO_F32, Opcode.CAST_INT_TO_F64, Opcode.YEAR,
      Opcode.MONTH, Opcode.DAY_OF_MONTH, Opcode.PROBE, Opcode.LOAD_BUILD);
  /**
   * The PTX comment where {@link #splitAtFilteredProbe} tests the probe filter's bit, before the
   * rows wait for the probe's walk; the join table's index follows.
   */
  static final String PROBE_FILTER_SPLIT = "the keys' bit in the probe filter of join table";
  /** The PTX comment before a probe of a table with a string key compares a row's hash. */
  static final String CANDIDATE_HASH = "the candidate build row's hash, before its keys";
  /** The PTX comment before a probe compares a string key with its candidate build row's. */
  static final String STRING_KEY_COMPARE = "a string key's bytes against the build row's";
  private static final int INPUT_DATA = 0;
  private static final int INPUT_VALIDITY = 8;
  private static final int INPUT_OFFSETS = 16;
  private static final int INPUT_WORDS = 32;
  private static final int INPUT_BLOCK_STARTS = 40;
  /** The unit L2 fetches from device memory: a 128-byte line (four 32-byte sectors). */
  private static final int L2_LINE_BYTES = 128;
  // program.cuh JoinTableView (CudaHashJoin writes it; JoinTableAbiTest checks these offsets).
  static final int TABLE_VIEW_BYTES = 128;
  private static final int TABLE_KEYS = 0;
  private static final int TABLE_PAYLOADS = 8;
  private static final int TABLE_SLOTS = 16;
  private static final int TABLE_HASHES = 24;
  private static final int TABLE_SLOT_MASK = 48;
  private static final int TABLE_DIRECT = 72;
  private static final int TABLE_DIRECT_MIN = 80;
  private static final int TABLE_DIRECT_SPAN = 88;
  private static final int TABLE_FILTER = 96;
  private static final int TABLE_FILTER_SHIFT = 104;
  private static final int TABLE_DIRECT_IDENTITY = 112;
  /** program.cuh kNoBuildRow. */
  private static final int NO_BUILD_ROW = -1;
  // hash.cuh: the seed of a key tuple's hash and Mix's multipliers.
  /** hash.cuh kKeyTupleSeed: a key tuple's hash before its first key. */
  static final long KEY_TUPLE_SEED = 0x243f6a8885a308d3L;
  /** hash.cuh kProbeFilterMultiplier: the probe filter's hash, a multiply a key. */
  static final long PROBE_FILTER_MULTIPLIER = 0x9e3779b97f4a7c15L;
  private static final long MIX_1 = 0xbf58476d1ce4e5b9L;
  private static final long MIX_2 = 0x94d049bb133111ebL;

  private final Program program;
  private final List<InputSpec> inputs;
  private final PtxBuilder b;
  private final String entry;
  /** The program's words as the kernel's parameter, or null: read from memory. */
  private final ProgramWords words;
  private final RowEmitter rows;
  private final int[] code;
  private final int count;
  /** Per instruction, the instructions defining its register operands, in operand order. */
  private final int[][] sources;
  /** Per register, the last instruction writing it. */
  private final int[] lastWriter;

  private String constants;
  private String strings;
  private String tables;
  private String alwaysFalse;
  /** {@link #rowsPassedFilterBitOf}'s probe, or -1. */
  private int bitPassedAt = -1;
  private final Map<Integer, String> constantRegisters = new LinkedHashMap<>();
  private final Map<Integer, ColumnRegisters> columns = new LinkedHashMap<>();
  /** The item's columns loaded ahead of it ({@link #takeLoadedAhead}), by column. */
  private Map<Integer, LookaheadColumns.Raw> loadedAhead = Map.of();
  /** Dictionary columns whose loads keep their codes undecoded ({@link #leaveCoded}). */
  private final BitSet leftCoded = new BitSet();
  private final Map<Integer, String[]> dforValues = new LinkedHashMap<>();
  /** Per GPU-FOR column, the miniblock of the thread's run of rows ({@link #beginRun}). */
  private final Map<Integer, ColumnLoads.ForMiniblock> runMiniblocks = new LinkedHashMap<>();
  /** The tile's GPU-FOR headers the item being written takes ({@link #useTileHeaders}), or null. */
  private TileForHeaders tileHeaders;
  /** The filter's conjunction tree, once asked for ({@link #conjunctions}). */
  private BitSet conjunctions;
  /** {@link #falseElseSelects}, once asked for. */
  private BitSet falseElseSelects;
  /** {@link #keepOnly}, once asked for. */
  private Boolean keepOnly;

  /** One column descriptor's fields, loaded once per phase. */
  private record ColumnRegisters(String data, String validity, String offsets, String words,
      String blockStarts) {}

  /**
   * Where a descriptor of the program (an input column's, a join table's view) is read: the
   * kernel's parameter {@code address} at byte {@code offset} ({@link ProgramWords}), or, where
   * {@code parameter} is false, memory at the global address {@code address}.
   */
  private record Descriptor(String address, int offset, boolean parameter) {}

  /**
   * @param words the program's words as the kernel's last parameter ({@link ProgramWords}), or
   *     null where the kernel reads them from memory
   */
  ProgramEmitter(Program program, List<InputSpec> inputs, PtxBuilder b, String entry,
      ProgramWords words) {
    this.program = program;
    this.inputs = inputs;
    this.b = b;
    this.entry = entry;
    this.words = words;
    this.rows = new RowEmitter(b, program.ansi(), this);
    this.code = program.code();
    this.count = program.instructionCount();
    this.lastWriter = new int[Program.MAX_REGISTERS];
    this.sources = sources(program, lastWriter);
  }

  /**
   * Per instruction, the instructions that wrote the registers it reads; {@code lastWriter} is
   * filled with the last instruction that writes each register (-1 for none).
   */
  private static int[][] sources(Program program, int[] lastWriter) {
    int[][] sources = new int[program.instructionCount()][];
    Arrays.fill(lastWriter, -1);
    for (int i = 0; i < sources.length; i++) {
      List<Integer> registers = operands(program, i);
      sources[i] = new int[registers.size()];
      for (int k = 0; k < registers.size(); k++) {
        int writer = lastWriter[registers.get(k)];
        if (writer < 0) {
          throw new IllegalArgumentException("r" + registers.get(k) + " is read before it is"
              + " written at instruction " + i + " (ProgramChecks rejects such programs)");
        }
        sources[i][k] = writer;
      }
      lastWriter[program.code()[i * Program.WORDS + 1]] = i;
    }
    return sources;
  }

  /**
   * The join table of the filter's first probe ({@link #firstProbe} from the filter, over every
   * instruction): the only table whose probe filter {@link #splitAtFilteredProbe} may split at,
   * so the only one of a program's probe-filtered tables its aggregate kernel depends on; -1
   * where the program has no filter or its filter reads no probe, or where that table has a
   * string key (its rows would carry the keys' bytes to the walk after the bit, and hash them
   * twice: not split).
   */
  static int filterFirstProbeTable(Program program) {
    if (!program.hasFilter()) {
      return -1;
    }
    int[] lastWriter = new int[Program.MAX_REGISTERS];
    int[][] sources = sources(program, lastWriter);
    BitSet every = new BitSet();
    every.set(0, sources.length);
    int filter = lastWriter[program.filterRegister()];
    int probe = filter < 0 ? -1 : firstProbe(program.code(), sources, filter, every, new BitSet());
    if (probe < 0) {
      return -1;
    }
    int table = program.code()[probe * Program.WORDS + 2];
    return hasStringKey(program.tables().get(table)) ? -1 : table;
  }

  // ---- what the generator covers ---------------------------------------------------------------

  /** Keys of a join table whose probe is written inline (wider keys go to the interpreter). */
  private static final int MAX_PROBE_KEYS = 4;

  /**
   * Why no kernel is generated for {@code program} (opcodes without an emitter, join tables the
   * probe code does not handle), or null.
   */
  static String whyNotGenerated(Program program) {
    List<String> reasons = new ArrayList<>();
    for (JoinTableSchema table : program.tables()) {
      if (table.keyTypes().size() > MAX_PROBE_KEYS) {
        reasons.add("a join table has " + table.keyTypes().size() + " key columns (the kernel"
            + " generator probes at most " + MAX_PROBE_KEYS + ")");
      }
    }
    Set<Opcode> uncovered = uncoveredOpcodes(program);
    if (!uncovered.isEmpty()) {
      reasons.add("the kernel generator does not cover " + uncovered.stream().map(Opcode::name)
          .collect(Collectors.joining(", ")));
    }
    return reasons.isEmpty() ? null : String.join("; ", reasons);
  }

  /** Whether one of {@code table}'s keys is a string. */
  private static boolean hasStringKey(JoinTableSchema table) {
    return table.keyTypes().stream().anyMatch(ColumnType::isString);
  }

  /** The opcodes of {@code program} without an emitter, in program order. */
  static Set<Opcode> uncoveredOpcodes(Program program) {
    Set<Opcode> uncovered = new LinkedHashSet<>();
    for (int i = 0; i < program.instructionCount(); i++) {
      Opcode op = Opcode.ofCode(program.code()[i * Program.WORDS]);
      if (op != Opcode.PROBE && op != Opcode.LOAD_BUILD && !RowEmitter.covers(op)) {
        uncovered.add(op);
      }
    }
    return uncovered;
  }

  /**
   * What a kernel bakes in of {@code program} beyond its code words: the register numbers PROBE
   * reads from the constants (constants are otherwise kernel arguments), which constants fit in
   * 32 bits and the join tables' column types.
   */
  static String structuralKey(Program program) {
    StringBuilder key = new StringBuilder(";p");
    for (int i = 0; i < program.instructionCount(); i++) {
      if (program.code()[i * Program.WORDS] == Opcode.PROBE.code()) {
        for (int r : probeKeyRegisters(program, i)) {
          key.append(r).append(',');
        }
        key.append('|');
      }
    }
    // Which SELECTs are conjunctions depends on a constant's value (falseElseSelects), and so
    // do whether a constant is loaded as a 32-bit value (fitsInt) and whether it is 0
    // (nonZeroConstant): always in the key, so that a kernel is right for every program that
    // shares it whether or not it was generated knowing.
    key.append(";s").append(falseElseSelects(program));
    key.append(";n");
    for (int i = 0; i < program.instructionCount(); i++) {
      if (program.code()[i * Program.WORDS] == Opcode.LOAD_CONST.code()) {
        long constant = program.constants()[program.code()[i * Program.WORDS + 2]];
        key.append(constant == 0 ? 'z' : fitsInt(constant) ? 'n' : 'w');
      }
    }
    key.append(";t");
    for (JoinTableSchema table : program.tables()) {
      key.append(table.keyTypes()).append(table.payloadTypes()).append('|');
    }
    return key.toString();
  }

  /**
   * The SELECTs of {@code program} whose third operand is the constant 0: SELECT(keep, condition,
   * false), ChainCompiler's conjunction of a filter with the filters before it, and CASE WHEN keep
   * THEN condition ELSE false END. Where keep is not valid and true, the SELECT is false whatever
   * the condition holds, as an AND whose left operand is false (see {@link #conjunctions}).
   */
  static BitSet falseElseSelects(Program program) {
    int[] code = program.code();
    int[] writer = new int[Program.MAX_REGISTERS];
    Arrays.fill(writer, -1);
    BitSet selects = new BitSet();
    for (int i = 0; i < program.instructionCount(); i++) {
      int at = i * Program.WORDS;
      if (code[at] == Opcode.SELECT.code()) {
        int otherwise = writer[code[at + 4]];
        if (otherwise >= 0 && code[otherwise * Program.WORDS] == Opcode.LOAD_CONST.code()
            && program.constants()[code[otherwise * Program.WORDS + 2]] == 0) {
          selects.set(i);
        }
      }
      writer[code[at + 1]] = i;
    }
    return selects;
  }

  /** The registers any instruction of {@code program} reads. */
  static BitSet readRegisters(Program program) {
    BitSet read = new BitSet();
    for (int i = 0; i < program.instructionCount(); i++) {
      operands(program, i).forEach(read::set);
    }
    return read;
  }

  /**
   * The input columns whose loads the values of {@code registers} at the end of {@code program}
   * are made from: the LOAD_COLUMNs among the instructions their writers depend on.
   */
  static BitSet loadedColumns(Program program, int[] registers) {
    int[] lastWriter = new int[Program.MAX_REGISTERS];
    int[][] sources = sources(program, lastWriter);
    BitSet cone = new BitSet();
    for (int register : registers) {
      if (lastWriter[register] >= 0) {
        mark(sources, lastWriter[register], cone);
      }
    }
    int[] code = program.code();
    BitSet columns = new BitSet();
    for (int i = cone.nextSetBit(0); i >= 0; i = cone.nextSetBit(i + 1)) {
      if (code[i * Program.WORDS] == Opcode.LOAD_COLUMN.code()) {
        columns.set(code[i * Program.WORDS + 2]);
      }
    }
    return columns;
  }

  /**
   * Whether the value of {@code register} at the end of {@code program} is a LOAD_COLUMN of an
   * input column of {@code inputs} that has no validity bitmap: a value that cannot be NULL
   * (its Val has no valid predicate), whatever the other instructions do.
   */
  static boolean loadsColumnWithoutNulls(Program program, int register, List<InputSpec> inputs) {
    int[] code = program.code();
    for (int i = program.instructionCount() - 1; i >= 0; i--) {
      int at = i * Program.WORDS;
      if (code[at + 1] == register) { // its last writer: every instruction writes its dst
        int column = code[at + 2];
        return code[at] == Opcode.LOAD_COLUMN.code() && column < inputs.size()
            && !inputs.get(column).nullable();
      }
    }
    return false;
  }

  /** The register operands of instruction {@code i}, PROBE's key registers included. */
  private static List<Integer> operands(Program program, int i) {
    int at = i * Program.WORDS;
    Opcode op = Opcode.ofCode(program.code()[at]);
    return switch (op) {
      case PROBE -> probeKeyRegisters(program, i);
      case LOAD_BUILD -> List.of(program.code()[at + 3]);
      default -> {
        try {
          yield RowEmitter.registerOperands(op, program.code()[at + 2], program.code()[at + 3],
              program.code()[at + 4]);
        } catch (CodegenUnsupportedException e) {
          yield List.of(); // whyNotGenerated reports it; nothing is emitted
        }
      }
    };
  }

  /** PROBE's key registers: constants[b .. b + c). */
  private static List<Integer> probeKeyRegisters(Program program, int i) {
    int at = i * Program.WORDS;
    List<Integer> keys = new ArrayList<>();
    for (int k = 0; k < program.code()[at + 4]; k++) {
      keys.add((int) program.constants()[program.code()[at + 3] + k]);
    }
    return keys;
  }

  // ---- the program's structure -----------------------------------------------------------------

  int count() {
    return count;
  }

  int op(int i) {
    return code[i * Program.WORDS];
  }

  int word(int i, int w) {
    return code[i * Program.WORDS + w];
  }

  /** The instruction whose result register {@code register} holds at the end of the program. */
  int writerOf(int register) {
    return lastWriter[register];
  }

  /**
   * The instructions a kernel emits, in two sets: the filter's cone (the filter and what it
   * reads), then the rest that the program's outputs need, run only for rows the filter keeps.
   *
   * @param filter the instruction computing the filter, or -1 without one
   * @param outputs per program output, the instruction computing it
   */
  record Phases(int filter, int[] outputs, BitSet cone, BitSet rest) {}

  Phases phases() {
    int filter = program.hasFilter() ? writerOf(program.filterRegister()) : -1;
    int[] outputs = new int[program.outputs().size()];
    for (int o = 0; o < outputs.length; o++) {
      outputs[o] = writerOf(program.outputs().get(o).register());
    }
    BitSet cone = new BitSet();
    if (filter >= 0) {
      mark(filter, cone);
    }
    BitSet rest = new BitSet();
    for (int o : outputs) {
      mark(o, rest);
    }
    rest.andNot(cone);
    return new Phases(filter, outputs, cone, rest);
  }

  /** {@code i} and every instruction it depends on, added to {@code into}. */
  void mark(int i, BitSet into) {
    mark(sources, i, into);
  }

  /** {@code i} and every instruction it depends on by {@code sources}, added to {@code into}. */
  private static void mark(int[][] sources, int i, BitSet into) {
    if (into.get(i)) {
      return;
    }
    into.set(i);
    for (int s : sources[i]) {
      mark(sources, s, into);
    }
  }

  boolean isLoad(int i) {
    int op = op(i);
    return op == Opcode.LOAD_COLUMN.code() || op == Opcode.LOAD_CONST.code()
        || op == Opcode.LOAD_STRING_CONST.code() || op == Opcode.LOAD_NULL.code();
  }

  /**
   * The loads of {@code earlier} that the instructions of {@code later} (or {@code results})
   * read: a later phase emits them again rather than keep them live across the phases.
   */
  BitSet reloads(BitSet earlier, BitSet later, int[] results) {
    BitSet reloaded = new BitSet();
    for (int i = later.nextSetBit(0); i >= 0; i = later.nextSetBit(i + 1)) {
      for (int source : sources[i]) {
        if (earlier.get(source) && isLoad(source)) {
          reloaded.set(source);
        }
      }
    }
    for (int r : results) {
      if (earlier.get(r) && isLoad(r)) {
        reloaded.set(r);
      }
    }
    return reloaded;
  }

  /** Whether {@code instructions} probe a join table. */
  boolean probes(BitSet instructions) {
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (op(i) == Opcode.PROBE.code()) {
        return true;
      }
    }
    return false;
  }

  /** The column loads (LOAD_COLUMN) among {@code instructions}. */
  BitSet columnLoads(BitSet instructions) {
    BitSet loads = new BitSet();
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (op(i) == Opcode.LOAD_COLUMN.code()) {
        loads.set(i);
      }
    }
    return loads;
  }

  /**
   * The loads among {@code loads} that decode a GPU-FOR value in place ({@link
   * ColumnLoads#forValue(PtxBuilder, String, String, String, int)}), where a plain value's load
   * is one instruction and a GPU-DFOR value a register of its decoded tile.
   */
  BitSet inlineDecodes(BitSet loads) {
    BitSet decodes = new BitSet();
    for (int i = loads.nextSetBit(0); i >= 0; i = loads.nextSetBit(i + 1)) {
      if (inputs.get(word(i, 2)).encoding() == Encoding.FOR) {
        decodes.set(i);
      }
    }
    return decodes;
  }

  /**
   * Starts a run of the thread's rows: item i's row is {@code firstRow} + i, and all of them lie
   * in one GPU-FOR miniblock. Each GPU-FOR column that {@code instructions} load reads its
   * block's header and the miniblock's width here, once, and the run's items read only their
   * value's words ({@link ColumnLoads#forValue(PtxBuilder, ColumnLoads.ForMiniblock, int, int)}):
   * a header is about two thirds of a value's decode. {@code firstRow} must lie in the batch
   * (its header is read). Call where every item of the run passes; {@link #endRun} ends it.
   */
  void beginRun(BitSet instructions, String firstRow) {
    runMiniblocks.clear();
    BitSet decodes = inlineDecodes(columnLoads(instructions));
    if (decodes.isEmpty()) {
      return;
    }
    for (int i = decodes.nextSetBit(0); i >= 0; i = decodes.nextSetBit(i + 1)) {
      int column = word(i, 2);
      if (!runMiniblocks.containsKey(column)) {
        Descriptor descriptor = input(column);
        runMiniblocks.put(column, ColumnLoads.forMiniblock(b, field(descriptor, INPUT_WORDS),
            field(descriptor, INPUT_BLOCK_STARTS), firstRow,
            inputs.get(column).referenceWords()));
      }
    }
  }

  /** Ends the run {@link #beginRun} started: each row then reads its own header. */
  void endRun() {
    runMiniblocks.clear();
  }

  /**
   * The tile's GPU-FOR headers for the items whose code follows: their LOAD_COLUMNs of the
   * columns it {@link TileForHeaders#covers} take their block's header from it and read only
   * their value's words. Null ends it: each row then reads its own header.
   */
  void useTileHeaders(TileForHeaders headers) {
    this.tileHeaders = headers;
  }

  /**
   * GPU-FOR column c's packed words (.b64, global), read here from its descriptor (not the
   * phase's register, which code outside the phase's may not have defined).
   */
  String columnWordsHere(int c) {
    return field(input(c), INPUT_WORDS);
  }

  /** GPU-FOR column c's block starts (.b64, global), read here as {@link #columnWordsHere}. */
  String columnBlockStartsHere(int c) {
    return field(input(c), INPUT_BLOCK_STARTS);
  }

  /**
   * About how many 32-bit registers one row's {@code loads} (LOAD_COLUMN instructions) hold once
   * loaded: a value's two words (values are .b64), a string's length, a validity flag. A kernel
   * that issues every item's loads before using them holds this many per item.
   */
  int loadedRegisters(BitSet loads) {
    int registers = 0;
    for (int i = loads.nextSetBit(0); i >= 0; i = loads.nextSetBit(i + 1)) {
      InputSpec spec = inputs.get(word(i, 2));
      registers += spec.type().isString() ? 3 : 2;
      if (spec.nullable()) {
        registers++;
      }
    }
    return registers;
  }

  // ---- arguments --------------------------------------------------------------------------------

  String param(String name) {
    return entry + "_" + name;
  }

  /**
   * The entry's parameter declarations: {@code list}'s ({type, name} pairs, in order), then
   * {@code following} (declarations, each led by ",\n"; or ""), then the program's words where
   * the kernel takes them ({@link ProgramWords}, the last parameter).
   */
  String parameters(String[][] list, String following) {
    StringBuilder params = new StringBuilder();
    for (int i = 0; i < list.length; i++) {
      params.append(i == 0 ? "" : ",\n").append("\t.param .").append(list[i][0]).append(' ')
          .append(param(list[i][1]));
    }
    params.append(following);
    if (words != null) {
      params.append(words.declaration(this));
    }
    return params.toString();
  }

  String loadParam(String type, String name) {
    String r = type.equals("u64") ? b.b64() : b.b32();
    b.op("ld.param.%s %s, [%s]", type, r, param(name));
    return r;
  }

  String global(String generic) {
    String r = b.b64();
    b.op("cvta.to.global.u64 %s, %s", r, generic);
    return r;
  }

  /** A global address read from {@code offset} of the descriptor at {@code descriptor}. */
  String field(String descriptor, int offset) {
    return field(new Descriptor(descriptor, 0, false), offset);
  }

  /** A global address read from {@code offset} of {@code descriptor}. */
  private String field(Descriptor descriptor, int offset) {
    return global(word(descriptor, offset));
  }

  /** The word at {@code offset} of {@code descriptor} (.b64). */
  private String word(Descriptor descriptor, int offset) {
    return load(descriptor, offset, "u64", b.b64());
  }

  /** The signed low word of the 8-byte word at {@code offset} of {@code descriptor} (.b32). */
  private String lowWord(Descriptor descriptor, int offset) {
    return load(descriptor, offset, "s32", b.b32());
  }

  /** Loads the {@code type} value at {@code offset} of {@code descriptor} into {@code r}. */
  private String load(Descriptor descriptor, int offset, String type, String r) {
    if (descriptor.parameter()) {
      b.op("ld.param.%s %s, [%s+%d]", type, r, descriptor.address(),
          descriptor.offset() + offset);
    } else {
      b.op("ld.global.nc.%s %s, [%s+%d]", type, r, descriptor.address(), offset);
    }
    return r;
  }

  /**
   * Whether {@code constant} is a sign-extended 32-bit value, which the kernel loads as one
   * ({@link PtxBuilder#signExtend}); the kernel's key says which of its constants are.
   */
  private static boolean fitsInt(long constant) {
    return constant == (int) constant;
  }

  /** Input column {@code column}'s descriptor. */
  private Descriptor input(int column) {
    if (words != null) {
      return new Descriptor(param(ProgramWords.PARAM), words.inputAt(column), true);
    }
    return new Descriptor(
        inputDescriptor(global(loadParam("u64", "inputs")), column), 0, false);
  }

  /** The .b64 address of input column {@code column}'s descriptor in the array at {@code base}. */
  private String inputDescriptor(String base, int column) {
    String descriptor = b.b64();
    b.op("add.s64 %s, %s, %d", descriptor, base, (long) INPUT_COLUMN_BYTES * column);
    return descriptor;
  }

  /**
   * The GPU-DFOR tile values of every column {@code instructions} load (the decode synchronizes
   * the block, so call where every thread is).
   */
  void loadDforTiles(BitSet instructions, TilePrimitives tiles, String tileOffset,
      String numTileItems) {
    dforValues.clear();
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (loadsDforColumn(i)) {
        int column = word(i, 2);
        if (!dforValues.containsKey(column)) {
          Descriptor descriptor = input(column);
          String packed = field(descriptor, INPUT_WORDS);
          String blockStarts = field(descriptor, INPUT_BLOCK_STARTS);
          dforValues.put(column, tiles.dforTile(packed, blockStarts, tileOffset, numTileItems,
              inputs.get(column).referenceWords()));
        }
      }
    }
  }

  /**
   * The input columns {@code instructions} load (LOAD_COLUMN), in column order.
   */
  SortedSet<Integer> columnsLoaded(BitSet instructions) {
    SortedSet<Integer> loaded = new TreeSet<>();
    BitSet loads = columnLoads(instructions);
    for (int i = loads.nextSetBit(0); i >= 0; i = loads.nextSetBit(i + 1)) {
      loaded.add(word(i, 2));
    }
    return loaded;
  }

  /**
   * The plain input columns {@code instructions} load (LOAD_COLUMN), in column order: those a
   * tile can ask L2 for as one range ({@link #prefetchTile}).
   */
  SortedSet<Integer> plainColumnsLoaded(BitSet instructions) {
    SortedSet<Integer> loaded = columnsLoaded(instructions);
    loaded.removeIf(c -> inputs.get(c).encoding() != Encoding.PLAIN);
    return loaded;
  }

  /**
   * Asks L2 for the tile's lines of the plain columns {@code columns} (fixed-width values, a
   * string column's offsets) where {@code when} (a .pred, or null: always) holds, without waiting
   * for them: thread t asks for the t-th line of each column's tile range, then every
   * {@code blockThreads}-th after it. Validity bitmaps (an eighth of a line per 1,024 rows) are
   * left to the loads.
   *
   * @param blockThreads the block's threads: an immediate, or a .b64 register where the launch
   *     picks the block's size
   * @param itemsPerThread a tile's rows per thread
   * @param tileOffset the tile's first row (.b64)
   * @param numTileItems the tile's rows (.b32)
   */
  void prefetchTile(Collection<Integer> columns, String thread, String blockThreads,
      int itemsPerThread, String tileOffset, String numTileItems, String when) {
    String thread64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", thread64, thread);
    String items64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", items64, numTileItems);
    boolean fixedBlock = !blockThreads.startsWith("%");
    for (int c : columns) {
      InputSpec spec = inputs.get(c);
      if (spec.encoding() != Encoding.PLAIN) {
        throw new IllegalArgumentException("column " + c + " is " + spec.encoding()
            + ", not one range of plain values");
      }
      Descriptor descriptor = input(c);
      int width = spec.type().isString() ? Integer.BYTES : spec.type().id().width();
      String data = field(descriptor, spec.type().isString() ? INPUT_OFFSETS : INPUT_DATA);
      String bytes = b.b64();
      b.op("mul.lo.s64 %s, %s, %d", bytes, items64, width);
      String first = b.b64();
      b.op("mad.lo.s64 %s, %s, %d, %s", first, tileOffset, width, data);
      // A round: one line a thread. A tile's range of the column is itemsPerThread * width
      // bytes a thread.
      int rounds = (itemsPerThread * width + L2_LINE_BYTES - 1) / L2_LINE_BYTES;
      for (int r = 0; r < rounds; r++) {
        String offset = b.b64();
        if (fixedBlock) {
          b.op("mad.lo.s64 %s, %s, %d, %d", offset, thread64, L2_LINE_BYTES,
              (long) r * L2_LINE_BYTES * Integer.parseInt(blockThreads));
        } else {
          b.op("mul.lo.s64 %s, %s, %d", offset, blockThreads, (long) r * L2_LINE_BYTES);
          b.op("mad.lo.s64 %s, %s, %d, %s", offset, thread64, L2_LINE_BYTES, offset);
        }
        String inside = b.pred();
        b.op("setp.lt.s64 %s, %s, %s", inside, offset, bytes);
        if (when != null) {
          b.op("and.pred %s, %s, %s", inside, inside, when);
        }
        String address = b.b64();
        b.op("add.s64 %s, %s, %s", address, first, offset);
        b.op("@%s prefetch.global.L2 [%s]", inside, address);
      }
    }
  }

  /** Whether the last {@link #loadDforTiles} decoded any tile (its values are per item). */
  boolean decodesTiles() {
    return !dforValues.isEmpty();
  }

  /** Whether {@code instructions} load a GPU-DFOR column ({@link #loadDforTiles} decodes one). */
  boolean loadsDfor(BitSet instructions) {
    return loadsAnyColumnOf(instructions, Encoding.DFOR);
  }

  /** Whether instruction {@code i} is a LOAD_COLUMN of a GPU-DFOR column. */
  private boolean loadsDforColumn(int i) {
    return loadsColumnOf(i, Encoding.DFOR);
  }

  /**
   * Whether {@code instructions} load a GPU-FOR column (a value's block start, header and word,
   * each load waiting on the one before).
   */
  boolean loadsFor(BitSet instructions) {
    return loadsAnyColumnOf(instructions, Encoding.FOR);
  }

  private boolean loadsAnyColumnOf(BitSet instructions, Encoding encoding) {
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (loadsColumnOf(i, encoding)) {
        return true;
      }
    }
    return false;
  }

  /** Whether every instruction of {@code instructions} is one of {@code opcodes}. */
  boolean onlyOf(BitSet instructions, Set<Opcode> opcodes) {
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (!opcodes.contains(Opcode.ofCode(op(i)))) {
        return false;
      }
    }
    return true;
  }

  private boolean loadsColumnOf(int i, Encoding encoding) {
    return op(i) == Opcode.LOAD_COLUMN.code() && inputs.get(word(i, 2)).encoding() == encoding;
  }

  /**
   * Loads the arguments, column descriptors and constants that {@code instructions} read, before
   * a phase's items (an item may skip its own code, so the loads cannot sit in it). Each phase
   * loads its own: registers live across the calls or block-wide steps between phases cost
   * spills, and these loads hit the cache.
   */
  void loadPhaseValues(BitSet instructions) {
    columns.clear();
    constantRegisters.clear();
    constants = global(loadParam("u64", "constants"));
    strings = loadParam("u64", "strings");
    if (words == null) {
      tables = program.tables().isEmpty() ? null : global(loadParam("u64", "tables"));
    }
    Descriptor constantWords = words != null
        ? new Descriptor(param(ProgramWords.PARAM), words.constantAt(0), true)
        : new Descriptor(constants, 0, false);
    alwaysFalse = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", alwaysFalse);
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (op(i) == Opcode.LOAD_CONST.code() && !constantRegisters.containsKey(word(i, 2))) {
        int index = word(i, 2);
        constantRegisters.put(index, fitsInt(program.constants()[index])
            ? b.signExtend(lowWord(constantWords, Long.BYTES * index))
            : word(constantWords, Long.BYTES * index));
      }
      if (op(i) == Opcode.LOAD_COLUMN.code()) {
        columnRegisters(word(i, 2));
      }
    }
  }

  private ColumnRegisters columnRegisters(int column) {
    return columns.computeIfAbsent(column, c -> {
      InputSpec spec = inputs.get(c);
      Descriptor descriptor = input(c);
      String data = field(descriptor, INPUT_DATA);
      String validity = spec.nullable() ? field(descriptor, INPUT_VALIDITY) : null;
      String offsets = spec.type().isString() ? field(descriptor, INPUT_OFFSETS) : null;
      boolean encoded = spec.encoding() != Encoding.PLAIN;
      String packed = encoded ? field(descriptor, INPUT_WORDS) : null;
      String starts = encoded ? field(descriptor, INPUT_BLOCK_STARTS) : null;
      return new ColumnRegisters(data, validity, offsets, packed, starts);
    });
  }

  // ---- rows -------------------------------------------------------------------------------------

  /**
   * Emits the instructions of {@code which} for {@code item}: in program order, or, where a
   * conjunction of the filter guards probes ({@link #guardsProbes}), depth first from the
   * filter, each conjunction's left operand first and its right operand's own instructions in a
   * branch the row skips where the left has decided the conjunction (conjunctionStops).
   */
  void emitAll(BitSet which, Val[] values, RowEmitter.Item item)
      throws CodegenUnsupportedException {
    if (!guardsProbes(which)) {
      for (int i = which.nextSetBit(0); i >= 0; i = which.nextSetBit(i + 1)) {
        values[i] = emit(i, operands(i, values), item);
      }
      return;
    }
    Guarded walk = new Guarded(which, values, item);
    walk.visit(writerOf(program.filterRegister()));
    for (int i = which.nextSetBit(0); i >= 0; i = which.nextSetBit(i + 1)) {
      walk.visit(i);
    }
  }

  /**
   * Emits the instructions of {@code which} for every item at once: each instruction for all the
   * items before the next, and a probe of a table that may have a direct map as one branch on
   * the map for all of them, each item's read without a branch of its own. The items' probes
   * then wait for L2 together, where {@link #emitAll} per item would wait for one item's before
   * issuing the next's. No instruction may be skipped for an item (its row must be readable), so
   * the filter's conjunctions guard nothing here: a kernel whose filter {@link #guardsProbes}
   * emits it per item.
   */
  void emitAllItems(BitSet which, Val[][] values, RowEmitter.Item[] items)
      throws CodegenUnsupportedException {
    for (int i = which.nextSetBit(0); i >= 0; i = which.nextSetBit(i + 1)) {
      if (op(i) == Opcode.PROBE.code() && mayHaveDirectMap(word(i, 2))) {
        Val[] keys = new Val[items.length];
        for (int k = 0; k < items.length; k++) {
          keys[k] = values[k][sources[i][0]];
        }
        Val[] found = directProbes(word(i, 2), keys);
        for (int k = 0; k < items.length; k++) {
          values[k][i] = found[k];
        }
        continue;
      }
      for (int k = 0; k < items.length; k++) {
        values[k][i] = emit(i, operands(i, values[k]), items[k]);
      }
    }
  }

  // ---- the filter's conjunctions (selection flags) -------------------------------------------

  /**
   * The conjunctions of the filter's conjunction tree: the filter's instruction if it is one,
   * then either operand of one that is. A conjunction is an AND or a SELECT(keep, condition,
   * false) ({@link #falseElseSelects}); its left operand is the AND's first or the SELECT's keep,
   * its right operand the AND's second or the SELECT's condition. Where the left operand decides
   * it (an AND's false and valid, a SELECT's keep not valid and true), the conjunction is false
   * whatever its right operand holds (RowEmitter reads none of it), so the filter is false and
   * the row dropped ({@link #keepOnly} says when an AND's NULL left operand decides it too). The
   * right operand's own instructions then need not run: their values reach only that conjunction
   * (whose result does not depend on them), conjunctions above it (which one decided operand
   * decides), and the rest of the program, which runs only for kept rows.
   */
  private BitSet conjunctions() {
    if (conjunctions == null) {
      conjunctions = new BitSet();
      if (program.hasFilter()) {
        addConjunctions(writerOf(program.filterRegister()));
      }
    }
    return conjunctions;
  }

  private void addConjunctions(int i) {
    if (!isConjunction(i) || conjunctions.get(i)) {
      return;
    }
    conjunctions.set(i);
    addConjunctions(sources[i][0]);
    addConjunctions(sources[i][1]);
  }

  private boolean isConjunction(int i) {
    return op(i) == Opcode.AND.code() || isFalseElseSelect(i);
  }

  /** Whether instruction {@code i} is one of {@link #falseElseSelects}. */
  private boolean isFalseElseSelect(int i) {
    if (falseElseSelects == null) {
      falseElseSelects = falseElseSelects(program);
    }
    return falseElseSelects.get(i);
  }

  /**
   * Where conjunction {@code i}'s left operand {@code left} decides it: false, or not true where
   * the conjunction is a SELECT or the filter's ANDs {@link #keepOnly}.
   */
  private String conjunctionStops(int i, Val left) {
    return op(i) == Opcode.AND.code() && !keepOnly() ? rows.andStops(left)
        : rows.selectStops(left);
  }

  /**
   * Whether the filter's conjunctions decide nothing but which rows it keeps, so that an AND may
   * stop where its left operand is NULL, as a SELECT does: no instruction the filter reads may
   * raise an error (the program is not ANSI, or every such opcode {@link
   * Opcode#raisesNoErrorOfItsOwn}), and only conjunctions read a conjunction's value.
   *
   * <p>Why that is exact: an AND whose left operand is NULL is NULL or false whatever its right
   * operand holds, so it is not true, nor is any conjunction above it, and the filter drops the
   * row either way. Whatever RowEmitter.logic makes of a right operand left unset is NULL
   * or false too. Spark does evaluate the right operand there, which is observable only
   * through an error it raises, and none can. A row the filter keeps has every conjunction true,
   * so no conjunction of it stopped. This is what lets a probe that finds no row (its payload
   * NULL, compared on the left) skip the probes on the right, as StarJoinBench's sparse form does;
   * ChainCompiler's joins are SELECTs, which stop there already.
   */
  private boolean keepOnly() {
    if (keepOnly == null) {
      keepOnly = conjunctionsDecideOnlyTheFilter();
    }
    return keepOnly;
  }

  private boolean conjunctionsDecideOnlyTheFilter() {
    BitSet tree = conjunctions();
    for (int i = 0; i < count; i++) {
      for (int s : sources[i]) {
        if (tree.get(s) && !tree.get(i)) {
          return false;
        }
      }
    }
    if (!program.ansi()) {
      return true;
    }
    BitSet cone = new BitSet();
    mark(writerOf(program.filterRegister()), cone);
    for (int i = cone.nextSetBit(0); i >= 0; i = cone.nextSetBit(i + 1)) {
      if (!Opcode.ofCode(op(i)).raisesNoErrorOfItsOwn()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether some conjunction of the filter ({@link #conjunctions}) has, among {@code which}, a
   * probe that only its right operand reads: Crystal's selection flags then pay, a join lookup (a
   * chain of L2 round trips) only for the rows still alive. Cheaper instructions are not worth a
   * branch, nor loads issued later than they could be.
   */
  boolean guardsProbes(BitSet which) {
    BitSet present = (BitSet) conjunctions().clone();
    present.and(which);
    for (int g = present.nextSetBit(0); g >= 0; g = present.nextSetBit(g + 1)) {
      if (probes(rightOnly(g, which))) {
        return true;
      }
    }
    return false;
  }

  /**
   * The instructions of {@code which} that conjunction {@code g}'s right operand reads and its
   * other operands (the left, a SELECT's constant) do not.
   */
  private BitSet rightOnly(int g, BitSet which) {
    BitSet right = new BitSet();
    mark(sources[g][1], right);
    BitSet others = new BitSet();
    mark(sources[g][0], others);
    if (sources[g].length > 2) {
      mark(sources[g][2], others);
    }
    right.andNot(others);
    right.and(which);
    return right;
  }

  /**
   * {@link #emitAll}'s depth-first walk for one item. A conjunction's right operand goes in a
   * branch where it probes a join table, or where it reads a value that an earlier branch may
   * have skipped: a later conjunct must not run on a value left unset (STARTS_WITH of a payload
   * loaded behind an earlier guard, say; where that guard skipped, the later conjunction's left
   * operand is false, so it skips too). Other right operands (column loads and comparisons)
   * stay outside, where their loads can be issued early.
   */
  private final class Guarded {
    private final BitSet which;
    private final Val[] values;
    private final RowEmitter.Item item;
    private final BitSet done = new BitSet();
    /** The instructions emitted behind a guard, whose values a skipping row leaves unset. */
    private final BitSet mayBeUnset = new BitSet();

    Guarded(BitSet which, Val[] values, RowEmitter.Item item) {
      this.which = which;
      this.values = values;
      this.item = item;
    }

    /** Emits instruction {@code i} after what it reads, unless emitted already. */
    void visit(int i) throws CodegenUnsupportedException {
      if (!which.get(i) || done.get(i)) {
        return;
      }
      if (conjunctions().get(i)) {
        visit(sources[i][0]);
        for (int k = 2; k < sources[i].length; k++) {
          visit(sources[i][k]); // a SELECT's constant
        }
        // What the right operand still has to emit: its other operands' cones are done.
        BitSet own = rightOnly(i, which);
        own.andNot(done);
        if (probes(own) || readsAny(own, mayBeUnset)) {
          String skip = b.label("conjunct_skipped");
          b.op("@%s bra %s", conjunctionStops(i, values[sources[i][0]]), skip);
          visit(sources[i][1]);
          b.place(skip);
          mayBeUnset.or(own);
        } else {
          visit(sources[i][1]);
        }
      } else {
        for (int s : sources[i]) {
          visit(s);
        }
      }
      values[i] = emit(i, operands(i, values), item);
      done.set(i);
    }
  }

  // ---- the filter split at its first probe (PrefilteredRows) -----------------------------------

  /**
   * A row's program in two parts, split where {@link #emitAll} puts a probe of the filter
   * behind its guard, the first whose guard reads a value ({@link #firstGuard}): {@code first}
   * decides whether a row reaches that probe, and every other instruction runs after it. A row
   * that passes the first part may wait in a queue for the rest ({@link PrefilteredRows}),
   * carrying the values of {@code carried} with it.
   *
   * @param guard that conjunction, whose right operand probes
   * @param left the guard's left operand: true (valid, non-zero) for every row that passes
   * @param first the guard's left operand and what it reads, but {@code unread}
   * @param unread the column loads that {@code first} reads only for their NULLs, of columns
   *     without any (Spark's IS NOT NULL of a join key): {@code first} reads no value of them,
   *     so it does not load them; the rest does where it reads them (the probe's key)
   * @param carried the instructions of {@code first} whose values the rest reads: every one but
   *     the guard's left operand (true for every row that passes) and the constants (which the
   *     rest emits again)
   * @param after what the rest runs: the instructions but {@code first}'s and the loads of
   *     {@code unread} it does not read, and the constants of {@code first} it reads
   * @param probe where the split is at a probe filter's bit ({@link #splitAtFilteredProbe}):
   *     that probe, whose keys {@code first} computes, and {@code guard} and {@code left} are -1;
   *     -1 where the split is at a guard
   */
  record Split(int guard, int left, BitSet first, BitSet unread, BitSet carried, BitSet after,
      int probe) {
    /**
     * A row's values (by instruction, of {@code count}) before the first part runs: what its
     * instructions read of {@code unread}, a value that is never NULL and never read.
     */
    Val[] valuesBeforeFirst(int count) {
      Val[] values = new Val[count];
      for (int i = unread.nextSetBit(0); i >= 0; i = unread.nextSetBit(i + 1)) {
        values[i] = Val.of("0");
      }
      return values;
    }
  }

  /**
   * The program of {@code which} (the instructions of the kernel's row) split at its filter's
   * first probe behind a guard that reads a value ({@link Split}), with {@code outputs} (per
   * output, its instruction) read after; null where nothing is split: no such guard, or a row's
   * conjunctions decide more than whether the filter keeps it ({@link #keepOnly}: then a row
   * dropped at the guard could still owe an error).
   */
  Split splitAtFirstProbe(BitSet which, int[] outputs) {
    if (!program.hasFilter() || !keepOnly()) {
      return null;
    }
    int guard = firstGuard(writerOf(program.filterRegister()), which, new BitSet());
    if (guard < 0) {
      return null;
    }
    BitSet first = new BitSet();
    mark(sources[guard][0], first);
    BitSet unread = nullCheckedOnly(first);
    first.andNot(unread);
    return split(guard, sources[guard][0], -1, first, unread, which, outputs);
  }

  /**
   * The {@link Split} of {@code which} whose first part is {@code first} (without {@code
   * unread}), at {@code guard} (its left operand {@code left}) or at {@code probe}'s filter.
   */
  private Split split(int guard, int left, int probe, BitSet first, BitSet unread, BitSet which,
      int[] outputs) {
    BitSet after = (BitSet) which.clone();
    after.andNot(first);
    after.andNot(unread);
    BitSet carried = new BitSet();
    BitSet before = (BitSet) first.clone();
    before.or(unread);
    for (int i = after.nextSetBit(0); i >= 0; i = after.nextSetBit(i + 1)) {
      for (int s : sources[i]) {
        if (before.get(s)) {
          carried.set(s);
        }
      }
    }
    for (int o : outputs) {
      if (before.get(o)) {
        carried.set(o);
      }
    }
    // An unread load that the rest reads, the rest loads.
    BitSet loadedAfter = (BitSet) carried.clone();
    loadedAfter.and(unread);
    carried.andNot(unread);
    after.or(loadedAfter);
    BitSet again = new BitSet();
    for (int i = carried.nextSetBit(0); i >= 0; i = carried.nextSetBit(i + 1)) {
      if (isLoad(i) && op(i) != Opcode.LOAD_COLUMN.code()) {
        again.set(i);
      }
    }
    carried.andNot(again);
    if (left >= 0) {
      carried.clear(left);
    }
    after.or(again);
    return new Split(guard, left, first, unread, carried, after, probe);
  }

  // ---- the filter split at a probe filter's bit (PrefilteredRows) ------------------------------

  /**
   * The program of {@code which} split at its filter's first probe (the first the filter's
   * instructions emit, {@link Guarded}) where that probe's join table has a probe filter
   * ({@code filtered}, by table: known when the kernel is made, CudaHashJoin's ProbeFilter) and
   * the filter keeps no row the probe finds none for ({@link #needsRowOf}): {@code first}
   * computes the probe's keys, a row passes where none is NULL and the keys' bit is set ({@link
   * #guardStops}), and the probe (its walk of the slots) runs in the rest with all that follows.
   * A filtered dimension table's probes mostly end at the bit (StarJoinBench's sparse part: 24
   * in 25 find no row); split at a guard after the probe instead, a warp walked the slots, from
   * L2, at every item one of its 32 rows passed the bit, which is nearly every item. Null where
   * there is no such probe, or where {@link #keepOnly} does not hold (a dropped row could still
   * owe an error).
   */
  Split splitAtFilteredProbe(BitSet which, int[] outputs, BitSet filtered) {
    if (filtered.isEmpty() || !program.hasFilter() || !keepOnly()) {
      return null;
    }
    int filter = writerOf(program.filterRegister());
    int probe = firstProbe(filter, which, new BitSet());
    if (probe < 0 || !filtered.get(word(probe, 2)) || !needsRowOf(filter, probe)) {
      return null;
    }
    BitSet first = new BitSet();
    for (int s : sources[probe]) {
      mark(s, first);
    }
    return split(-1, -1, probe, first, new BitSet(), which, outputs);
  }

  /**
   * The first PROBE among {@code which} that {@link Guarded} emits walking from {@code i}
   * (depth first, a conjunction's left operand before its right), or -1; {@code done}: the
   * instructions walked before.
   */
  private int firstProbe(int i, BitSet which, BitSet done) {
    return firstProbe(code, sources, i, which, done);
  }

  private static int firstProbe(int[] code, int[][] sources, int i, BitSet which, BitSet done) {
    if (!which.get(i) || done.get(i)) {
      return -1;
    }
    done.set(i);
    for (int s : sources[i]) {
      int probe = firstProbe(code, sources, s, which, done);
      if (probe >= 0) {
        return probe;
      }
    }
    return code[i * Program.WORDS] == Opcode.PROBE.code() ? i : -1;
  }

  /**
   * Whether the filter (instruction {@code filter}) is never true for a row whose PROBE {@code
   * probe} finds no build row (its result NULL): one of the filter's conjuncts (the operands of
   * its conjunctions that are not conjunctions, or the filter itself) is then NULL, or an
   * IS_NOT_NULL that is then false. An inner join's IS_NOT_NULL of the row, or a comparison of
   * its payload, is such a conjunct; an outer join's filter has none.
   */
  private boolean needsRowOf(int filter, int probe) {
    if (!conjunctions().get(filter)) {
      return conjunctNeedsRow(filter, probe);
    }
    for (int c = conjunctions().nextSetBit(0); c >= 0; c = conjunctions().nextSetBit(c + 1)) {
      for (int k = 0; k < 2; k++) {
        int operand = sources[c][k];
        if (!conjunctions().get(operand) && conjunctNeedsRow(operand, probe)) {
          return true;
        }
      }
    }
    return false;
  }

  private boolean conjunctNeedsRow(int conjunct, int probe) {
    if (op(conjunct) == Opcode.IS_NOT_NULL.code()) {
      return nullWithout(sources[conjunct][0], probe);
    }
    return nullWithout(conjunct, probe);
  }

  /**
   * Whether instruction {@code i} is NULL wherever {@code probe}'s result is: it is the probe, or
   * an opcode whose result is NULL where an operand is (as HostInterpreter defines them) reads
   * such an instruction.
   */
  private boolean nullWithout(int i, int probe) {
    if (i == probe) {
      return true;
    }
    if (!NULL_WHERE_AN_OPERAND_IS.contains(Opcode.ofCode(op(i)))) {
      return false;
    }
    for (int s : sources[i]) {
      if (nullWithout(s, probe)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The column loads among {@code instructions} of columns without NULLs that only IS_NULL and
   * IS_NOT_NULL of {@code instructions} read (neither reads the value of a value never NULL).
   */
  private BitSet nullCheckedOnly(BitSet instructions) {
    BitSet loads = columnLoads(instructions);
    for (int i = loads.nextSetBit(0); i >= 0; i = loads.nextSetBit(i + 1)) {
      if (inputs.get(word(i, 2)).nullable()) {
        loads.clear(i);
      }
    }
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      if (!isNullCheck(i)) {
        for (int s : sources[i]) {
          loads.clear(s);
        }
      }
    }
    return loads;
  }

  /**
   * The first conjunction {@link Guarded} puts behind a guard for a probe whose left operand
   * reads a value (a guard behind NULL checks of columns without NULLs, Spark's IS NOT NULL of
   * the join keys, passes every row), walking from {@code i} as it does ({@code done}: the
   * instructions it has emitted before), or -1.
   */
  private int firstGuard(int i, BitSet which, BitSet done) {
    if (!which.get(i) || done.get(i)) {
      return -1;
    }
    int[] before = sources[i];
    if (conjunctions().get(i)) {
      // The left operand and a SELECT's constant, then the guard's test.
      before = new int[sources[i].length - 1];
      before[0] = sources[i][0];
      System.arraycopy(sources[i], 2, before, 1, sources[i].length - 2);
    }
    for (int s : before) {
      int guard = firstGuard(s, which, done);
      if (guard >= 0) {
        return guard;
      }
    }
    if (conjunctions().get(i)) {
      BitSet own = rightOnly(i, which);
      own.andNot(done);
      if (probes(own) && readsAValue(sources[i][0])) {
        return i;
      }
      int guard = firstGuard(sources[i][1], which, done);
      if (guard >= 0) {
        return guard;
      }
    }
    done.set(i);
    return -1;
  }

  /** Whether instruction {@code i} is IS_NULL or IS_NOT_NULL (which read only validity). */
  private boolean isNullCheck(int i) {
    return op(i) == Opcode.IS_NULL.code() || op(i) == Opcode.IS_NOT_NULL.code();
  }

  /**
   * Whether instruction {@code i}'s value depends on a value of the row: not where it and what it
   * reads are only constants, conjunctions, and NULL checks of columns without NULLs.
   */
  private boolean readsAValue(int i) {
    BitSet cone = new BitSet();
    mark(i, cone);
    BitSet unread = nullCheckedOnly(cone);
    for (int c = cone.nextSetBit(0); c >= 0; c = cone.nextSetBit(c + 1)) {
      boolean constant = isLoad(c) && op(c) != Opcode.LOAD_COLUMN.code();
      if (!constant && !unread.get(c) && !isNullCheck(c) && !conjunctions().get(c)) {
        return true;
      }
    }
    return false;
  }

  /**
   * A .pred that holds where the guard of {@code split} stops the row ({@code values} holds its
   * left operand): the row does not reach the probe, and the filter drops it.
   */
  String guardStops(Split split, Val[] values) {
    if (split.probe() >= 0) {
      return probeFilterStops(split.probe(), values);
    }
    return conjunctionStops(split.guard(), values[split.left()]);
  }

  /**
   * From here on, the rows emitted have passed the probe filter's bit of probe {@code probe}
   * (rows popped after {@link #splitAtFilteredProbe}'s split): its walk does not read the bit
   * again. -1: none has.
   */
  void rowsPassedFilterBitOf(int probe) {
    bitPassedAt = probe;
  }

  /**
   * Where {@link #splitAtFilteredProbe} split at {@code probe}: a .pred that holds where the
   * probe finds no row for one of its keys' bits: a key is NULL, or the keys' bit of the table's
   * probe filter is clear ({@code values} holds the keys).
   */
  private String probeFilterStops(int probe, Val[] values) {
    b.comment(PROBE_FILTER_SPLIT + " " + word(probe, 2));
    Val[] keys = operands(probe, values);
    String stops = b.pred();
    // The split is only where the table has a filter (the kernel is made for such tables).
    b.op("not.pred %s, %s", stops, probeFilter(tableView(word(probe, 2)), values(keys), true));
    String anyNull = anyNull(keys);
    if (anyNull != null) {
      b.op("or.pred %s, %s, %s", stops, stops, anyNull);
    }
    return stops;
  }

  /** The BOOLEAN value true, as {@link PtxBuilder#booleanOf} a predicate that always holds. */
  Val alwaysTrue() {
    String holds = b.pred();
    b.op("setp.eq.s32 %s, 0, 0", holds);
    return Val.of(b.booleanOf(holds));
  }

  /** Whether an instruction of {@code instructions} reads one of {@code written}. */
  private boolean readsAny(BitSet instructions, BitSet written) {
    for (int i = instructions.nextSetBit(0); i >= 0; i = instructions.nextSetBit(i + 1)) {
      for (int s : sources[i]) {
        if (written.get(s)) {
          return true;
        }
      }
    }
    return false;
  }

  private Val[] operands(int i, Val[] values) {
    Val[] operands = new Val[sources[i].length];
    for (int k = 0; k < sources[i].length; k++) {
      operands[k] = values[sources[i][k]];
    }
    return operands;
  }

  private Val emit(int i, Val[] operands, RowEmitter.Item item)
      throws CodegenUnsupportedException {
    Opcode op = Opcode.ofCode(op(i));
    if (isFalseElseSelect(i)) {
      // Its third operand is the constant 0 (the kernel's key says so): the immediate, with
      // which the SELECT of a BOOLEAN condition is one too (RowEmitter.choose).
      operands = new Val[] {operands[0], operands[1], Val.of(RowEmitter.FALSE)};
    }
    return switch (op) {
      case PROBE -> probe(word(i, 2), operands, mayHaveDirectMap(word(i, 2)),
          i == bitPassedAt);
      case LOAD_BUILD -> loadBuild(word(i, 2), word(i, 4), operands[0]);
      default -> rows.emit(op, word(i, 2), word(i, 3), word(i, 4),
          operands.length > 0 ? operands[0] : null, operands.length > 1 ? operands[1] : null,
          operands.length > 2 ? operands[2] : null, item);
    };
  }

  /** A .pred that holds where the filter's value {@code f} keeps the row (non-NULL, true). */
  String keeps(Val f) {
    String keep = b.truth(f.value());
    if (keep == null) {
      keep = b.pred();
      b.op("setp.ne.s64 %s, %s, 0", keep, f.value());
    }
    if (f.valid() != null) {
      String valid = b.pred();
      b.op("and.pred %s, %s, %s", valid, keep, f.valid());
      keep = valid;
    }
    return keep;
  }

  /** The .b32 first non-zero of two error codes. */
  String firstNonZero(String ea, String eb) {
    String p = b.pred();
    b.op("setp.ne.s32 %s, %s, 0", p, ea);
    String e = b.b32();
    b.op("selp.b32 %s, %s, %s, %s", e, ea, eb, p);
    return e;
  }

  // ---- join probes ------------------------------------------------------------------------------

  private Descriptor tableView(int table) {
    if (program.tables().isEmpty()) {
      throw new IllegalStateException("a probe of a program without join tables");
    }
    if (words != null) {
      return new Descriptor(param(ProgramWords.PARAM), words.tableAt(table), true);
    }
    String view = b.b64();
    b.op("add.s64 %s, %s, %d", view, tables, (long) TABLE_VIEW_BYTES * table);
    return new Descriptor(view, 0, false);
  }

  /**
   * PROBE (program.cuh FindBuildRow): the key tuple's hash (hash.cuh CombineKeyHash of each key's
   * value hash, {@link #valueHashes}), the table's probe filter where it has one ({@link
   * #probeFilter}), then the walk along the slots from the hash's slot to an empty one,
   * comparing the key columns at each slot's build row. NULL when a key is NULL (no walk)
   * or no row matches; the first error among the keys carries over. A table of one integral key
   * may have a direct map (known at run time: the branch is the same for every thread), which
   * replaces the walk by one read, or none where the map is the identity. A table with a string
   * key compares the build row's hash before its keys, as FindBuildRow does: a string's bytes
   * are a round trip a word.
   *
   * @param tryDirectMap whether to read the table's direct map first ({@link #directProbes}'
   *     walk runs where the table has none)
   * @param bitPassed whether the rows have passed the filter's bit already ({@link
   *     #rowsPassedFilterBitOf}): it is not read again
   */
  private Val probe(int table, Val[] keys, boolean tryDirectMap, boolean bitPassed) {
    List<ColumnType> keyTypes = program.tables().get(table).keyTypes();
    b.comment("probe of join table " + table);
    String error = null;
    for (Val k : keys) {
      if (k.error() != null) {
        error = error == null ? k.error() : firstNonZero(error, k.error());
      }
    }
    String anyNull = anyNull(keys);
    String found = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", found);
    String row = b.b64();
    b.op("mov.b64 %s, %d", row, NO_BUILD_ROW);
    String done = b.label("probe_done");
    if (anyNull != null) {
      b.op("@%s bra %s", anyNull, done);
    }
    Descriptor view = tableView(table);
    if (tryDirectMap) {
      directProbe(table, view, keys[0], row, found, done);
    }
    String[] valueHashes = valueHashes(keyTypes, keys);
    String hash = keyTupleHash(valueHashes);
    if (!bitPassed) {
      b.op("@!%s bra %s", probeFilter(view, valueHashes, false), done);
    }
    String slots = field(view, TABLE_SLOTS);
    String keyColumns = field(view, TABLE_KEYS);
    String mask = word(view, TABLE_SLOT_MASK);
    String slot = b.b64();
    b.op("and.b64 %s, %s, %s", slot, hash, mask);
    String[] keyData = new String[keys.length];
    String[] keyOffsets = new String[keys.length];
    for (int k = 0; k < keys.length; k++) {
      String descriptor = inputDescriptor(keyColumns, k);
      keyData[k] = field(descriptor, INPUT_DATA);
      if (keyTypes.get(k).isString()) {
        keyOffsets[k] = field(descriptor, INPUT_OFFSETS);
      }
    }
    boolean strings = hasStringKey(program.tables().get(table));
    String hashes = strings ? field(view, TABLE_HASHES) : null;
    // The build leaves at least half the slots empty, so the walk ends at an empty slot.
    String walk = b.label("probe_walk");
    String next = b.label("probe_next");
    b.place(walk);
    String slotAddress = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", slotAddress, slot, slots);
    String candidate = b.b32();
    b.op("ld.global.nc.s32 %s, [%s]", candidate, slotAddress);
    String empty = b.pred();
    b.op("setp.eq.s32 %s, %s, %d", empty, candidate, NO_BUILD_ROW);
    b.op("@%s bra %s", empty, done);
    String candidate64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", candidate64, candidate);
    if (strings) {
      b.comment(CANDIDATE_HASH);
      String stored = b.b64();
      String hashAddress = b.b64();
      b.op("mad.lo.s64 %s, %s, 8, %s", hashAddress, candidate64, hashes);
      b.op("ld.global.nc.u64 %s, [%s]", stored, hashAddress);
      String otherHash = b.pred();
      b.op("setp.ne.u64 %s, %s, %s", otherHash, stored, hash);
      b.op("@%s bra %s", otherHash, next);
    }
    // The candidate's fixed-width keys compared at once, each read at its row (their loads
    // independent of one another); not its hash first where no key is a string: that was one
    // more dependent L2 read for a slot of the key.
    boolean fixedWidth = keyTypes.stream().anyMatch(t -> !t.isString());
    String differs = fixedWidth ? b.pred() : null;
    boolean firstCompared = true;
    for (int k = 0; k < keys.length; k++) {
      if (keyTypes.get(k).isString()) {
        continue;
      }
      String value = ColumnLoads.plainValue(b, keyTypes.get(k), keyData[k], candidate64);
      if (firstCompared) {
        b.op("setp.ne.s64 %s, %s, %s", differs, value, keys[k].value());
        firstCompared = false;
      } else {
        b.op("setp.ne.or.s64 %s, %s, %s, %s", differs, value, keys[k].value(), differs);
      }
    }
    if (fixedWidth) {
      b.op("@%s bra %s", differs, next);
    }
    for (int k = 0; k < keys.length; k++) {
      if (keyTypes.get(k).isString()) {
        Val built = ColumnLoads.stringAt(b, keyData[k], keyOffsets[k], candidate64, null);
        bytesDiffer(keys[k], built, next);
      }
    }
    b.op("mov.b64 %s, %s", row, candidate64);
    b.op("setp.eq.s32 %s, 0, 0", found);
    b.op("bra.uni %s", done);
    b.place(next);
    b.op("add.s64 %s, %s, 1", slot, slot);
    b.op("and.b64 %s, %s, %s", slot, slot, mask);
    b.op("bra.uni %s", walk);
    b.place(done);
    return new Val(row, found, error, null);
  }

  /** A .pred that holds where one of {@code keys} is NULL; null where none can be. */
  private String anyNull(Val[] keys) {
    String anyNull = null;
    for (Val k : keys) {
      if (k.valid() != null) {
        String isNull = b.pred();
        b.op("not.pred %s, %s", isNull, k.valid());
        if (anyNull != null) {
          b.op("or.pred %s, %s, %s", isNull, isNull, anyNull);
        }
        anyNull = isNull;
      }
    }
    return anyNull;
  }

  /**
   * The hash of a key tuple (.b64; hash.cuh CombineKeyHash of each key's value hash, {@link
   * #valueHashes}), as the build hashed its rows' keys.
   */
  private String keyTupleHash(String[] valueHashes) {
    String hash = b.b64();
    b.op("mov.b64 %s, %d", hash, KEY_TUPLE_SEED);
    for (int k = 0; k < valueHashes.length; k++) {
      String v = b.b64();
      b.op("add.s64 %s, %s, %d", v, valueHashes[k], k);
      hash = combineKeyHash(b, hash, v);
    }
    return hash;
  }

  /**
   * program.cuh JoinValueHash of each of {@code keys} (none NULL), of the types {@code types}: a
   * fixed-width key's 64-bit value as it is, a string's bytes hashed (hash.cuh HashBytes).
   */
  private String[] valueHashes(List<ColumnType> types, Val[] keys) {
    String[] hashes = new String[keys.length];
    for (int k = 0; k < keys.length; k++) {
      hashes[k] = types.get(k).isString()
          ? StringWords.hash(b, keys[k].value(), keys[k].length(), null) : keys[k].value();
    }
    return hashes;
  }

  /** The value of each of {@code keys}, fixed-width all: its value hash ({@link #valueHashes}). */
  private static String[] values(Val[] keys) {
    String[] values = new String[keys.length];
    for (int k = 0; k < keys.length; k++) {
      values[k] = keys[k].value();
    }
    return values;
  }

  /**
   * program.cuh JoinValueEquals for a string key: on to {@code differ} unless {@code built}, the
   * build row's key, has {@code key}'s length and bytes, compared a word of each at a time
   * ({@link StringWords#word}).
   */
  private void bytesDiffer(Val key, Val built, String differ) {
    b.comment(STRING_KEY_COMPARE);
    String p = b.pred();
    b.op("setp.ne.s32 %s, %s, %s", p, built.length(), key.length());
    b.op("@%s bra %s", p, differ);
    String length64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", length64, key.length());
    String i = b.b64();
    b.op("mov.b64 %s, 0", i);
    String loop = b.label("probe_key_word");
    String same = b.label("probe_key_same");
    b.place(loop);
    b.op("setp.ge.s64 %s, %s, %s", p, i, length64);
    b.op("@%s bra %s", p, same);
    String mine = StringWords.word(b, key.value(), i, length64);
    String theirs = StringWords.word(b, built.value(), i, length64);
    b.op("setp.ne.b64 %s, %s, %s", p, mine, theirs);
    b.op("@%s bra %s", p, differ);
    b.op("add.s64 %s, %s, 8", i, i);
    b.op("bra %s", loop);
    b.place(same);
  }

  /**
   * hash.cuh CombineKeyHash: {@code hash} (.b64) with a key column's value hash {@code v} (.b64,
   * the value plus the column's index) folded in, into a new register. The probes' and the
   * grouped aggregate's key tuple hashes (GroupLookup) both fold with it.
   */
  static String combineKeyHash(PtxBuilder b, String hash, String v) {
    String mixed = mix(b, v);
    b.op("xor.b64 %s, %s, %s", mixed, mixed, hash);
    return mix(b, mixed);
  }

  /** Whether join table {@code table} may have a direct map: one key of a type that may. */
  private boolean mayHaveDirectMap(int table) {
    List<ColumnType> keyTypes = program.tables().get(table).keyTypes();
    return keyTypes.size() == 1 && directKey(keyTypes.get(0));
  }

  /** Whether a key of this type may have a direct map (CudaHashJoin.directKeys). */
  private static boolean directKey(ColumnType type) {
    return switch (type.id()) {
      case BYTE, SHORT, INT, LONG, DATE, TIMESTAMP -> true;
      default -> false;
    };
  }

  /**
   * program.cuh FindBuildRow's direct map: when the table has one, {@code row} and {@code found}
   * from direct[key - direct_min] (NULL outside the range or at -1; key - direct_min itself
   * where the map is the identity, {@link DirectMap#row}), then on to {@code done};
   * without one, on to the slots' walk that follows.
   */
  private void directProbe(int table, Descriptor view, Val key, String row, String found,
      String done) {
    String walk = b.label("probe_hashed");
    DirectMap map = directMap(table, view, walk);
    DirectMap.Offset offset = map.offset(key);
    b.op("@!%s bra %s", map.inside(offset), done);
    String candidate = map.row(offset.value(), null);
    b.op("setp.ne.s32 %s, %s, %d", found, candidate, NO_BUILD_ROW);
    b.op("cvt.s64.s32 %s, %s", row, candidate);
    b.op("bra.uni %s", done);
    b.place(walk);
  }

  /**
   * A join table's direct map: its words' global address, its first key, its key span, and
   * whether it is the identity (program.cuh JoinTableView.direct_identity; the same for every
   * thread). A map of a key of at most 4 bytes works in 32 bits ({@link #narrow}).
   */
  private final class DirectMap {
    private final String base;
    private final String min;
    private final String span;
    private final String identity;
    /**
     * Whether the table's key type has at most 4 bytes: the map's first key and that key plus
     * the span less 1 are then 32-bit integers (the span is at most CudaHashJoin.directSpan's
     * 2^28), and so, for a key that is a 32-bit integer too, key - min wraps in 32 bits to
     * below the span exactly where the 64-bit difference lies in [0, span). min and span are
     * then .b32, offsets too.
     */
    private final boolean narrow;

    DirectMap(String base, String min, String span, String identity, boolean narrow) {
      this.base = base;
      this.min = min;
      this.span = span;
      this.identity = identity;
      this.narrow = narrow;
    }

    /**
     * A key's offset in the map: key - min in {@code value} (.b32 where {@link #narrow}, else
     * .b64), and {@code fits}, a .pred that holds where the key is a 32-bit integer (null: it
     * is one, or the map is not narrow).
     */
    record Offset(String value, String fits) {}

    /** {@code key}'s {@link Offset}. */
    Offset offset(Val key) {
      if (!narrow) {
        String offset = b.b64();
        b.op("sub.s64 %s, %s, %s", offset, key.value(), min);
        return new Offset(offset, null);
      }
      String low = b.narrow(key.value());
      String fits = null;
      if (low == null) {
        // Not loaded as a 32-bit value (an expression's): one outside that range is in no map.
        low = b.b32();
        b.op("cvt.u32.u64 %s, %s", low, key.value());
        String back = b.b64();
        b.op("cvt.s64.s32 %s, %s", back, low);
        fits = b.pred();
        b.op("setp.eq.s64 %s, %s, %s", fits, back, key.value());
      }
      String offset = b.b32();
      b.op("sub.u32 %s, %s, %s", offset, low, min);
      return new Offset(offset, fits);
    }

    /** A new predicate: whether the key at {@code offset} lies in the map (below its span). */
    String inside(Offset offset) {
      String inside = b.pred();
      b.op("setp.lt.%s %s, %s, %s", narrow ? "u32" : "u64", inside, offset.value(), span);
      if (offset.fits() != null) {
        b.op("and.pred %s, %s, %s", inside, inside, offset.fits());
      }
      return inside;
    }

    /**
     * The build row (.b32, -1 for none) of the key at {@code offset} ({@link #offset}, below the
     * span) where {@code where} holds (null: every thread), -1 elsewhere: the offset itself where
     * the map is the identity, else the map's word, read only where it is not.
     */
    String row(String offset, String where) {
      String reads = b.pred();
      b.op("not.pred %s, %s", reads, identity);
      String candidate = b.b32();
      String asRow = narrow ? "mov.b32" : "cvt.u32.u64";
      if (where == null) {
        b.op("%s %s, %s", asRow, candidate, offset);
      } else {
        b.op("and.pred %s, %s, %s", reads, reads, where);
        String inOrder = b.pred();
        b.op("and.pred %s, %s, %s", inOrder, identity, where);
        b.op("mov.b32 %s, %d", candidate, NO_BUILD_ROW);
        b.op("@%s %s %s, %s", inOrder, asRow, candidate, offset);
      }
      String address = b.b64();
      if (narrow) {
        b.op("mul.wide.u32 %s, %s, 4", address, offset);
        b.op("add.s64 %s, %s, %s", address, address, base);
      } else {
        b.op("mad.lo.s64 %s, %s, 4, %s", address, offset, base);
      }
      b.op("@%s ld.global.nc.s32 %s, [%s]", reads, candidate, address);
      return candidate;
    }
  }

  /**
   * The direct map of join table {@code table} at {@code view}, or on to {@code walk} when it
   * has none (the same for every thread).
   */
  private DirectMap directMap(int table, Descriptor view, String walk) {
    String direct = word(view, TABLE_DIRECT);
    String none = b.pred();
    b.op("setp.eq.u64 %s, %s, 0", none, direct);
    b.op("@%s bra.uni %s", none, walk);
    boolean narrow = program.tables().get(table).keyTypes().get(0).id().width() <= Integer.BYTES;
    String min = narrow ? lowWord(view, TABLE_DIRECT_MIN) : word(view, TABLE_DIRECT_MIN);
    String span = narrow ? lowWord(view, TABLE_DIRECT_SPAN) : word(view, TABLE_DIRECT_SPAN);
    String identity = b.pred();
    b.op("setp.ne.u64 %s, %s, 0", identity, word(view, TABLE_DIRECT_IDENTITY));
    return new DirectMap(global(direct), min, span, identity, narrow);
  }

  /**
   * Whether a build row of the join table at {@code view}, which has no direct map, may have the
   * keys (none NULL) of {@code valueHashes} ({@link #valueHashes}), as its probe filter says
   * (program.cuh JoinTableView.filter: bit h >> filter_shift of the keys' filter hash h, hash.cuh
   * CombineFilterHash of their value hashes; 0 where the table has none): a new predicate, true
   * where the table has no filter (the same for every thread) or the keys' bit is set. A clear
   * bit ends the probe before its walk of the slots. With {@code hasFilter} the kernel knows the
   * table has one, and reads the bit without testing the filter's address.
   */
  private String probeFilter(Descriptor view, String[] valueHashes, boolean hasFilter) {
    String hash = b.b64();
    b.op("mov.b64 %s, 0", hash);
    for (String v : valueHashes) {
      b.op("add.s64 %s, %s, %s", hash, hash, v);
      b.op("mul.lo.s64 %s, %s, %d", hash, hash, PROBE_FILTER_MULTIPLIER);
    }
    String bit = b.b64();
    b.op("shr.u64 %s, %s, %s", bit, hash, lowWord(view, TABLE_FILTER_SHIFT));
    // The build sets the bits in 32-bit words; little-endian, bit i is bit i % 8 of byte i / 8,
    // as in a validity bitmap.
    return hasFilter ? ColumnLoads.bitAt(b, word(view, TABLE_FILTER), bit)
        : ColumnLoads.validBitIfPresent(b, word(view, TABLE_FILTER), bit);
  }

  /**
   * PROBE of join table {@code table} by one integral key, for several items ({@code keys}, one
   * per item): with the table's direct map, each item's row read without a branch (program.cuh
   * FindBuildRow's direct map: NULL for a NULL key, outside the range or at -1); without one,
   * each item's walk ({@link #probe}).
   */
  private Val[] directProbes(int table, Val[] keys) {
    b.comment("probes of join table " + table + " for " + keys.length + " items");
    Val[] results = new Val[keys.length];
    String[] rowOf = new String[keys.length];
    String[] foundOf = new String[keys.length];
    for (int k = 0; k < keys.length; k++) {
      rowOf[k] = b.b64();
      foundOf[k] = b.pred();
    }
    Descriptor view = tableView(table);
    String walk = b.label("probes_hashed");
    String done = b.label("probes_done");
    DirectMap map = directMap(table, view, walk);
    for (int k = 0; k < keys.length; k++) {
      DirectMap.Offset offset = map.offset(keys[k]);
      String inside = map.inside(offset);
      if (keys[k].valid() != null) {
        b.op("and.pred %s, %s, %s", inside, inside, keys[k].valid());
      }
      String candidate = map.row(offset.value(), inside);
      b.op("setp.ne.s32 %s, %s, %d", foundOf[k], candidate, NO_BUILD_ROW);
      b.op("cvt.s64.s32 %s, %s", rowOf[k], candidate);
    }
    b.op("bra.uni %s", done);
    b.place(walk);
    for (int k = 0; k < keys.length; k++) {
      Val walked = probe(table, new Val[] {keys[k]}, false, false); // the table has no map
      b.op("mov.b64 %s, %s", rowOf[k], walked.value());
      b.op("mov.pred %s, %s", foundOf[k], walked.valid());
    }
    b.place(done);
    for (int k = 0; k < keys.length; k++) {
      results[k] = new Val(rowOf[k], foundOf[k], keys[k].error(), null);
    }
    return results;
  }

  private String mix(String x) {
    return mix(b, x);
  }

  /** hash.cuh Mix (splitmix64's finaliser) of {@code x}, into a new register. */
  static String mix(PtxBuilder b, String x) {
    String r = b.b64();
    String t = b.b64();
    b.op("shr.u64 %s, %s, 30", t, x);
    b.op("xor.b64 %s, %s, %s", r, x, t);
    b.op("mul.lo.s64 %s, %s, %d", r, r, MIX_1);
    b.op("shr.u64 %s, %s, 27", t, r);
    b.op("xor.b64 %s, %s, %s", r, r, t);
    b.op("mul.lo.s64 %s, %s, %d", r, r, MIX_2);
    b.op("shr.u64 %s, %s, 31", t, r);
    b.op("xor.b64 %s, %s, %s", r, r, t);
    return r;
  }

  /**
   * LOAD_BUILD: payload column {@code column} of join table {@code table} at the build row in
   * {@code row}, as LOAD_COLUMN reads a plain column (a table's columns are plain copies); NULL
   * when the row is NULL or the value is. Whether the column has a validity bitmap is known only
   * at run time.
   */
  private Val loadBuild(int table, int column, Val row) {
    ColumnType type = program.tables().get(table).payloadTypes().get(column);
    b.comment("payload " + column + " of join table " + table);
    String value = b.b64();
    if (!type.isString() && row.valid() != null) {
      return plainPayload(table, column, type, row, value);
    }
    b.op("mov.b64 %s, 0", value);
    String length = type.isString() ? b.b32() : null;
    if (length != null) {
      b.op("mov.b32 %s, 0", length);
    }
    String valid = b.pred();
    b.op("setp.ne.s32 %s, 0, 0", valid);
    // A NULL row reads nothing (the table may have no rows).
    String skip = b.label("payload_done");
    if (row.valid() != null) {
      String isNull = b.pred();
      b.op("not.pred %s, %s", isNull, row.valid());
      b.op("@%s bra %s", isNull, skip);
    }
    Payload payload = payload(table, column);
    b.op("mov.pred %s, %s", valid,
        ColumnLoads.validBitIfPresent(b, payload.validity(), row.value()));
    String data = payload.data();
    if (type.isString()) {
      String offsets = field(payload.descriptor(), INPUT_OFFSETS);
      Val s = ColumnLoads.stringAt(b, data, offsets, row.value(), null);
      b.op("mov.b64 %s, %s", value, s.value());
      b.op("mov.b32 %s, %s", length, s.length());
    } else {
      b.op("mov.b64 %s, %s", value, ColumnLoads.plainValue(b, type, data, row.value()));
    }
    b.place(skip);
    return new Val(value, valid, row.error(), length);
  }

  /**
   * A join table's payload column: its descriptor (global), its data (global) and its validity
   * bitmap's address (generic; 0 when it has none).
   */
  private record Payload(String descriptor, String data, String validity) {}

  /** Payload column {@code column} of join table {@code table}. */
  private Payload payload(int table, int column) {
    Descriptor view = tableView(table);
    String payloads = field(view, TABLE_PAYLOADS);
    String descriptor = inputDescriptor(payloads, column);
    String data = field(descriptor, INPUT_DATA);
    String validity = b.b64();
    b.op("ld.global.nc.u64 %s, [%s+%d]", validity, descriptor, INPUT_VALIDITY);
    return new Payload(descriptor, data, validity);
  }

  /**
   * LOAD_BUILD of a fixed-width payload at a row that may be NULL, without a branch (so that
   * {@link #emitAllItems}' items read together): a NULL row reads the column's descriptor instead
   * (a readable address; the table may have no rows) and no validity bit, and gives NULL.
   */
  private Val plainPayload(int table, int column, ColumnType type, Val row, String value) {
    Payload payload = payload(table, column);
    String safeRow = b.b64();
    b.op("selp.b64 %s, %s, 0, %s", safeRow, row.value(), row.valid());
    String safeData = b.b64();
    b.op("selp.b64 %s, %s, %s, %s", safeData, payload.data(), payload.descriptor(),
        row.valid());
    String safeValidity = b.b64();
    b.op("selp.b64 %s, %s, 0, %s", safeValidity, payload.validity(), row.valid());
    String valid = b.pred();
    b.op("and.pred %s, %s, %s", valid,
        ColumnLoads.validBitIfPresent(b, safeValidity, safeRow), row.valid());
    String loaded = ColumnLoads.plainValue(b, type, safeData, safeRow);
    b.op("selp.b64 %s, %s, 0, %s", value, loaded, row.valid());
    return new Val(value, valid, row.error(), null);
  }

  // ---- RowEmitter.KernelContext ----------------------------------------------------------------

  @Override
  public boolean nonZeroConstant(int index) {
    return program.constants()[index] != 0;
  }

  @Override
  public String constant(int index) {
    String r = constantRegisters.get(index);
    if (r == null) {
      throw new IllegalStateException("constant " + index + " was not loaded for this phase");
    }
    return r;
  }

  @Override
  public String strings() {
    return strings;
  }

  @Override
  public String constantsBase() {
    return constants;
  }

  @Override
  public String alwaysFalse() {
    return alwaysFalse;
  }

  /**
   * The next item's columns loaded ahead of it ({@link LookaheadColumns#take}): its LOAD_COLUMNs
   * of them take these instead of loading. An empty map ends it.
   */
  void takeLoadedAhead(Map<Integer, LookaheadColumns.Raw> raw) {
    loadedAhead = raw;
  }

  /** Column c's validity bitmap (.b64, global), or null. */
  String columnValidity(int c) {
    return columnRegisters(c).validity();
  }

  /** Plain column c's data (.b64, global). */
  String columnData(int c) {
    return columnRegisters(c).data();
  }

  /** Encoded column c's block starts (.b64, global). */
  String columnBlockStarts(int c) {
    return columnRegisters(c).blockStarts();
  }

  /** Encoded column c's words (.b64, global). */
  String columnWords(int c) {
    return columnRegisters(c).words();
  }

  @Override
  public Val loadColumn(int column, RowEmitter.Item item) {
    LookaheadColumns.Raw ahead = loadedAhead.get(column);
    if (ahead != null && ahead.header() == null) {
      return LookaheadColumns.value(b, ahead, item.row());
    }
    ColumnRegisters c = columnRegisters(column);
    ColumnLoads.ForMiniblock miniblock = runMiniblocks.get(column);
    int later = item.index(); // a run's item i is its first row plus i
    if (ahead != null) {
      miniblock = LookaheadColumns.miniblock(b, ahead, c.words(), item.row(),
          inputs.get(column).referenceWords());
      later = 0;
    }
    if (miniblock == null && tileHeaders != null && tileHeaders.covers(column)) {
      miniblock = tileHeaders.miniblock(column, item.row());
      later = 0;
    }
    return ColumnLoads.load(b, inputs.get(column), c.data(), c.validity(), c.offsets(),
        c.words(), c.blockStarts(), dforValues.get(column), miniblock, later, item,
        leftCoded.get(column));
  }

  /**
   * Leaves the strings of dictionary column {@code column} undecoded where it is loaded: its
   * values keep their codes ({@link Val#code}), with a value and length of 0, and a reader
   * that needs a string decodes it ({@link #decodeString}). Only for a column whose strings no
   * instruction reads (CodeGroups.decodedAtLookup).
   */
  void leaveCoded(int column) {
    if (!inputs.get(column).dictionary()) {
      throw new IllegalArgumentException("column " + column + " holds no dictionary codes");
    }
    leftCoded.set(column);
  }

  /**
   * The string of code {@code code} (.b64) of dictionary column {@code column}, which {@link
   * #leaveCoded} left undecoded, NULL where {@code valid} (a .pred, or null) is false.
   */
  Val decodeString(int column, String code, String valid) {
    ColumnRegisters c = columnRegisters(column);
    return ColumnLoads.stringAt(b, c.data(), c.offsets(), code, valid);
  }
}
