package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the PTX of one filter-and-project pipeline as its own kernel: phase 1 of
 * native-kernels/kernels/filter_project.cu ({@code tessera_filter_project}) with the program
 * compiled in instead of interpreted. Same arguments, same status layout, same results; phase 2
 * (string offsets and gather) stays the hand-written kernels.
 *
 * <p>What the generated code does differently from the interpreter:
 * <ul>
 *   <li>Every value lives in registers, named per instruction (so the code may be reordered), with
 *       validity and error code only where they can be other than "valid" and 0.
 *   <li>Selection flags (Crystal's BlockPred): the instructions the filter depends on run first;
 *       a row the filter drops runs none of the others. Instructions no output or filter reads
 *       are not emitted.
 *   <li>Column types and encodings are fixed: a load is the few instructions its layout needs;
 *       GPU-FOR is decoded inline (gpufor.cuh ForValue), GPU-DFOR a tile at a time by the
 *       prelude's {@code tessera_load_dfor_tile}, hoisted to the top of the kernel.
 *   <li>Constants are read from the kernel's constants argument, so programs that differ only in
 *       their constants share a kernel ({@link #key}).
 * </ul>
 * The tile primitives (taking a tile, the block scan, the look-back, block sums) are the
 * prelude's, the interpreter kernels' own code.
 */
public final class FilterProjectGenerator {
  /** Prefix of the generated kernels' entry names; the rest is the key's hash. */
  public static final String ENTRY_PREFIX = "tessera_gen_filter_project_";

  // The launch shape (config.cuh; LaunchShape checks it against the CUDA constants).
  private static final int BLOCK_THREADS = 128;
  private static final int ITEMS = 4;
  private static final int TILE_ITEMS = BLOCK_THREADS * ITEMS;

  // program.cuh InputColumn and filter_project.cu's structs (ProgramPlan and CudaFilterProject
  // hold the Java side of these layouts; the generated kernel is checked against the same
  // structs by running the same suites).
  private static final int INPUT_COLUMN_BYTES = 48;
  private static final int INPUT_DATA = 0;
  private static final int INPUT_VALIDITY = 8;
  private static final int INPUT_OFFSETS = 16;
  private static final int INPUT_WORDS = 32;
  private static final int INPUT_BLOCK_STARTS = 40;
  private static final int OUTPUT_COLUMN_BYTES = 40;
  private static final int OUTPUT_DATA = 0;
  private static final int OUTPUT_VALIDITY = 8;
  private static final int OUTPUT_STRING_LENGTHS = 16;
  private static final int OUTPUT_STRING_SOURCES = 24;
  private static final int STATUS_FIRST_ERROR = 0;
  private static final int STATUS_KEPT_ROWS = 8;
  private static final int STATUS_TILE_COUNTER = 16;
  private static final int OUTPUT_STATUS_BYTES = 32;
  private static final int ERROR_ROW_SHIFT = 8;

  private FilterProjectGenerator() {}

  /** The identity of a generated kernel: everything it bakes in, constants' values excluded. */
  public static String key(Program program, List<InputSpec> inputs) {
    StringBuilder key = new StringBuilder("filter-project v1;");
    for (int word : program.code()) {
      key.append(word).append(',');
    }
    key.append(";r").append(program.registerCount()).append(";f").append(program.filterRegister())
        .append(";a").append(program.ansi()).append(";o");
    for (Program.Output o : program.outputs()) {
      key.append(o.register()).append(':').append(o.type()).append(',');
    }
    key.append(";i");
    for (InputSpec in : inputs) {
      key.append(in.type()).append(':').append(in.encoding()).append(':').append(in.nullable())
          .append(',');
    }
    return key.toString();
  }

  /** The opcodes of {@code program} the generator has no emitter for, in program order. */
  public static java.util.Set<Opcode> uncoveredOpcodes(Program program) {
    java.util.Set<Opcode> uncovered = new java.util.LinkedHashSet<>();
    for (int i = 0; i < program.instructionCount(); i++) {
      Opcode op = Opcode.ofCode(program.code()[i * Program.WORDS]);
      if (!RowEmitter.covers(op)) {
        uncovered.add(op);
      }
    }
    return uncovered;
  }

  /** The entry name of the kernel for {@code key}. */
  static String entryName(String key) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8));
      return ENTRY_PREFIX + HexFormat.of().formatHex(hash, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }

  /**
   * The kernel of {@code program} over batches laid out as {@code inputs}.
   *
   * @throws CodegenUnsupportedException when the program uses what the generator does not cover
   */
  public static GeneratedKernel generate(Program program, List<InputSpec> inputs)
      throws CodegenUnsupportedException {
    if (!program.tables().isEmpty()) {
      throw new CodegenUnsupportedException("the kernel generator does not probe join tables yet");
    }
    if (inputs.size() != program.inputTypes().size()) {
      throw new IllegalArgumentException("the program reads " + program.inputTypes().size()
          + " columns, " + inputs.size() + " were described");
    }
    String key = key(program, inputs);
    String entry = entryName(key);
    return new GeneratedKernel(entry, key, new Writer(program, inputs, entry).write());
  }

  /** One kernel's text under construction. */
  private static final class Writer implements RowEmitter.KernelContext {
    private final Program program;
    private final List<InputSpec> inputs;
    private final String entry;
    private final PtxBuilder b = new PtxBuilder();
    private final RowEmitter rows;
    private final int[] code;
    private final int count;

    // Kernel-wide registers.
    private String constants;
    private String strings;
    private String inputsBase;
    private String alwaysFalse;
    private String tileOffset;
    private String numTileItems;
    private final Map<Integer, String> constantRegisters = new LinkedHashMap<>();
    private final Map<Integer, ColumnRegisters> columns = new LinkedHashMap<>();
    private final Map<Integer, String[]> dforValues = new LinkedHashMap<>();

    /** One input column's descriptor fields, loaded once. */
    private record ColumnRegisters(String data, String validity, String offsets, String words,
        String blockStarts) {}

    Writer(Program program, List<InputSpec> inputs, String entry) {
      this.program = program;
      this.inputs = inputs;
      this.entry = entry;
      this.rows = new RowEmitter(b, program.ansi(), this);
      this.code = program.code();
      this.count = program.instructionCount();
    }

    private int op(int i) {
      return code[i * Program.WORDS];
    }

    private int word(int i, int w) {
      return code[i * Program.WORDS + w];
    }

    String write() throws CodegenUnsupportedException {
      // Which instruction defines each register operand, and which instructions are needed.
      int[][] sources = new int[count][];
      int[] lastWriter = new int[Program.MAX_REGISTERS];
      java.util.Arrays.fill(lastWriter, -1);
      for (int i = 0; i < count; i++) {
        Opcode op = Opcode.ofCode(op(i));
        List<Integer> registers = RowEmitter.registerOperands(op, word(i, 2), word(i, 3),
            word(i, 4));
        sources[i] = new int[registers.size()];
        for (int k = 0; k < registers.size(); k++) {
          int writer = lastWriter[registers.get(k)];
          if (writer < 0) {
            throw new IllegalArgumentException("r" + registers.get(k) + " is read before it is"
                + " written at instruction " + i + " (ProgramChecks rejects such programs)");
          }
          sources[i][k] = writer;
        }
        lastWriter[word(i, 1)] = i;
      }
      int filter = program.hasFilter() ? lastWriter[program.filterRegister()] : -1;
      int[] outputs = new int[program.outputs().size()];
      for (int o = 0; o < outputs.length; o++) {
        outputs[o] = lastWriter[program.outputs().get(o).register()];
      }
      BitSet cone = new BitSet();
      if (filter >= 0) {
        mark(filter, sources, cone);
      }
      BitSet needed = (BitSet) cone.clone();
      for (int o : outputs) {
        mark(o, sources, needed);
      }
      BitSet rest = (BitSet) needed.clone();
      rest.andNot(cone);

      header();
      prologue(needed);
      String[] keep = new String[ITEMS];
      Val[][] outputValues = new Val[ITEMS][];
      for (int item = 0; item < ITEMS; item++) {
        keep[item] = b.b32();
        outputValues[item] = item(item, sources, cone, rest, filter, outputs, keep[item]);
      }
      epilogue(keep, outputValues);
      return text();
    }

    private static void mark(int i, int[][] sources, BitSet into) {
      if (into.get(i)) {
        return;
      }
      into.set(i);
      for (int s : sources[i]) {
        mark(s, sources, into);
      }
    }

    // ---- the kernel's parts ----------------------------------------------------------------------

    private final StringBuilder params = new StringBuilder();

    private void header() {
      // tessera_filter_project's parameters, in order (CudaFilterProject passes them).
      String[][] list = {
          {"u64", "code"}, {"u32", "instruction_count"}, {"u32", "register_count"},
          {"u64", "constants"}, {"u64", "strings"}, {"u64", "inputs"}, {"u64", "tables"},
          {"u64", "outputs"}, {"u32", "output_count"}, {"u32", "filter_register"},
          {"u32", "ansi"}, {"u32", "rows"}, {"u64", "status"}, {"u64", "output_status"},
          {"u64", "tile_status"}};
      for (int i = 0; i < list.length; i++) {
        params.append(i == 0 ? "" : ",\n").append("\t.param .").append(list[i][0]).append(' ')
            .append(param(list[i][1]));
      }
    }

    private String param(String name) {
      return entry + "_" + name;
    }

    private String loadParam(String type, String name) {
      String r = type.equals("u64") ? b.b64() : b.b32();
      b.op("ld.param.%s %s, [%s]", type, r, param(name));
      return r;
    }

    private String global(String generic) {
      String r = b.b64();
      b.op("cvta.to.global.u64 %s, %s", r, generic);
      return r;
    }

    private String status;
    private String rowsRegister;

    private void prologue(BitSet needed) {
      b.comment("prologue: arguments, the tile, descriptors and constants");
      constants = global(loadParam("u64", "constants"));
      strings = loadParam("u64", "strings");
      inputsBase = global(loadParam("u64", "inputs"));
      status = global(loadParam("u64", "status"));
      String rows32 = loadParam("u32", "rows");
      rowsRegister = b.b64();
      b.op("cvt.s64.s32 %s, %s", rowsRegister, rows32);
      alwaysFalse = b.pred();
      b.op("setp.ne.s32 %s, 0, 0", alwaysFalse);

      String counter = b.b64();
      b.op("add.s64 %s, %s, %d", counter, status, STATUS_TILE_COUNTER);
      tile = b.b64();
      PreludeCall.call(b, "tessera_take_tile", List.of(tile), List.of(PreludeCall.b64(counter)));
      tileOffset = b.b64();
      b.op("mul.lo.s64 %s, %s, %d", tileOffset, tile, TILE_ITEMS);
      String remaining = b.b64();
      b.op("sub.s64 %s, %s, %s", remaining, rowsRegister, tileOffset);
      String clipped = b.b64();
      b.op("min.s64 %s, %s, %d", clipped, remaining, TILE_ITEMS);
      numTileItems = b.b32();
      b.op("cvt.u32.u64 %s, %s", numTileItems, clipped);
      thread = b.b32();
      b.op("mov.u32 %s, %%tid.x", thread);
      String thread64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", thread64, thread);
      threadRow = b.b64();
      b.op("add.s64 %s, %s, %s", threadRow, tileOffset, thread64);

      // Every column a needed LOAD_COLUMN reads: its descriptor now, and GPU-DFOR tiles (the
      // decode synchronizes the block, so it runs here, where every thread is).
      for (int i = needed.nextSetBit(0); i >= 0; i = needed.nextSetBit(i + 1)) {
        if (op(i) == Opcode.LOAD_CONST.code() && !constantRegisters.containsKey(word(i, 2))) {
          // In the prologue, which every item's code follows: an item may skip its loads.
          String r = b.b64();
          b.op("ld.global.nc.u64 %s, [%s+%d]", r, constants, 8L * word(i, 2));
          constantRegisters.put(word(i, 2), r);
        }
        if (op(i) == Opcode.LOAD_COLUMN.code()) {
          int column = word(i, 2);
          columnRegisters(column);
          if (inputs.get(column).encoding() == Encoding.DFOR && !dforValues.containsKey(column)) {
            dforValues.put(column, loadDforTile(column));
          }
        }
      }
    }

    private String tile;
    private String thread;
    private String threadRow;

    private ColumnRegisters columnRegisters(int column) {
      return columns.computeIfAbsent(column, c -> {
        InputSpec spec = inputs.get(c);
        String descriptor = b.b64();
        b.op("add.s64 %s, %s, %d", descriptor, inputsBase, (long) INPUT_COLUMN_BYTES * c);
        String data = field(descriptor, INPUT_DATA);
        String validity = spec.nullable() ? field(descriptor, INPUT_VALIDITY) : null;
        String offsets = spec.type().isString() ? field(descriptor, INPUT_OFFSETS) : null;
        boolean encoded = spec.encoding() != Encoding.PLAIN;
        String words = encoded ? field(descriptor, INPUT_WORDS) : null;
        String starts = encoded ? field(descriptor, INPUT_BLOCK_STARTS) : null;
        return new ColumnRegisters(data, validity, offsets, words, starts);
      });
    }

    private String field(String descriptor, int offset) {
      String r = b.b64();
      b.op("ld.global.nc.u64 %s, [%s+%d]", r, descriptor, offset);
      return global(r);
    }

    private String[] loadDforTile(int column) {
      String descriptor = b.b64();
      b.op("add.s64 %s, %s, %d", descriptor, inputsBase, (long) INPUT_COLUMN_BYTES * column);
      // The prelude takes the generic address of the descriptor.
      String generic = b.b64();
      b.op("cvta.global.u64 %s, %s", generic, descriptor);
      String[] values = new String[ITEMS];
      List<PreludeCall.Field> fields = new ArrayList<>();
      for (int item = 0; item < ITEMS; item++) {
        values[item] = b.b64();
        fields.add(new PreludeCall.Field(8 * item, "b64", values[item]));
      }
      PreludeCall.callStruct(b, "tessera_load_dfor_tile", 8, 8 * ITEMS, fields, List.of(
          PreludeCall.b64(generic), PreludeCall.b64(tileOffset),
          PreludeCall.b32(numTileItems)));
      return values;
    }

    /** One item's code; returns the output values, the keep flag in {@code keep}. */
    private Val[] item(int item, int[][] sources, BitSet cone, BitSet rest, int filter,
        int[] outputs, String keep) throws CodegenUnsupportedException {
      b.comment("item " + item);
      String row = b.b64();
      b.op("add.s64 %s, %s, %d", row, threadRow, (long) item * BLOCK_THREADS);
      RowEmitter.Item it = new RowEmitter.Item(item, row);
      String done = b.label("item" + item + "_done");
      b.op("mov.b32 %s, 0", keep);
      String outside = b.pred();
      b.op("setp.ge.s64 %s, %s, %s", outside, row, rowsRegister);
      b.op("@%s bra %s", outside, done);

      Val[] values = new Val[count];
      emitAll(cone, sources, values, it);
      String error = null;
      String keepPred = null;
      if (filter >= 0) {
        Val f = values[filter];
        keepPred = b.pred();
        b.op("setp.ne.s64 %s, %s, 0", keepPred, f.value());
        if (f.valid() != null) {
          b.op("and.pred %s, %s, %s", keepPred, keepPred, f.valid());
        }
        error = f.error();
        if (error != null) {
          reportError(error, row, null);
        }
        String skip = b.pred();
        b.op("not.pred %s, %s", skip, keepPred);
        b.op("@%s bra %s", skip, done);
      }
      emitAll(rest, sources, values, it);
      // The first error among the outputs of a kept row (RowErrorCode), unless the filter's
      // error was reported already.
      String outputError = null;
      for (int o : outputs) {
        if (values[o].error() != null) {
          outputError = outputError == null ? values[o].error()
              : firstNonZero(outputError, values[o].error());
        }
      }
      if (outputError != null) {
        reportError(outputError, row, error);
      }
      b.op("mov.b32 %s, 1", keep);
      b.place(done);
      Val[] result = new Val[outputs.length];
      for (int o = 0; o < outputs.length; o++) {
        result[o] = values[outputs[o]];
      }
      return result;
    }

    private void emitAll(BitSet which, int[][] sources, Val[] values, RowEmitter.Item item)
        throws CodegenUnsupportedException {
      for (int i = which.nextSetBit(0); i >= 0; i = which.nextSetBit(i + 1)) {
        Opcode op = Opcode.ofCode(op(i));
        Val[] operands = new Val[3];
        for (int k = 0; k < sources[i].length; k++) {
          operands[k] = values[sources[i][k]];
        }
        values[i] = rows.emit(op, word(i, 2), word(i, 3), word(i, 4), operands[0], operands[1],
            operands[2], item);
      }
    }

    private String firstNonZero(String ea, String eb) {
      String p = b.pred();
      b.op("setp.ne.s32 %s, %s, 0", p, ea);
      String e = b.b32();
      b.op("selp.b32 %s, %s, %s, %s", e, ea, eb, p);
      return e;
    }

    /**
     * atomicMin(status->first_error, (row << 8) | code) when {@code code} is non-zero and
     * {@code unlessNonZero} (an error already reported) is zero.
     */
    private void reportError(String errorCode, String row, String unlessNonZero) {
      String skip = b.label("no_error");
      String none = b.pred();
      b.op("setp.eq.s32 %s, %s, 0", none, errorCode);
      if (unlessNonZero != null) {
        String already = b.pred();
        b.op("setp.ne.s32 %s, %s, 0", already, unlessNonZero);
        b.op("or.pred %s, %s, %s", none, none, already);
      }
      b.op("@%s bra %s", none, skip);
      String packed = b.b64();
      b.op("shl.b64 %s, %s, %d", packed, row, ERROR_ROW_SHIFT);
      String code64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", code64, errorCode);
      b.op("or.b64 %s, %s, %s", packed, packed, code64);
      String old = b.b64();
      b.op("atom.global.min.u64 %s, [%s+%d], %s", old, status, STATUS_FIRST_ERROR, packed);
      b.place(skip);
    }

    /** The block scan, the look-back, then each kept row's outputs. */
    private void epilogue(String[] keep, Val[][] outputValues) {
      b.comment("positions: block scan and look-back");
      String[] position = new String[ITEMS];
      List<PreludeCall.Field> fields = new ArrayList<>();
      for (int item = 0; item < ITEMS; item++) {
        position[item] = b.b32();
        fields.add(new PreludeCall.Field(4 * item, "b32", position[item]));
      }
      String total = b.b32();
      fields.add(new PreludeCall.Field(4 * ITEMS, "b32", total));
      List<PreludeCall.Arg> args = new ArrayList<>();
      for (String k : keep) {
        args.add(PreludeCall.b32(k));
      }
      args.add(PreludeCall.b32(numTileItems));
      PreludeCall.callStruct(b, "tessera_block_exclusive_sum4", 4, 4 * (ITEMS + 1), fields,
          args);
      String total64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", total64, total);
      String tileStatus = loadParam("u64", "tile_status");
      String prefix = b.b64();
      PreludeCall.call(b, "tessera_tile_prefix", List.of(prefix), List.of(
          PreludeCall.b64(tileStatus), PreludeCall.b64(tile), PreludeCall.b64(total64)));
      // The last tile's first thread records the kept rows.
      String lastTile = b.b64();
      b.op("add.s64 %s, %s, -1", lastTile, rowsRegister);
      b.op("div.s64 %s, %s, %d", lastTile, lastTile, TILE_ITEMS);
      String isLast = b.pred();
      b.op("setp.eq.s64 %s, %s, %s", isLast, tile, lastTile);
      String first = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", first, thread);
      b.op("and.pred %s, %s, %s", isLast, isLast, first);
      String kept = b.b64();
      b.op("add.s64 %s, %s, %s", kept, prefix, total64);
      b.op("@%s st.global.u64 [%s+%d], %s", isLast, status, STATUS_KEPT_ROWS, kept);

      String outputsBase = global(loadParam("u64", "outputs"));
      String outputStatus = global(loadParam("u64", "output_status"));
      List<Program.Output> outputs = program.outputs();
      for (int o = 0; o < outputs.size(); o++) {
        writeOutput(o, outputs.get(o).type(), outputsBase, outputStatus, keep, position, prefix,
            outputValues, first);
      }
      b.op("ret");
    }

    private void writeOutput(int o, ColumnType type, String outputsBase, String outputStatus,
        String[] keep, String[] position, String prefix, Val[][] values, String firstThread) {
      b.comment("output " + o + " (" + type + ")");
      String descriptor = b.b64();
      b.op("add.s64 %s, %s, %d", descriptor, outputsBase, (long) OUTPUT_COLUMN_BYTES * o);
      boolean string = type.isString();
      String data = string ? null : field(descriptor, OUTPUT_DATA);
      String validity = field(descriptor, OUTPUT_VALIDITY);
      String lengths = string ? field(descriptor, OUTPUT_STRING_LENGTHS) : null;
      String sources = string ? field(descriptor, OUTPUT_STRING_SOURCES) : null;
      boolean mayBeNull = false;
      for (int item = 0; item < ITEMS; item++) {
        mayBeNull |= values[item][o].mayBeNull();
      }
      String nulls = null;
      if (mayBeNull) {
        nulls = b.b32();
        b.op("mov.b32 %s, 0", nulls);
      }
      for (int item = 0; item < ITEMS; item++) {
        Val v = values[item][o];
        String skip = b.label("write" + o + "_" + item);
        String dropped = b.pred();
        b.op("setp.eq.u32 %s, %s, 0", dropped, keep[item]);
        b.op("@%s bra %s", dropped, skip);
        String position64 = b.b64();
        b.op("cvt.u64.u32 %s, %s", position64, position[item]);
        String at = b.b64();
        b.op("add.s64 %s, %s, %s", at, prefix, position64);
        // Validity: Arrow's bit at % 8 of byte at / 8 is bit at % 32 of 32-bit word at / 32.
        String validNow = v.valid();
        writeValidBit(validity, at, validNow);
        if (validNow != null) {
          String isNull = b.pred();
          b.op("not.pred %s, %s", isNull, validNow);
          b.op("@%s add.s32 %s, %s, 1", isNull, nulls, nulls);
        }
        if (string) {
          String length = v.length();
          String address = v.value();
          if (validNow != null) {
            String l = b.b32();
            b.op("selp.b32 %s, %s, 0, %s", l, length, validNow);
            length = l;
            String a = b.b64();
            b.op("selp.b64 %s, %s, 0, %s", a, address, validNow);
            address = a;
          }
          String lengthAt = b.b64();
          b.op("mad.lo.s64 %s, %s, 4, %s", lengthAt, at, lengths);
          b.op("st.global.u32 [%s], %s", lengthAt, length);
          String sourceAt = b.b64();
          b.op("mad.lo.s64 %s, %s, 8, %s", sourceAt, at, sources);
          b.op("st.global.u64 [%s], %s", sourceAt, address);
        } else {
          String value = v.value();
          if (validNow != null) {
            String z = b.b64();
            b.op("selp.b64 %s, %s, 0, %s", z, value, validNow);
            value = z;
          }
          storeFixed(type.id(), data, at, value);
        }
        b.place(skip);
      }
      if (mayBeNull) {
        String blockNulls = b.b32();
        PreludeCall.call(b, "tessera_block_sum_int", List.of(blockNulls),
            List.of(PreludeCall.b32(nulls)));
        String skip = b.label("nulls" + o);
        String none = b.pred();
        b.op("setp.eq.s32 %s, %s, 0", none, blockNulls);
        String notFirst = b.pred();
        b.op("not.pred %s, %s", notFirst, firstThread);
        b.op("or.pred %s, %s, %s", none, none, notFirst);
        b.op("@%s bra %s", none, skip);
        String blockNulls64 = b.b64();
        b.op("cvt.u64.u32 %s, %s", blockNulls64, blockNulls);
        String old = b.b64();
        b.op("atom.global.add.u64 %s, [%s+%d], %s", old, outputStatus,
            (long) OUTPUT_STATUS_BYTES * o, blockNulls64);
        b.place(skip);
      }
    }

    private void writeValidBit(String validity, String at, String valid) {
      String word = b.b64();
      b.op("shr.u64 %s, %s, 5", word, at);
      String address = b.b64();
      b.op("mad.lo.s64 %s, %s, 4, %s", address, word, validity);
      String bitIndex = b.b32();
      b.op("cvt.u32.u64 %s, %s", bitIndex, at);
      b.op("and.b32 %s, %s, 31", bitIndex, bitIndex);
      String bit = b.b32();
      b.op("shl.b32 %s, 1, %s", bit, bitIndex);
      String old = b.b32();
      if (valid == null) {
        b.op("atom.global.or.b32 %s, [%s], %s", old, address, bit);
      } else {
        b.op("@%s atom.global.or.b32 %s, [%s], %s", valid, old, address, bit);
      }
    }

    private void storeFixed(TypeId type, String data, String at, String value) {
      int width = type.width();
      String address = b.b64();
      b.op("mad.lo.s64 %s, %s, %d, %s", address, at, width, data);
      if (width == 8) {
        b.op("st.global.u64 [%s], %s", address, value);
        return;
      }
      String low = b.b32();
      b.op("cvt.u32.u64 %s, %s", low, value);
      b.op("st.global.u%d [%s], %s", width * 8, address, low);
    }

    // ---- RowEmitter.KernelContext ----------------------------------------------------------------

    @Override
    public String constant(int index) {
      String r = constantRegisters.get(index);
      if (r == null) {
        throw new IllegalStateException("constant " + index + " was not loaded in the prologue");
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

    @Override
    public Val loadColumn(int column, RowEmitter.Item item) {
      return ColumnLoads.load(b, inputs.get(column), columnRegisters(column).data(),
          columnRegisters(column).validity(), columnRegisters(column).offsets(),
          columnRegisters(column).words(), columnRegisters(column).blockStarts(),
          dforValues.get(column), item);
    }

    private String text() {
      return ".visible .entry " + entry + "(\n" + params + "\n)\n.maxntid " + BLOCK_THREADS
          + ", 1, 1\n{\n" + b.finish() + "}\n";
    }
  }
}
