package dev.tessera.gpu.codegen;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.BitSet;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.SortedSet;

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
 *       a row the filter drops runs none of the others. Within the filter, a conjunction's right
 *       operand that probes a join table is skipped where its left operand is false
 *       ({@link ProgramEmitter#guardsProbes}). Instructions no output or filter reads are not
 *       emitted.
 *   <li>Column types and encodings are fixed: a load is the few instructions its layout needs;
 *       GPU-FOR is decoded inline (gpufor.cuh ForValue), GPU-DFOR a tile at a time
 *       ({@link TilePrimitives#dforTile}) at the top of the kernel.
 *   <li>Constants are read from the kernel's constants argument, so programs that differ only in
 *       their constants share a kernel ({@link #key}).
 *   <li>Join probes (PROBE, LOAD_BUILD) walk the table inline, for live rows only
 *       ({@link ProgramEmitter}).
 *   <li>Phase B runs while the tile waits for its place in the output: where the outputs' rows
 *       fit {@link OutputStage}, a kept row's outputs are computed and stored in shared memory
 *       after the block scan and before the look-back's walk, and copied out after it, a warp
 *       writing consecutive rows (FilterProjectBench on the H200: 787 µs writing in place,
 *       705 µs staged). Otherwise the look-back comes first and the rows are written in place.
 *   <li>A tile that keeps enough rows asks L2 for the columns only the outputs read, after its
 *       block scan ({@link Writer#scan}), so that their reads from memory start early.
 * </ul>
 * The block-wide steps (the block scan, the look-back, the GPU-DFOR decode) are written into the
 * kernel as PTX ({@link TilePrimitives}), instruction for instruction as the interpreter kernels
 * compile them, as is taking a tile; the string and calendar helpers are calls to the prelude,
 * which wraps the interpreter kernels' own code.
 */
public final class FilterProjectGenerator {
  /** Prefix of the generated kernels' entry names; the rest is the key's hash. */
  public static final String ENTRY_PREFIX = "tessera_gen_filter_project_";

  // The launch shape: blocks of config.cuh's 128 threads (LaunchShape checks it against the CUDA
  // constants), each taking one tile of 128 x itemsPerThread rows.
  private static final int BLOCK_THREADS = 128;
  /**
   * The interpreter's items per thread (config.cuh), which a kernel reading a GPU-DFOR column
   * keeps: one tile is one GPU-DFOR set ({@link TilePrimitives#dforTile}).
   */
  private static final int ITEMS = 4;
  /**
   * Items per thread of a short program's kernel: twice the rows per tile, so half the block
   * scans and look-backs and twice the loads in flight per block (FilterProjectBench on the
   * H100: 1.14-1.15 ms, against 1.27 ms with 4 items). Not for a program that probes join
   * tables: its items wait on their probes one after the other, and fewer blocks fit
   * (StarJoinBench's probe and filter: 1.78 ms with 8 items, 1.62 ms with 4). The block scan
   * takes at most 8.
   */
  private static final int WIDE_ITEMS = 8;
  /**
   * The most instructions a program may have to get {@link #WIDE_ITEMS}: each item's code is
   * written out, so the kernel's registers and compile time grow with items times instructions.
   */
  private static final int WIDE_MAX_INSTRUCTIONS = 24;
  /**
   * Registers the column values loaded ahead of their use may hold: the filter's for all of a
   * thread's items (FilterProjectBench's y at 8 items: 16), and the outputs' for a group of items
   * in phase B (its x, y and d: 5 items of 6).
   */
  private static final int EARLY_LOAD_REGISTERS = 32;
  private static final int ERROR_ROW_SHIFT = 8;
  /**
   * A tile asks L2 for its phase B columns when it keeps at least 1 row in this many: a line of
   * 4-byte values holds 32 rows, so at that share nearly every line is read anyway (at 1 in 8,
   * 99%; 8-byte values, 16 rows a line: 88%), and a selective filter's tiles do not read lines
   * no kept row needs.
   */
  private static final int PREFETCH_KEPT_SHARE = 8;

  // filter_project.cu's structs (CudaFilterProject holds the Java side of these layouts; the
  // generated kernel is checked against the same structs by running the same suites).
  private static final int OUTPUT_COLUMN_BYTES = 40;
  private static final int OUTPUT_DATA = 0;
  private static final int OUTPUT_VALIDITY = 8;
  private static final int OUTPUT_STRING_LENGTHS = 16;
  private static final int OUTPUT_STRING_SOURCES = 24;
  private static final int STATUS_FIRST_ERROR = 0;
  private static final int STATUS_KEPT_ROWS = 8;
  private static final int STATUS_TILE_COUNTER = 16;
  private static final int OUTPUT_STATUS_BYTES = 32;

  private FilterProjectGenerator() {}

  /** Items per thread of {@code program}'s kernel over {@code inputs}. */
  private static int itemsPerThread(Program program, List<InputSpec> inputs) {
    boolean dfor = InputSpec.anyDfor(inputs);
    boolean wide = !dfor && program.tables().isEmpty()
        && program.instructionCount() <= WIDE_MAX_INSTRUCTIONS;
    return wide ? WIDE_ITEMS : ITEMS;
  }

  /**
   * The rows per tile of {@code program}'s kernel over {@code inputs}: the launch takes one
   * block per tile. At least the interpreter's tile (LaunchShape.TILE_ITEMS), so the tile states
   * sized for the interpreter's tiles suffice.
   */
  public static int tileItems(Program program, List<InputSpec> inputs) {
    return BLOCK_THREADS * itemsPerThread(program, inputs);
  }

  /**
   * tessera_filter_project's parameters, in order (CudaFilterProject passes them), before the
   * program's words where the kernel takes them ({@link #programWords}).
   */
  private static final String[][] PARAMETERS = {
      {"u64", "code"}, {"u32", "instruction_count"}, {"u32", "register_count"},
      {"u64", "constants"}, {"u64", "strings"}, {"u64", "inputs"}, {"u64", "tables"},
      {"u64", "outputs"}, {"u32", "output_count"}, {"u32", "filter_register"},
      {"u32", "ansi"}, {"u32", "rows"}, {"u64", "status"}, {"u64", "output_status"},
      {"u64", "tile_status"}};

  /** The identity of a generated kernel: everything it bakes in, constants' values excluded. */
  public static String key(Program program, List<InputSpec> inputs) {
    ProgramWords words = programWords(program, inputs);
    return programKey(program, inputs) + (words == null ? "" : words.key());
  }

  /**
   * The program's words the kernel of {@code program} over {@code inputs} takes as its last
   * parameter ({@link ProgramWords}), or null where it reads them from memory.
   */
  public static ProgramWords programWords(Program program, List<InputSpec> inputs) {
    return ProgramWords.within(program, inputs, PARAMETERS.length * Long.BYTES);
  }

  /** What a kernel embedding {@code program} over {@code inputs} bakes in of them. */
  static String programKey(Program program, List<InputSpec> inputs) {
    StringBuilder key = new StringBuilder("filter-project v14;");
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
    return key.append(ProgramEmitter.structuralKey(program)).toString();
  }

  /**
   * Why the generator does not write {@code program}'s kernel (opcodes it does not cover, join
   * tables it does not probe), or null when it does: for explain and
   * {@code bin/tessera sql --kernels}.
   */
  public static String whyNotGenerated(Program program) {
    return ProgramEmitter.whyNotGenerated(program);
  }

  /** The opcodes of {@code program} the generator has no emitter for, in program order. */
  public static java.util.Set<Opcode> uncoveredOpcodes(Program program) {
    return ProgramEmitter.uncoveredOpcodes(program);
  }

  /** The entry name of the kernel for {@code key}. */
  static String entryName(String key) {
    return entryName(ENTRY_PREFIX, key);
  }

  /** {@code prefix} followed by the start of {@code key}'s SHA-256. */
  static String entryName(String prefix, String key) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8));
      return prefix + HexFormat.of().formatHex(hash, 0, 8);
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
    String whyNot = whyNotGenerated(program);
    if (whyNot != null) {
      throw new CodegenUnsupportedException(whyNot);
    }
    if (inputs.size() != program.inputTypes().size()) {
      throw new IllegalArgumentException("the program reads " + program.inputTypes().size()
          + " columns, " + inputs.size() + " were described");
    }
    String key = key(program, inputs);
    String entry = entryName(key);
    Writer writer = new Writer(program, inputs, entry, Form.LOADS_AHEAD);
    String ptx = writer.write();
    // The forms after the first are the compiler's later choices, where the one before needs
    // more registers than a kernel may take (GeneratedModule.compile).
    GeneratedKernel leanest = new GeneratedKernel(entry, key,
        new Writer(program, inputs, entry, Form.POINTERS_PER_USE).write());
    GeneratedKernel leaner = !writer.groupedOutputLoads() ? leanest
        : new GeneratedKernel(entry, key,
            new Writer(program, inputs, entry, Form.LOADS_IN_ITEM).write(), null, leanest);
    return new GeneratedKernel(entry, key, ptx, null, leaner,
        heldOutputRegisters(program) >= HELD_OUTPUT_REGISTERS_PAST_FIRST_FORMS);
  }

  /**
   * The registers the first forms hold, through phase B, for the outputs' buffers: each output's
   * addresses (data and validity, a string's lengths and sources instead of data: 2 registers
   * each) and its NULL count (1).
   */
  static int heldOutputRegisters(Program program) {
    int held = 0;
    for (Program.Output o : program.outputs()) {
      held += o.type().isString() ? 7 : 5;
    }
    return held;
  }

  /**
   * From how many {@link #heldOutputRegisters} on a kernel's first form is expected past {@link
   * GeneratedModule#MAX_REGISTERS}, so that its leaner forms compile beside it from the start
   * ({@link GeneratedKernel#leanerAtOnce}): three quarters of them. In 60 random wide
   * projections (4 to 32 outputs) the first form of every one holding 99 or more was rejected,
   * of those holding 79 to 98 seven in ten, and of those under 79 one in 35. A wrong guess costs
   * only CPU (compiles whose form is not used) or time (compiles one after another).
   */
  static final int HELD_OUTPUT_REGISTERS_PAST_FIRST_FORMS = GeneratedModule.MAX_REGISTERS * 3 / 4;

  /** How a kernel's phase B holds what it needs; each form after the first uses fewer registers. */
  enum Form {
    /**
     * A group of items' output column loads issued before the group uses them, and every
     * output's buffer addresses held from the start of phase B.
     */
    LOADS_AHEAD,
    /**
     * Each item's loads in its own branch: a group's loaded values live across the outputs'
     * prelude calls too (a random program of a string compare and five outputs took 130
     * registers with them, 102 without).
     */
    LOADS_IN_ITEM,
    /**
     * As LOADS_IN_ITEM, and an output's buffer addresses read from its descriptor (an L1 hit)
     * where a row is written rather than held: two or four registers an output, which take a
     * projection of 24 nullable LONG outputs to 168 registers.
     */
    POINTERS_PER_USE
  }

  /** One kernel's text under construction. */
  private static final class Writer {
    private final Program program;
    private final String entry;
    private final PtxBuilder b = new PtxBuilder();
    private final ProgramEmitter body;

    private String tileOffset;
    private String numTileItems;
    private String status;
    private String rowsRegister;
    private String tile;
    private TilePrimitives tiles;
    private String thread;
    private String threadRow;
    private String tileStatus;
    /** Where phase B gathers the tile's output rows, or null where it writes them in place. */
    private OutputStage stage;

    private final int itemCount;
    private final Form form;
    /** Whether phase B loaded a group of items' columns before using them (outputPhase). */
    private boolean groupedOutputLoads;

    Writer(Program program, List<InputSpec> inputs, String entry, Form form) {
      this.itemCount = itemsPerThread(program, inputs);
      this.program = program;
      this.entry = entry;
      this.form = form;
      this.body = new ProgramEmitter(program, inputs, b, entry, programWords(program, inputs));
    }

    String write() throws CodegenUnsupportedException {
      ProgramEmitter.Phases phases = body.phases();
      int filter = phases.filter();
      int[] outputs = phases.outputs();
      BitSet cone = phases.cone();
      BitSet rest = phases.rest();
      BitSet needed = (BitSet) cone.clone();
      needed.or(rest);

      header();
      prologue(needed);
      // Phase A, every item: the filter and what it reads; then the tile's block scan; then
      // phase B, every kept row: the rest of the program and the writes, into the stage before
      // the look-back or in place after it (OutputStage). Few values live across the
      // block-wide steps between the phases.
      //
      // The filter's column loads are issued for every item before any item uses them (where
      // their registers fit), as CUB's select loads a whole tile first: emitted inside each
      // item's branch, the thread's items would wait for memory one after the other. (Phase B's
      // loads issued the same way, before the positions, measured no faster with 8 items; after
      // them, a few items' loads at a time are: outputPhase.)
      //
      // A filter that probes join tables runs for every item in lockstep, past the batch's end
      // too (on the last row's values; such a row is dropped and reports no error): each
      // instruction for all the items before the next, so that the items' probes wait for L2
      // together (ProgramEmitter.emitAllItems). Unless a conjunction of the filter guards a
      // probe (ProgramEmitter.guardsProbes): then each item skips the probes its earlier
      // conjuncts have ruled out (StarJoinBench's probe and filter: 0.91 ms per item, 0.97 ms
      // in lockstep skipping only where all the thread's items were ruled out, 1.17 ms before).
      body.loadPhaseValues(cone);
      Val[][] values = new Val[itemCount][body.count()];
      String[] rows = new String[itemCount];
      RowEmitter.Item[] loadItems = new RowEmitter.Item[itemCount];
      boolean lockstep = body.probes(cone) && !body.guardsProbes(cone);
      BitSet coneLoads = lockstep ? body.columnLoads(cone) : earlyLoads(cone);
      // Past the batch's end (in the last tile), a load reads the batch's last row.
      String lastRow = b.b64();
      b.op("add.s64 %s, %s, -1", lastRow, rowsRegister);
      for (int item = 0; item < itemCount; item++) {
        rows[item] = b.b64();
        b.op("add.s64 %s, %s, %d", rows[item], threadRow, (long) item * BLOCK_THREADS);
        String loadRow = b.b64();
        b.op("min.s64 %s, %s, %s", loadRow, rows[item], lastRow);
        loadItems[item] = new RowEmitter.Item(item, loadRow);
        body.emitAll(coneLoads, values[item], loadItems[item]);
      }
      BitSet filterRest = (BitSet) cone.clone();
      filterRest.andNot(coneLoads);
      Item[] items = new Item[itemCount];
      if (lockstep) {
        body.emitAllItems(filterRest, values, loadItems);
      }
      for (int item = 0; item < itemCount; item++) {
        items[item] = lockstep ? filterResult(item, rows[item], values[item], filter)
            : filterPhase(item, rows[item], values[item], filterRest, filter);
      }
      SortedSet<Integer> laterColumns = body.plainColumnsLoaded(rest);
      laterColumns.removeAll(body.plainColumnsLoaded(cone));
      if (OutputStage.fits(program.outputs(), tileItems())) {
        stage = new OutputStage(b, tileItems());
        staged = new StagedOutput[program.outputs().size()];
      }
      Scan scan = scan(items, laterColumns);
      // Without a stage, phase B writes its rows in place: their positions come first.
      Positions positions = stage == null ? positions(scan) : null;
      // Phase B computes again the loads of phase A it reads, rather than keep them live.
      BitSet phaseB = (BitSet) rest.clone();
      phaseB.or(body.reloads(cone, rest, outputs));
      body.loadPhaseValues(phaseB);
      outputPhase(items, loadItems, scan, positions, phaseB, outputs);
      return text();
    }

    /** Whether phase B loaded a group of items' columns before using them. */
    boolean groupedOutputLoads() {
      return groupedOutputLoads;
    }

    /** The rows of one tile: one block's threads times their items. */
    private int tileItems() {
      return BLOCK_THREADS * itemCount;
    }

    /**
     * The column loads of {@code phase} to issue for every item up front: all of them when every
     * item's loaded values fit in {@link #EARLY_LOAD_REGISTERS}, else none (each item then loads
     * its own, in its branch, and holds nothing across the others).
     */
    private BitSet earlyLoads(BitSet phase) {
      BitSet loads = body.columnLoads(phase);
      return itemCount * body.loadedRegisters(loads) <= EARLY_LOAD_REGISTERS ? loads : new BitSet();
    }

    // ---- the kernel's parts ---------------------------------------------------------------------

    private final StringBuilder params = new StringBuilder();

    private void header() {
      params.append(body.parameters(PARAMETERS, ""));
    }

    private String loadParam(String type, String name) {
      return body.loadParam(type, name);
    }

    private String global(String generic) {
      return body.global(generic);
    }

    private String field(String descriptor, int offset) {
      return body.field(descriptor, offset);
    }

    private void prologue(BitSet needed) {
      b.comment("prologue: arguments, the tile, descriptors and constants");
      status = global(loadParam("u64", "status"));
      String rows32 = loadParam("u32", "rows");
      rowsRegister = b.b64();
      b.op("cvt.s64.s32 %s, %s", rowsRegister, rows32);

      thread = b.b32();
      b.op("mov.u32 %s, %%tid.x", thread);
      tiles = new TilePrimitives(b, thread, BLOCK_THREADS, itemCount);
      String counter = b.b64();
      b.op("add.s64 %s, %s, %d", counter, status, STATUS_TILE_COUNTER);
      tile = tiles.takeTile(counter);
      tileOffset = b.b64();
      b.op("mul.lo.s64 %s, %s, %d", tileOffset, tile, tileItems());
      String remaining = b.b64();
      b.op("sub.s64 %s, %s, %s", remaining, rowsRegister, tileOffset);
      String clipped = b.b64();
      b.op("min.s64 %s, %s, %d", clipped, remaining, tileItems());
      numTileItems = b.b32();
      b.op("cvt.u32.u64 %s, %s", numTileItems, clipped);
      String thread64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", thread64, thread);
      threadRow = b.b64();
      b.op("add.s64 %s, %s, %s", threadRow, tileOffset, thread64);
      // GPU-DFOR tiles of every needed column (the decode synchronizes the block, so it runs
      // here, where every thread is).
      body.loadDforTiles(needed, tiles, tileOffset, numTileItems);
    }

    /** One of the thread's rows through phase A: its row, values, keep flag and filter error. */
    private record Item(RowEmitter.Item row, Val[] values, String keep, String filterError) {}

    /**
     * Phase A for one item (its row {@code row}): the filter's instructions {@code cone} (the
     * ones not loaded yet into {@code values}) and the keep flag (0 past the end).
     */
    private Item filterPhase(int item, String row, Val[] values, BitSet cone, int filter)
        throws CodegenUnsupportedException {
      b.comment("item " + item + ": the filter");
      RowEmitter.Item it = new RowEmitter.Item(item, row);
      String keep = b.b32();
      String done = b.label("filter" + item + "_done");
      b.op("mov.b32 %s, 0", keep);
      String outside = b.pred();
      b.op("setp.ge.s64 %s, %s, %s", outside, row, rowsRegister);
      b.op("@%s bra %s", outside, done);
      body.emitAll(cone, values, it);
      String error = null;
      if (filter >= 0) {
        Val f = values[filter];
        String keepPred = body.keeps(f);
        error = f.error();
        if (error != null) {
          reportError(error, row, null);
        }
        b.op("selp.b32 %s, 1, 0, %s", keep, keepPred);
      } else {
        b.op("mov.b32 %s, 1", keep);
      }
      b.place(done);
      return new Item(it, values, keep, error);
    }

    /**
     * Phase A's end for one item (its row {@code row}) whose filter was computed already, in
     * lockstep: the keep flag (0 past the end) and the filter's error, reported where the row is
     * in the batch.
     */
    private Item filterResult(int item, String row, Val[] values, int filter) {
      b.comment("item " + item + ": the filter's result");
      String inside = b.pred();
      b.op("setp.lt.s64 %s, %s, %s", inside, row, rowsRegister);
      String keep = b.b32();
      String error = null;
      if (filter >= 0) {
        Val f = values[filter];
        String keepPred = body.keeps(f);
        b.op("and.pred %s, %s, %s", keepPred, keepPred, inside);
        if (f.error() != null) {
          error = b.b32();
          b.op("selp.b32 %s, %s, 0, %s", error, f.error(), inside);
          reportError(error, row, null);
        }
        b.op("selp.b32 %s, 1, 0, %s", keep, keepPred);
      } else {
        b.op("selp.b32 %s, 1, 0, %s", keep, inside);
      }
      return new Item(new RowEmitter.Item(item, row), values, keep, error);
    }

    /** Phase B for every item: each kept row's other instructions, its errors and its writes. */
    private void outputPhase(Item[] items, RowEmitter.Item[] loadItems, Scan scan,
        Positions positions, BitSet rest, int[] outputs) throws CodegenUnsupportedException {
      List<Program.Output> declared = program.outputs();
      String outputsBase = global(loadParam("u64", "outputs"));
      OutputColumn[] columns = new OutputColumn[outputs.length];
      for (int o = 0; o < outputs.length; o++) {
        columns[o] = outputColumn(o, declared.get(o).type(), outputsBase);
      }
      // The column loads of a group of items are issued before any of them is used, so the
      // items wait for memory together rather than one after the other (FilterProjectBench on
      // the H200: 0.86-0.90 ms loading per item, 0.80-0.85 ms in groups of 5, 0.93-0.97 ms all
      // 8 at once, which holds more registers than 9 blocks a multiprocessor allow).
      BitSet loads = body.columnLoads(rest);
      // A group's loads behind one branch where they read GPU-FOR columns and the outputs are
      // those columns as they are (a dimension table's filter). A GPU-FOR value's loads wait on
      // each other (block start, header, word): behind each item's own branch the items' chains
      // ran one after the other, 3 round trips an item. SSB SF10 on the H200: the four
      // dimension filters this form changes -3.1 to -8.3% (2,240.9 -> 2,120.0 us summed,
      // docs/gpu-timings.md, 2026-12-04 fourth session). A plain column's one load waits on
      // nothing, behind an item's branch or not; and a group's values held across the prelude
      // calls of the outputs' computing took a random program of strings to 144 registers.
      // Such groups hold their addresses too, so they are half as large (FilterProjectBench's
      // kernel over GPU-FOR spilled 8 bytes at 80 registers).
      BitSet beyondLoads = (BitSet) rest.clone();
      beyondLoads.andNot(loads);
      boolean byGroup = body.loadsFor(loads)
          && body.onlyOf(beyondLoads, EnumSet.of(Opcode.MOVE, Opcode.LOAD_CONST));
      int budget = byGroup ? EARLY_LOAD_REGISTERS / 2 : EARLY_LOAD_REGISTERS;
      int group = loads.isEmpty() || form != Form.LOADS_AHEAD ? 1
          : Math.max(1, budget / body.loadedRegisters(loads));
      groupedOutputLoads = group > 1;
      BitSet computed = (BitSet) rest.clone();
      if (group > 1) {
        computed.andNot(loads);
      }
      for (int item = 0; item < itemCount; item++) {
        Item it = items[item];
        if (group > 1 && item % group == 0) {
          int end = Math.min(itemCount, item + group);
          if (byGroup) {
            groupLoads(items, loadItems, item, end, loads);
          } else {
            for (int ahead = item; ahead < end; ahead++) {
              outputLoads(items[ahead], loads);
            }
          }
        }
        b.comment("item " + item + ": the outputs");
        String skip = b.label("outputs" + item + "_done");
        String dropped = b.pred();
        b.op("setp.eq.u32 %s, %s, 0", dropped, it.keep());
        b.op("@%s bra %s", dropped, skip);
        body.emitAll(computed, it.values(), it.row());
        // The first error among the outputs of a kept row (RowErrorCode), unless the filter's
        // error was reported already.
        String outputError = null;
        for (int o : outputs) {
          if (it.values()[o].error() != null) {
            outputError = outputError == null ? it.values()[o].error()
                : body.firstNonZero(outputError, it.values()[o].error());
          }
        }
        if (outputError != null) {
          reportError(outputError, it.row().row(), it.filterError());
        }
        if (stage != null) {
          for (int o = 0; o < outputs.length; o++) {
            stageRow(o, columns[o], rowWords(columns[o], it.values()[outputs[o]]),
                scan.item()[item]);
          }
        } else {
          String at = outputRow(positions, scan.item()[item]);
          for (int o = 0; o < outputs.length; o++) {
            writeRow(columns[o], rowWords(columns[o], it.values()[outputs[o]]), at);
          }
        }
        b.place(skip);
      }
      if (stage != null) {
        positions = positions(scan);
        copyOut(columns, scan, positions);
      }
      String outputStatus = global(loadParam("u64", "output_status"));
      for (int o = 0; o < outputs.length; o++) {
        finishOutput(o, columns[o], positions, outputStatus);
      }
      b.op("ret");
    }

    /** Phase B's column loads {@code loads} of one item, where its row is kept. */
    private void outputLoads(Item item, BitSet loads) throws CodegenUnsupportedException {
      b.comment("item " + item.row().index() + ": the outputs' loads");
      String skip = b.label("loads" + item.row().index() + "_done");
      String dropped = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", dropped, item.keep());
      b.op("@%s bra %s", dropped, skip);
      body.emitAll(loads, item.values(), item.row());
      b.place(skip);
    }

    /**
     * Phase B's column loads {@code loads} of items [first, end) behind one branch, taken where
     * none of them is kept; each item's at its row clamped to the batch's last ({@code
     * loadItems}: a dropped item's values are not used).
     */
    private void groupLoads(Item[] items, RowEmitter.Item[] loadItems, int first, int end,
        BitSet loads) throws CodegenUnsupportedException {
      b.comment("items " + first + " to " + (end - 1) + ": the outputs' loads");
      String anyKept = b.b32();
      b.op("mov.b32 %s, %s", anyKept, items[first].keep());
      for (int k = first + 1; k < end; k++) {
        b.op("or.b32 %s, %s, %s", anyKept, anyKept, items[k].keep());
      }
      String skip = b.label("loads" + first + "_done");
      String noneKept = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", noneKept, anyKept);
      b.op("@%s bra %s", noneKept, skip);
      for (int k = first; k < end; k++) {
        body.emitAll(loads, items[k].values(), loadItems[k]);
      }
      b.place(skip);
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

    /** The tile's block scan: each item's place among the tile's kept rows, and their count. */
    private record Scan(String[] item, String total, String total64) {}

    /** The tile's output range: its first output row and its rows (both .b64). */
    private record Positions(String prefix, String total) {}

    /**
     * The block scan of the keep flags; where phase B is staged, this tile's count published for
     * the later tiles' look-backs. Then the tile asks L2 for the plain columns only phase B reads
     * ({@code laterColumns}), so that their reads from device memory start before phase B loads
     * them (FilterProjectBench on the H200, rows written in place after the look-back: 0.98-1.01
     * ms without, 0.85 ms with; staged: 714 µs without, 705 µs with).
     */
    private Scan scan(Item[] items, SortedSet<Integer> laterColumns) {
      b.comment("positions: block scan");
      String[] flags = new String[itemCount];
      for (int item = 0; item < itemCount; item++) {
        flags[item] = items[item].keep();
      }
      String[] scanned = tiles.blockExclusiveSum(flags);
      String total64 = null;
      if (stage != null) {
        total64 = widen(scanned[itemCount]);
        // Phase B runs before this tile's walk back: the later tiles' walks read its count now.
        tiles.publishAggregate(tileStatus(), tile, total64);
      }
      if (!laterColumns.isEmpty()) {
        String manyKept = b.pred();
        String scaledKept = b.b32();
        b.op("mul.lo.u32 %s, %s, %d", scaledKept, scanned[itemCount], PREFETCH_KEPT_SHARE);
        b.op("setp.ge.u32 %s, %s, %s", manyKept, scaledKept, numTileItems);
        body.prefetchTile(laterColumns, thread, Integer.toString(BLOCK_THREADS), itemCount,
            tileOffset, numTileItems, manyKept);
      }
      if (total64 == null) {
        total64 = widen(scanned[itemCount]);
      }
      return new Scan(java.util.Arrays.copyOf(scanned, itemCount), scanned[itemCount], total64);
    }

    /**
     * The look-back: the tile's first output row, in every thread. The last tile's first thread
     * records the kept rows.
     */
    private Positions positions(Scan scan) {
      b.comment("positions: look-back");
      String prefix = stage != null ? tiles.walkBack(tileStatus(), tile, scan.total64())
          : tiles.tilePrefix(tileStatus(), tile, scan.total64());
      String lastTile = b.b64();
      b.op("add.s64 %s, %s, -1", lastTile, rowsRegister);
      // rows >= 1, so a shift divides; the in-jar ptxas makes a 64-bit division a call.
      b.op("shr.s64 %s, %s, %d", lastTile, lastTile, Integer.numberOfTrailingZeros(tileItems()));
      String isLast = b.pred();
      b.op("setp.eq.s64 %s, %s, %s", isLast, tile, lastTile);
      String firstThread = b.pred();
      b.op("setp.eq.u32 %s, %s, 0", firstThread, thread);
      b.op("and.pred %s, %s, %s", isLast, isLast, firstThread);
      String kept = b.b64();
      b.op("add.s64 %s, %s, %s", kept, prefix, scan.total64());
      b.op("@%s st.global.u64 [%s+%d], %s", isLast, status, STATUS_KEPT_ROWS, kept);
      return new Positions(prefix, scan.total64());
    }

    /** The tile status words' global address, loaded where first needed. */
    private String tileStatus() {
      if (tileStatus == null) {
        tileStatus = global(loadParam("u64", "tile_status"));
      }
      return tileStatus;
    }

    /**
     * One output's buffers and what is known of it: whether any row may be NULL (then validity
     * is written per row and NULLs are counted; otherwise the tile's whole range of validity
     * bits is set at once). Its buffers' addresses are null in a POINTERS_PER_USE kernel, which
     * reads them where it writes ({@link #pointer}).
     */
    private record OutputColumn(int index, ColumnType type, String outputsBase, String data,
        String validity, String lengths, String sources, String nulls) {}

    private OutputColumn outputColumn(int o, ColumnType type, String outputsBase) {
      boolean string = type.isString();
      String data = null;
      String validity = null;
      String lengths = null;
      String sources = null;
      if (form != Form.POINTERS_PER_USE) {
        String descriptor = b.b64();
        b.op("add.s64 %s, %s, %d", descriptor, outputsBase, (long) OUTPUT_COLUMN_BYTES * o);
        data = string ? null : field(descriptor, OUTPUT_DATA);
        validity = field(descriptor, OUTPUT_VALIDITY);
        lengths = string ? field(descriptor, OUTPUT_STRING_LENGTHS) : null;
        sources = string ? field(descriptor, OUTPUT_STRING_SOURCES) : null;
      }
      String nulls = b.b32();
      b.op("mov.b32 %s, 0", nulls);
      return new OutputColumn(o, type, outputsBase, data, validity, lengths, sources, nulls);
    }

    /**
     * {@code held}, the buffer address {@code column} holds, or (POINTERS_PER_USE) the address
     * read again from its descriptor's {@code offset}.
     */
    private String pointer(OutputColumn column, String held, int offset) {
      return held != null ? held : field(column.outputsBase(),
          OUTPUT_COLUMN_BYTES * column.index() + offset);
    }

    /**
     * The outputs (by index) whose values turned out never NULL, and those that may be: known
     * once phase B has emitted them (every item the same way).
     */
    private final java.util.Set<Integer> neverNull = new java.util.HashSet<>();
    private final java.util.Set<Integer> mayBeNull = new java.util.HashSet<>();

    /**
     * What one kept row writes to an output: its validity (a predicate, or null where it cannot
     * be NULL) and its value with NULL written as 0, or a string's length and address.
     */
    private record RowWords(String valid, String value, String length, String address) {}

    /** The words {@code v} writes to {@code column}; counts the thread's NULLs. */
    private RowWords rowWords(OutputColumn column, Val v) {
      String validNow = v.valid();
      if (validNow == null) {
        neverNull.add(column.index());
      } else {
        mayBeNull.add(column.index());
        String isNull = b.pred();
        b.op("not.pred %s, %s", isNull, validNow);
        b.op("@%s add.s32 %s, %s, 1", isNull, column.nulls(), column.nulls());
      }
      if (column.type().isString()) {
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
        return new RowWords(validNow, null, length, address);
      }
      String value = v.value();
      if (validNow != null) {
        String z = b.b64();
        b.op("selp.b64 %s, %s, 0, %s", z, value, validNow);
        value = z;
      }
      return new RowWords(validNow, value, null, null);
    }

    /** The output row (.b64) of the tile's kept row {@code position} (.b32). */
    private String outputRow(Positions positions, String position) {
      String position64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", position64, position);
      String at = b.b64();
      b.op("add.s64 %s, %s, %s", at, positions.prefix(), position64);
      return at;
    }

    /** Writes one kept row's {@code words} to {@code column} at output row {@code at}. */
    private void writeRow(OutputColumn column, RowWords words, String at) {
      if (words.valid() != null) {
        writeValidBit(pointer(column, column.validity(), OUTPUT_VALIDITY), at, words.valid());
      }
      if (column.type().isString()) {
        String lengthAt = b.b64();
        b.op("mad.lo.s64 %s, %s, 4, %s", lengthAt, at,
            pointer(column, column.lengths(), OUTPUT_STRING_LENGTHS));
        b.op("st.global.u32 [%s], %s", lengthAt, words.length());
        String sourceAt = b.b64();
        b.op("mad.lo.s64 %s, %s, 8, %s", sourceAt, at,
            pointer(column, column.sources(), OUTPUT_STRING_SOURCES));
        b.op("st.global.u64 [%s], %s", sourceAt, words.address());
      } else {
        storeFixed(column.type().id(), pointer(column, column.data(), OUTPUT_DATA), at,
            words.value());
      }
    }

    /** The staged arrays of one output: its validity flags only where it may be NULL. */
    private record StagedOutput(OutputStage.Part flag, OutputStage.Part value,
        OutputStage.Part length, OutputStage.Part address) {}

    /** Per output, its staged arrays (laid out by the first item's row), with {@link #stage}. */
    private StagedOutput[] staged;

    /**
     * Stores one kept row's {@code words} of output {@code o} in the stage at the tile's kept row
     * {@code position} (.b32). The first item's call lays out the output's arrays; every item
     * writes the same words.
     */
    private void stageRow(int o, OutputColumn column, RowWords words, String position) {
      if (staged[o] == null) {
        boolean string = column.type().isString();
        staged[o] = new StagedOutput(words.valid() == null ? null : stage.part(1),
            string ? null : stage.part(column.type().id().width()),
            string ? stage.part(Integer.BYTES) : null, string ? stage.part(Long.BYTES) : null);
      }
      StagedOutput parts = staged[o];
      if (parts.flag() != null) {
        String flag = b.b32();
        b.op("selp.b32 %s, 1, 0, %s", flag, words.valid());
        parts.flag().store(position, flag, false);
      }
      if (parts.value() != null) {
        parts.value().store(position, words.value(), true);
      } else {
        parts.length().store(position, words.length(), false);
        parts.address().store(position, words.address(), true);
      }
    }

    /**
     * Writes the staged rows out once the tile's first output row is known: thread t takes the
     * tile's kept rows t, t + 128, ..., so that a warp writes 32 consecutive output rows.
     */
    private void copyOut(OutputColumn[] columns, Scan scan, Positions positions) {
      for (int item = 0; item < itemCount; item++) {
        b.comment("copy-out " + item);
        String row = b.b32();
        b.op("add.s32 %s, %s, %d", row, thread, item * BLOCK_THREADS);
        String past = b.pred();
        b.op("setp.ge.u32 %s, %s, %s", past, row, scan.total());
        String skip = b.label("copy" + item + "_done");
        b.op("@%s bra %s", past, skip);
        String at = outputRow(positions, row);
        for (int o = 0; o < columns.length; o++) {
          StagedOutput parts = staged[o];
          String valid = null;
          if (parts.flag() != null) {
            valid = b.pred();
            b.op("setp.ne.u32 %s, %s, 0", valid, parts.flag().load(row));
          }
          RowWords words = parts.value() != null
              ? new RowWords(valid, widen(parts.value().load(row), parts.value()), null, null)
              : new RowWords(valid, null, parts.length().load(row), parts.address().load(row));
          writeRow(columns[o], words, at);
        }
        b.place(skip);
      }
    }

    /** A staged fixed-width value as the .b64 register storeFixed takes. */
    private String widen(String value, OutputStage.Part part) {
      return part.width() == Long.BYTES ? value : widen(value);
    }

    /** A new .b64 register holding the .b32 {@code value}, zero-extended. */
    private String widen(String value) {
      String wide = b.b64();
      b.op("cvt.u64.u32 %s, %s", wide, value);
      return wide;
    }

    /**
     * After every row: a never-NULL output's validity bits for the tile's whole output range
     * (one atomic OR per 32 rows instead of one per row), or a nullable one's NULL count.
     */
    private void finishOutput(int o, OutputColumn column, Positions positions,
        String outputStatus) {
      if (mayBeNull.contains(o) && neverNull.contains(o)) {
        throw new IllegalStateException("output " + o + " is NULL-free in some items only");
      }
      if (neverNull.contains(o)) {
        setValidRange(pointer(column, column.validity(), OUTPUT_VALIDITY), positions);
        return;
      }
      if (!mayBeNull.contains(o)) {
        return; // no item wrote it (cannot happen: every item reaches phase B's writes)
      }
      // The warp's sum (butterfly shuffles: every lane ends with it), added by lane 0: four
      // atomics a tile, and no call (values live across a call cost spills).
      String sum = b.b32();
      b.op("mov.b32 %s, %s", sum, column.nulls());
      for (int offset = 16; offset >= 1; offset >>= 1) {
        String other = b.b32();
        b.op("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", other, sum, offset);
        b.op("add.s32 %s, %s, %s", sum, sum, other);
      }
      String skip = b.label("nulls" + o);
      String lane = b.b32();
      b.op("and.b32 %s, %s, 31", lane, thread);
      String none = b.pred();
      b.op("setp.eq.s32 %s, %s, 0", none, sum);
      String notFirst = b.pred();
      b.op("setp.ne.u32 %s, %s, 0", notFirst, lane);
      b.op("or.pred %s, %s, %s", none, none, notFirst);
      b.op("@%s bra %s", none, skip);
      String sum64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", sum64, sum);
      String old = b.b64();
      b.op("atom.global.add.u64 %s, [%s+%d], %s", old, outputStatus,
          (long) OUTPUT_STATUS_BYTES * o, sum64);
      b.place(skip);
    }

    /**
     * Sets validity bits [prefix, prefix + total): thread t takes 32-bit word first + t. Words
     * at the ends are shared with the neighbouring tiles, so every word is an atomic OR.
     */
    private void setValidRange(String validity, Positions positions) {
      String skip = b.label("valid_range");
      String end = b.b64();
      b.op("add.s64 %s, %s, %s", end, positions.prefix(), positions.total());
      String first = b.b64();
      b.op("shr.u64 %s, %s, 5", first, positions.prefix());
      String thread64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", thread64, thread);
      String word = b.b64();
      b.op("add.s64 %s, %s, %s", word, first, thread64);
      String wordStart = b.b64();
      b.op("shl.b64 %s, %s, 5", wordStart, word);
      String past = b.pred();
      b.op("setp.ge.u64 %s, %s, %s", past, wordStart, end);
      b.op("@%s bra %s", past, skip);
      String low = b.b64();
      b.op("max.u64 %s, %s, %s", low, positions.prefix(), wordStart);
      String wordEnd = b.b64();
      b.op("add.s64 %s, %s, 32", wordEnd, wordStart);
      String high = b.b64();
      b.op("min.u64 %s, %s, %s", high, end, wordEnd);
      String bits = b.b64();
      b.op("sub.s64 %s, %s, %s", bits, high, low);
      String shift = b.b64();
      b.op("sub.s64 %s, %s, %s", shift, low, wordStart);
      String one = b.b64();
      b.op("mov.b64 %s, 1", one);
      String count32 = b.b32();
      b.op("cvt.u32.u64 %s, %s", count32, bits);
      String mask = b.b64();
      b.op("shl.b64 %s, %s, %s", mask, one, count32);
      b.op("sub.s64 %s, %s, 1", mask, mask);
      String shift32 = b.b32();
      b.op("cvt.u32.u64 %s, %s", shift32, shift);
      b.op("shl.b64 %s, %s, %s", mask, mask, shift32);
      String mask32 = b.b32();
      b.op("cvt.u32.u64 %s, %s", mask32, mask);
      String address = b.b64();
      b.op("mad.lo.s64 %s, %s, 4, %s", address, word, validity);
      String old = b.b32();
      b.op("atom.global.or.b32 %s, [%s], %s", old, address, mask32);
      b.place(skip);
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

    private String text() {
      return ".visible .entry " + entry + "(\n" + params + "\n)\n.maxntid " + BLOCK_THREADS
          + ", 1, 1\n{\n" + b.finish() + "}\n";
    }
  }
}
