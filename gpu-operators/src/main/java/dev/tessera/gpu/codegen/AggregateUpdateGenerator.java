package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.expr.Program;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Writes the PTX of one fused aggregation pipeline as its own kernel: hash_aggregate.cu's
 * {@code tessera_hash_aggregate_update} with the program compiled in instead of interpreted. Same
 * arguments (and a copy of the plan after them, where it fits: {@link #takesPlanWords}), same
 * launch (any grid, tiles taken grid-stride, the per-block table in dynamic shared memory), same
 * results.
 *
 * <p>Per item, the generated code runs the filter's instructions (a conjunction's right operand
 * that probes a join table only where its left operand is not false: {@link
 * ProgramEmitter#guardsProbes}), then, for a row the filter keeps, the rest of the program
 * (values in registers, as {@link FilterProjectGenerator} does), reports the first error as the
 * interpreter kernel does, and then updates the row's group: finding the group, the warp-level
 * reduction and the per-block table, as hash_aggregate.cuh does for the interpreter kernel,
 * written into the kernel and specialized to the aggregation's keys and functions ({@link
 * GroupedAggregateEmitter}). Where the groups are found in the global table and the program
 * filters, the kept rows wait in their warp's queue instead, and the update runs for 32 of them
 * at once ({@link KeptRowQueue}).
 *
 * <p>A global aggregate (no keys) of integral inputs makes no call at all: each thread keeps its
 * accumulators in registers across every tile it takes, and merges them once, at the end
 * ({@link RegisterAccumulators}, Crystal's way with SSB's first flight).
 *
 * <p>Where the filter probes behind conjuncts that read a value (cheap comparisons, or a first
 * probe), the rows those pass wait in their warp's stack, and the probe and the rest run for 32
 * of them at once ({@link PrefilteredRows}); not in a kernel that {@link #fillsMultiprocessor}.
 */
public final class AggregateUpdateGenerator {
  /** Prefix of the generated kernels' entry names; the rest is the key's hash. */
  public static final String ENTRY_PREFIX = "tessera_gen_aggregate_";
  /**
   * hash_aggregate.cuh kKeyHeapAlignment: a string key's bytes start in the key heap at a multiple
   * of this and are followed by zeros up to the next, so that the generated kernels compare them
   * a whole word at a time (GroupLookup); the host's heap bound (CudaHashAggregate) counts the
   * padding.
   */
  public static final int KEY_HEAP_ALIGNMENT = 8;
  /**
   * hash_aggregate.cuh kSlotBytes: a slot of the group table, its group's hash beside its index
   * (GroupLookup reads both in one access); the host allocates the table (CudaHashAggregate).
   */
  public static final int GROUP_SLOT_BYTES = 16;
  /** hash_aggregate.cuh kSlotHash: the byte offset of a slot's hash (its group's uint64). */
  public static final int GROUP_SLOT_HASH = 0;
  /** hash_aggregate.cuh kUnknownHash: a slot's hash before its group's inserter writes it. */
  public static final long GROUP_SLOT_UNKNOWN_HASH = GroupLookup.UNKNOWN_HASH;
  /** The PTX comment where a thread's items start one run of consecutive rows. */
  public static final String RUN_MARK = "the thread's items: one run of rows";
  /**
   * The PTX comment before each of an item loop's two items' first parts where the loop pairs
   * them (rows wait after a probe filter's bit), followed by the item's index in the pair.
   */
  static final String PAIRED_ITEM = "the split's first part, paired item ";

  // The launch shape (config.cuh; LaunchShape checks it against the CUDA constants).
  private static final int BLOCK_THREADS = 128;
  private static final int ITEMS = 4;
  /**
   * A thread's rows a tile where they are one run ({@link #RUN_MARK}): consecutive rows sharing
   * their GPU-FOR headers, so a run of 8 reads each header once for 8 rows, and a thread's chain
   * of dependent header reads is half as long as with 4. The tile is then 1,024 rows (whole
   * GPU-FOR blocks, and 8 divides a miniblock). SSB SF10 on an H200: Q1.1 -6.4%, Q1.2 and Q1.3
   * -8.1% against 4 (64 registers against 62); 16 took 72 registers and was no faster. (The
   * launch sizes its grid by tiles of 512 rows, so a batch of fewer than 1,024 rows a resident
   * block leaves some blocks without a tile: they merge nothing.)
   */
  private static final int RUN_ITEMS = 8;
  private static final int ERROR_ROW_SHIFT = 8;
  /**
   * The registers a kernel that {@link #fillsMultiprocessor} asks for: a multiprocessor's 65,536
   * for a block of 1,024 threads. Left to choose, ptxas gave HashAggregateBench's kernel with
   * {@link LookaheadColumns} 72 (blocks of 896 threads); held to 64 it spilled nothing and took
   * up to 5% less time at 10 to 1,000 groups, with the filter too (H200, ncu).
   */
  static final int WHOLE_BLOCK_REGISTERS = 64;
  /**
   * The most threads of a block (CUDA's limit): a kernel that {@link #fillsMultiprocessor} and
   * queues its rows sizes its warps' queues for them.
   */
  static final int MAX_BLOCK_THREADS = 1024;
  /** A per-block table whose entries the kernel reads from the plan, not a constant. */
  private static final int PLAN_ENTRIES = -1;

  private AggregateUpdateGenerator() {}

  /**
   * Whether the kernel for {@code spec} over batches laid out as {@code inputs}, running {@code
   * program}, runs as one block a multiprocessor, as many threads as its registers allow (the
   * launch reads them from the compiled function), with a per-block table in as much of the
   * multiprocessor's shared memory as the launch gives it:
   * <ul>
   *   <li>where the table is found by key ({@link LocalKeyTable}). One table a multiprocessor
   *       holds 2,048 entries of HashAggregateBench's four functions where seven blocks of 128
   *       threads held 256 each: on an H200, 1,000 groups -60%, 100 groups -33%, 10^4 groups
   *       -17%, 1 to 10 groups and 10^5 within 2% (ncu);
   *   <li>where it is found by group (a string key, or more fixed-width keys than {@link
   *       LocalKeyTable} holds), and the program has no filter and probes no join table.
   *       HashAggregateBench's string keys: 1,000 groups -49% (2,048 entries against 256), 10^4
   *       -9%, 1 to 100 groups within 3%, 10^5 +2%, 10^6 +12%. Its two keys (GROUP BY k, k % 3),
   *       then found by group: 1,000 groups -35%, 10^4 -10%, 1 to 100 groups within 4%, 10^5
   *       +3%, 10^6 +11% (H200, ncu). A filter's or a probe's kernel keeps its blocks of 128
   *       threads, whose warps queue the rows it keeps ({@link KeptRowQueue}, {@link
   *       PrefilteredRows});
   *   <li>where the keys are two fixed-width columns and the program probes no join table, with
   *       a filter too: the table holds them by key ({@link
   *       LocalKeyTable#MAX_WHOLE_MULTIPROCESSOR_KEYS}, where the measures are);
   *   <li>where the one key is a string and the program probes no join table, with a filter
   *       too: the table holds its short strings by key ({@link
   *       LocalKeyTable#holdsShortStrings}), and a kept row of one finds its entry as a long
   *       key's does;
   *   <li>where the keys are found by their codes ({@link CodeGroups}: dictionary strings as a
   *       cached table holds them), with a filter too: only such a kernel keeps a row's codes
   *       from its load to its update.
   * </ul>
   * Not where the inputs have GPU-DFOR columns: their tiles are decoded by block-wide steps
   * written for 128 threads ({@link TilePrimitives}).
   */
  public static boolean fillsMultiprocessor(Program program, AggregateSpec spec,
      List<InputSpec> inputs) {
    if (InputSpec.anyDfor(inputs)) {
      return false;
    }
    if (LocalKeyTable.holds(spec) || CodeGroups.coded(program, spec, inputs)) {
      return true;
    }
    return program.tables().isEmpty() && (LocalKeyTable.holdsShortStrings(spec)
        || LocalKeyTable.holdsWhereFilling(spec) || (spec.keyCount() > 0 && !program.hasFilter()));
  }

  /**
   * Whether the kernel of {@code spec} over {@code inputs}, running {@code program}, may slice
   * its groups among blocks ({@link #generate(Program, List, AggregateSpec, KernelFeatures,
   * BitSet, int)}): one that {@link #fillsMultiprocessor} with a per-block table found by its
   * fixed-width keys ({@link LocalKeyTable#holdsFixedWidth}; not by codes), probing no join
   * table (each block of a row group would probe every row). Slicing lets the tables of S
   * blocks hold S times the groups, where more groups than one table holds would otherwise take
   * the global table's atomics (dev/gpu-profile/prototypes/partitioned_aggregate.cu).
   *
   * <p>Not where there are two keys and either is made from a column with a validity bitmap: on
   * an H100 (HashAggregateBench "two nullable columns, 8 batches", ncu) such kernels were slower
   * sliced at every count measured, 2 to 6 slices by 9% to 35%, while one nullable key's, or two
   * keys' that cannot be NULL, were faster or within 1% at up to 6 (GroupSlices).
   */
  public static boolean slicesGroups(Program program, AggregateSpec spec,
      List<InputSpec> inputs) {
    return program.tables().isEmpty() && fillsMultiprocessor(program, spec, inputs)
        && LocalKeyTable.holdsFixedWidth(spec, true) && !CodeGroups.coded(program, spec, inputs)
        && (spec.keyCount() == 1 || !keysLoadNullable(program, spec, inputs));
  }

  /** Whether any key of {@code spec} is made from an input column with a validity bitmap. */
  private static boolean keysLoadNullable(Program program, AggregateSpec spec,
      List<InputSpec> inputs) {
    int[] keys = new int[spec.keyCount()];
    for (int k = 0; k < keys.length; k++) {
      keys[k] = program.outputs().get(k).register();
    }
    return ProgramEmitter.loadedColumns(program, keys).stream()
        .anyMatch(c -> c < inputs.size() && inputs.get(c).nullable());
  }

  /**
   * The per-block table's entries of a kernel of {@code spec} that slices its groups, whose table
   * has {@code layout} ({@link LocalTableLayout#of(Program, AggregateSpec, List, boolean)}), on a
   * device of {@code shared}: what is left of a whole-multiprocessor table's budget beside its warps'
   * queues ({@link KeptRowQueue}, sized for a block of {@link #MAX_BLOCK_THREADS}), in which a
   * warp's rows of its slice wait until 32 of them go through the update together: without
   * them a warp would run the update for every item where any lane has a row of its slice,
   * nearly all of them (the prototype: 6 slices 1,504 us unqueued, 1,106 queued).
   */
  public static int slicedTableEntries(AggregateSpec spec, LocalTableLayout layout,
      KernelFeatures.SharedMemory shared) {
    return LocalTableSize.slicedEntries(spec, layout, shared,
        KeptRowQueue.sharedBytes(spec, MAX_BLOCK_THREADS));
  }

  /**
   * The dynamic shared memory of a kernel of {@code spec} that slices its groups, whose table has
   * {@code layout} and {@code entries}: the table, its keys, then its warps' queues (which could not be static
   * arrays: a block of 1,024 threads' queues of two keys pass the 48 KiB those may take).
   */
  public static int slicedSharedBytes(AggregateSpec spec, LocalTableLayout layout,
      int entries) {
    return queueOffset(spec, layout, entries) + KeptRowQueue.sharedBytes(spec, MAX_BLOCK_THREADS);
  }

  /**
   * Where the queues start in the dynamic shared memory of a table of {@code layout} and {@code
   * entries}.
   */
  private static int queueOffset(AggregateSpec spec, LocalTableLayout layout, int entries) {
    int bytes = layout.tableBytes(entries) + LocalKeyTable.bytes(spec, entries, true, false);
    return (bytes + Long.BYTES - 1) / Long.BYTES * Long.BYTES;
  }

  /**
   * The per-block table's entries the kernel has as a constant, not the plan's: in a kernel that
   * {@link #fillsMultiprocessor}, the ones its launch gives it on a device of {@code features}
   * ({@link LocalTableSize#wholeMultiprocessorEntries}); else {@link #PLAN_ENTRIES}. ptxas then
   * folds the table's sections into the addresses' offsets: HashAggregateBench at 10 to 1,000
   * groups 4-5% faster, with the filter 6-7%; its nullable keys at 1 to 1,000 groups 0.4-2.7%
   * faster, 10^4 and 10^5 the same (H200, ncu). (Nullable keys were 3-6% slower with the
   * constant before a NULL key's rows went apart from the item,
   * GroupedAggregateEmitter.nullKeyRows.) {@code layout}: the kernel's table's ({@link
   * LocalTableLayout#of(Program, AggregateSpec, List, boolean)}).
   */
  private static int constantEntries(Program program, AggregateSpec spec,
      List<InputSpec> inputs, LocalTableLayout layout, KernelFeatures features, int slices) {
    if (slices > 1) {
      return slicedTableEntries(spec, layout, features.shared());
    }
    return fillsMultiprocessor(program, spec, inputs)
        ? LocalTableSize.wholeMultiprocessorEntries(spec, layout,
            CodeGroups.coded(program, spec, inputs), features.shared())
        : PLAN_ENTRIES;
  }

  /**
   * The identity of a generated kernel: everything it bakes in, constants' values excluded. The
   * functions' kinds are in it: the register accumulators compile them in (a kernel summing a
   * column must not serve a query taking its minimum).
   */
  public static String key(Program program, List<InputSpec> inputs, AggregateSpec spec) {
    return key(program, inputs, spec, KernelFeatures.OLDEST);
  }

  /** {@link #key(Program, List, AggregateSpec)} of the kernel for a device of {@code features}. */
  public static String key(Program program, List<InputSpec> inputs, AggregateSpec spec,
      KernelFeatures features) {
    return key(program, inputs, spec, features, new BitSet());
  }

  /**
   * {@link #key(Program, List, AggregateSpec, KernelFeatures)} of the kernel for join tables of
   * which those in {@code probeFiltered} have a probe filter.
   */
  public static String key(Program program, List<InputSpec> inputs, AggregateSpec spec,
      KernelFeatures features, BitSet probeFiltered) {
    return key(program, inputs, spec, features, probeFiltered, 1);
  }

  /**
   * {@link #key(Program, List, AggregateSpec, KernelFeatures, BitSet)} of the kernel whose
   * groups are sliced among {@code slices} blocks ({@link #slicesGroups}; 1: not sliced).
   */
  public static String key(Program program, List<InputSpec> inputs, AggregateSpec spec,
      KernelFeatures features, BitSet probeFiltered, int slices) {
    return keyOf(program, inputs, spec, features, probeFilterUsed(program, probeFiltered),
        slices);
  }

  /** The key of the kernel made for the probe filter of the tables in {@code used} alone. */
  private static String keyOf(Program program, List<InputSpec> inputs, AggregateSpec spec,
      KernelFeatures features, BitSet used, int slices) {
    StringBuilder key = new StringBuilder("aggregate-update v98;");
    if (!used.isEmpty()) {
      key.append("probe-filtered").append(used).append(';');
    }
    if (slices > 1) {
      key.append("slices=").append(slices).append(';');
    }
    if (spec.ansi()) {
      key.append("ansi;"); // without it, integer sums to LONG wrap (AccumulatorArithmetic.wraps)
    }
    if (features.reduxSync()) {
      key.append("redux;");
    }
    boolean fills = fillsMultiprocessor(program, spec, inputs);
    if (LocalKeyTable.holdsFixedWidth(spec, fills)) {
      key.append("keyed;");
    }
    LocalTableLayout layout = LocalTableLayout.of(program, spec, inputs, fills);
    if (layout.compact()) {
      key.append("compact;").append(layout.key());
    }
    int entries = constantEntries(program, spec, inputs, layout, features, slices);
    if (entries != PLAN_ENTRIES) {
      key.append("entries=").append(entries).append(';');
    }
    ProgramWords words = programWords(program, inputs, spec);
    if (words != null) {
      key.append(words.key()).append(';');
    }
    key.append(FilterProjectGenerator.programKey(program, inputs)).append(";k")
        .append(spec.keyCount())
        .append(";f");
    for (AggregateFunction f : spec.functions()) {
      key.append(f.kind()).append('(')
          .append(f.kind() == AggregateFunction.Kind.COUNT_ROWS ? -1 : f.input()).append("),");
    }
    return key.toString();
  }

  /**
   * tessera_hash_aggregate_update's parameters, in order (CudaHashAggregate passes them), and the
   * launch's {@link CodeGroups} map and its shape (which the interpreter's kernel does not
   * declare, nor read),
   * then the plan's copy where it fits ({@link PlanWords}), then the program's words where they
   * fit beside it ({@link #programWords}).
   */
  private static final String[][] PARAMETERS = {
      {"u64", "code"}, {"u32", "instruction_count"}, {"u32", "register_count"},
      {"u64", "constants"}, {"u64", "strings"}, {"u64", "inputs"}, {"u64", "tables"},
      {"u32", "filter_register"}, {"u32", "program_ansi"}, {"u32", "rows"},
      {"u64", "plan"}, {"u64", "first_error"}, {"u64", "heap_overflow"},
      {"u64", CodeGroups.PARAMETER}, {"u64", CodeGroups.SHAPE_PARAMETER}};
  /** What {@link #PARAMETERS} take of the parameter space, at most 8 bytes each. */
  static final int PARAMETER_BYTES = PARAMETERS.length * Long.BYTES;

  /**
   * The program's words the kernel of {@code spec} over {@code inputs} takes as its last
   * parameter ({@link ProgramWords}), after the plan's copy: null where they do not fit beside
   * it.
   */
  public static ProgramWords programWords(Program program, List<InputSpec> inputs,
      AggregateSpec spec) {
    int before = PARAMETER_BYTES + (PlanWords.byValue(spec) ? PlanWords.bytes(spec) : 0);
    return ProgramWords.within(program, inputs, before);
  }

  /**
   * Whether the kernel of {@code spec} takes, after the interpreter kernel's parameters, a copy of
   * the plan's words (the plan's bytes as the host uploads them), which it reads instead of the
   * plan in memory.
   */
  public static boolean takesPlanWords(AggregateSpec spec) {
    return PlanWords.byValue(spec);
  }

  /**
   * Shared-memory bytes the kernel of {@code spec} needs after the per-block table's own (for a
   * table of {@code entries}): the entries' keys, where it finds entries by key ({@link
   * LocalKeyTable}; in a kernel that {@link #fillsMultiprocessor}, {@code wholeMultiprocessor},
   * a lone string key's short form too; where its keys are found by their codes, {@code coded},
   * their index); 0 otherwise.
   */
  public static int localKeyBytes(AggregateSpec spec, int entries, boolean wholeMultiprocessor,
      boolean coded) {
    return LocalKeyTable.bytes(spec, entries, wholeMultiprocessor, coded);
  }

  /** Why no kernel is generated for this pipeline, or null when one is. */
  public static String whyNotGenerated(Program program, AggregateSpec spec) {
    return ProgramEmitter.whyNotGenerated(program);
  }

  /**
   * The update kernel of {@code program} (whose outputs are the aggregation's input columns:
   * the keys, then the functions' inputs) over batches laid out as {@code inputs}, for every
   * supported device.
   *
   * @throws CodegenUnsupportedException when the pipeline uses what the generator does not cover
   */
  public static GeneratedKernel generate(Program program, List<InputSpec> inputs,
      AggregateSpec spec) throws CodegenUnsupportedException {
    return generate(program, inputs, spec, KernelFeatures.OLDEST);
  }

  /**
   * {@link #generate(Program, List, AggregateSpec)} for a device with {@code features}: the
   * kernel may use them, and its module declares the target they need.
   */
  public static GeneratedKernel generate(Program program, List<InputSpec> inputs,
      AggregateSpec spec, KernelFeatures features) throws CodegenUnsupportedException {
    return generate(program, inputs, spec, features, new BitSet());
  }

  /**
   * {@link #generate(Program, List, AggregateSpec, KernelFeatures)} for join tables of which
   * those in {@code probeFiltered} (by the program's table index) have a probe filter, as the
   * host built them (CudaHashJoin's ProbeFilter): where the filter needs the first probe's row
   * and its table has one, rows wait for that probe's walk after its filter's bit ({@link
   * ProgramEmitter#splitAtFilteredProbe}).
   */
  public static GeneratedKernel generate(Program program, List<InputSpec> inputs,
      AggregateSpec spec, KernelFeatures features, BitSet probeFiltered)
      throws CodegenUnsupportedException {
    return generate(program, inputs, spec, features, probeFiltered, 1);
  }

  /**
   * {@link #generate(Program, List, AggregateSpec, KernelFeatures, BitSet)}, its groups sliced
   * among {@code slices} blocks of each row group where {@code slices} is more than 1 ({@link
   * #slicesGroups} must hold): block b updates only the rows whose keys fall in slice b % S, of
   * the tiles of row group b / S, and its launch gives each row group S blocks (a grid of a
   * multiple of S).
   */
  public static GeneratedKernel generate(Program program, List<InputSpec> inputs,
      AggregateSpec spec, KernelFeatures features, BitSet probeFiltered, int slices)
      throws CodegenUnsupportedException {
    if (slices < 1 || slices > 1 && !slicesGroups(program, spec, inputs)) {
      throw new IllegalArgumentException("the kernel of " + spec + " cannot slice its groups"
          + " among " + slices + " blocks");
    }
    String whyNot = whyNotGenerated(program, spec);
    if (whyNot != null) {
      throw new CodegenUnsupportedException(whyNot);
    }
    if (inputs.size() != program.inputTypes().size()) {
      throw new IllegalArgumentException("the program reads " + program.inputTypes().size()
          + " columns, " + inputs.size() + " were described");
    }
    if (program.outputs().size() != spec.inputTypes().size()) {
      throw new IllegalArgumentException("the program writes " + program.outputs().size()
          + " columns, the aggregation reads " + spec.inputTypes().size());
    }
    BitSet used = probeFilterUsed(program, probeFiltered);
    String key = keyOf(program, inputs, spec, features, used, slices);
    String entry = FilterProjectGenerator.entryName(ENTRY_PREFIX, key);
    Writer writer = new Writer(program, inputs, spec, entry, features, used, true, slices);
    String ptx = writer.write();
    // A plain copy, or a GPU-FOR column loaded ahead, can take the kernel past its register ask,
    // which would cost it threads: the kernel without either is the compiler's second choice (in
    // 120 random kernels with a copy, one went from 64 to 96 registers).
    GeneratedKernel leaner = !writer.tookPlainCopy() && !writer.loadsEncodedAhead() ? null
        : new GeneratedKernel(entry, key,
        new Writer(program, inputs, spec, entry, features, used, false, slices).write(),
        features.ptxTarget());
    return new GeneratedKernel(entry, key, ptx, features.ptxTarget(), leaner);
  }

  /**
   * Of the program's tables with a probe filter ({@code probeFiltered}), the one its kernel may
   * be made for: the table of the filter's first probe, where it has one
   * ({@link ProgramEmitter#filterFirstProbeTable}). The key and the kernel take only that one,
   * so that batches whose other tables differ in their filters share the kernel; a table left
   * out is one the kernel reads no differently (its probes test the filter's address).
   */
  private static BitSet probeFilterUsed(Program program, BitSet probeFiltered) {
    BitSet used = new BitSet();
    if (!probeFiltered.isEmpty()) {
      int table = ProgramEmitter.filterFirstProbeTable(program);
      if (table >= 0 && probeFiltered.get(table)) {
        used.set(table);
      }
    }
    return used;
  }

  /** One kernel's text under construction. */
  private static final class Writer {
    private final AggregateSpec spec;
    private final String entry;
    private final PtxBuilder b = new PtxBuilder();
    private final ProgramEmitter body;

    /** The thread's accumulators, for a global aggregate that can keep them in registers. */
    private final RegisterAccumulators registers;
    /** The group's update, for every other aggregation. */
    private final GroupedAggregateEmitter update;
    /** {@link #fillsMultiprocessor}: the block's size known only at launch (%ntid.x). */
    private final boolean anyBlockSize;
    /** Where the per-block table's sections lie. */
    private final LocalTableLayout layout;
    private final List<InputSpec> inputs;
    /** The join tables that have a probe filter, by the program's table index. */
    private final BitSet probeFiltered;
    /** The warps' queues of kept rows, where the update takes them (set by write()), or null. */
    private KeptRowQueue queue;
    /**
     * Where the rows that reach the filter's first probe wait for it (set by write()), or null;
     * with {@link #split}, the row's program in its two parts.
     */
    private PrefilteredRows prefiltered;
    private ProgramEmitter.Split split;
    /**
     * With a queue or prefiltered rows: the .pred, true in the pass after the last tile, which
     * takes the rows still waiting.
     */
    private String flushing;
    /**
     * The block's threads (.b64, and .b32) and a tile's rows (.b32): registers, or immediates; set
     * by write().
     */
    private String blockThreads;
    private String blockThreads32;
    /** The batch's last row (.b64) where paired items are clamped to it, else null. */
    private String lastRow;
    /** The tile's GPU-FOR headers its items take ({@link #tileForHeaders}), or null. */
    private TileForHeaders tileHeaders;
    private String tileItems;
    /**
     * Whether the items may load a GPU-FOR column ahead (the kernel's richer form: the leaner
     * one, {@link GeneratedKernel#leaner}, does not), and whether they do (set by write()).
     */
    private final boolean mayLoadEncodedAhead;
    private boolean encodedAhead;
    /** A thread's items a tile: {@link #RUN_ITEMS} where they are one run (set by write()). */
    private int items = ITEMS;
    /** The blocks among which the groups are sliced (1: not sliced). */
    private final int slices;
    /** The per-block table's entries where the kernel has them as a constant, else -1. */
    private final int tableEntries;
    /**
     * Where the groups are sliced: the block's slice, its row group and the grid's row groups
     * (.b32, set by write()); else null, and a block's row group is its index.
     */
    private String blockSlice;
    private String rowGroup;
    private String rowGroups;

    /**
     * {@code plainCopies}: whether items may take a plain copy ({@link ShortcutMode}), in a kernel
     * of a block a multiprocessor, and load a GPU-FOR column ahead ({@link LookaheadColumns}):
     * the kernel's richer form, false for its leaner one.
     */
    Writer(Program program, List<InputSpec> inputs, AggregateSpec spec, String entry,
        KernelFeatures features, BitSet probeFiltered, boolean plainCopies, int slices) {
      this.spec = spec;
      this.slices = slices;
      this.mayLoadEncodedAhead = plainCopies;
      this.probeFiltered = probeFiltered;
      this.anyBlockSize = fillsMultiprocessor(program, spec, inputs);
      this.layout = LocalTableLayout.of(program, spec, inputs, anyBlockSize);
      this.inputs = inputs;
      this.entry = entry;
      this.body = new ProgramEmitter(program, inputs, b, entry,
          programWords(program, inputs, spec));
      this.registers = RegisterAccumulators.admits(spec)
          ? new RegisterAccumulators(b, spec, body, BLOCK_THREADS) : null;
      CodeGroups.Keys coded = CodeGroups.Keys.of(program, spec, inputs);
      if (coded != null && registers == null) {
        for (int k = 0; k < coded.inputs().length; k++) {
          if (coded.decodedAtLookup()[k]) {
            body.leaveCoded(coded.inputs()[k]);
          }
        }
      }
      this.tableEntries = constantEntries(program, spec, inputs, layout, features, slices);
      this.update = registers == null
          ? new GroupedAggregateEmitter(b, spec, body, localName(), features, anyBlockSize,
              coded, plainCopies && anyBlockSize, tableEntries, layout) : null;
    }

    /** Whether the items' GPU-FOR columns are loaded ahead (set by write()). */
    boolean loadsEncodedAhead() {
      return encodedAhead;
    }

    /** Whether an item took a plain copy ({@link ShortcutMode}), after {@link #write}. */
    boolean tookPlainCopy() {
      return update != null && update.tookPlainCopy();
    }

    String write() throws CodegenUnsupportedException {
      ProgramEmitter.Phases phases = body.phases();
      int filter = phases.filter();
      int[] outputs = phases.outputs();
      BitSet cone = phases.cone();
      BitSet rest = phases.rest();
      BitSet needed = (BitSet) cone.clone();
      needed.or(rest);

      split = prefiltersRows(needed, outputs);
      boolean runs = runsOfRows(needed);
      if (runs) {
        items = RUN_ITEMS;
      }
      String thread = b.b32();
      b.op("mov.u32 %s, %%tid.x", thread);
      TilePrimitives tiles =
          anyBlockSize ? null : new TilePrimitives(b, thread, BLOCK_THREADS, ITEMS);
      blockShape();
      sliceShape();
      if (registers != null) {
        registers.begin();
      } else {
        localTableCall(layout.resetFunction());
        update.reset();
        b.op("bar.sync 0");
        update.begin();
        if (slices > 1) {
          // In the dynamic shared memory, after the per-block table and its keys.
          queue = new KeptRowQueue(b, spec, entry + "_kept", MAX_BLOCK_THREADS);
          String base = b.b32();
          b.op("mov.u32 %s, %s", base, localName());
          b.op("add.u32 %s, %s, %d", base, base, queueOffset(spec, layout, tableEntries));
          queue.beginAt(thread, base);
        } else if (queuesKeptRows(filter)) {
          queue = new KeptRowQueue(b, spec, entry + "_kept", BLOCK_THREADS);
          queue.begin(thread);
        }
        if (queue != null) {
          flushing = b.pred();
          b.op("setp.ne.u32 %s, 0, 0", flushing);
        }
      }
      if (split != null) {
        // A kernel of one copy per item (register accumulators) pops after the tile's items,
        // one of one copy for all after each item.
        int pushes = registers != null ? items : pairsItems() ? 2 : 1;
        prefiltered = new PrefilteredRows(b, entry + "_prefiltered", BLOCK_THREADS, pushes,
            split.carried(), body.count());
        prefiltered.begin(thread);
        if (flushing == null) {
          flushing = b.pred();
          b.op("setp.ne.u32 %s, 0, 0", flushing);
        }
      }

      // Tiles grid-stride, as the interpreter kernel takes them. A batch's rows are int32, so the
      // tile's first row and each item's place in it are 32-bit arithmetic (against 64-bit
      // compares of each item's row, SSB SF10's Q2.1 kernel took 48 registers instead of 52 and
      // 5.5% less time on an H200).
      String rows32 = body.loadParam("u32", "rows");
      String rows = b.b64();
      b.op("cvt.s64.s32 %s, %s", rows, rows32);
      if (pairsItems() && clampsPairedRows()) {
        lastRow = b.b64();
        b.op("add.s64 %s, %s, -1", lastRow, rows);
      }
      String tileStart = b.b32();
      if (rowGroup != null) {
        b.op("mov.u32 %s, %s", tileStart, rowGroup);
      } else {
        b.op("mov.u32 %s, %%ctaid.x", tileStart);
      }
      b.op("mul.lo.u32 %s, %s, %s", tileStart, tileStart, tileItems);
      LookaheadColumns ahead = null;
      LookaheadColumns secondAhead = null; // the second item's, where items are paired
      SortedSet<Integer> readAhead = !readsAhead() ? new TreeSet<>() : split != null
          ? LookaheadColumns.columns(body.plainColumnsLoaded(split.first()), inputs)
          : LookaheadColumns.columns(body.columnsLoaded(needed), inputs, mayLoadEncodedAhead);
      encodedAhead = readAhead.stream()
          .anyMatch(c -> inputs.get(c).encoding() != Encoding.PLAIN);
      if (!readAhead.isEmpty()) { // from the thread's first row on
        ahead = new LookaheadColumns(b, body, inputs, readAhead);
        loadFirstRow(ahead, thread, tileStart, 0, rows32);
        ahead.loadHeaders();
        if (pairsItems()) {
          secondAhead = new LookaheadColumns(b, body, inputs, readAhead);
          loadFirstRow(secondAhead, thread, tileStart, BLOCK_THREADS, rows32);
        }
      }
      tileHeaders = tileForHeaders(needed, split != null ? split.first() : needed);
      if (tileHeaders != null) {
        tileHeaders.begin(thread);
      }
      String tileLoop = b.label("tile");
      String tilesDone = b.label("tiles_done");
      b.place(tileLoop);
      String past = b.pred();
      b.op("setp.ge.u32 %s, %s, %s", past, tileStart, rows32);
      // Where a kernel of one copy per item pops its prefiltered rows, after the tile's items.
      String popping = prefiltered != null && registers != null ? b.label("prefiltered") : null;
      if (flushing == null) {
        b.op("@%s bra %s", past, tilesDone);
      } else {
        // One pass more after the last tile, every row of it outside, flushes the queues.
        String flushed = b.pred();
        b.op("and.pred %s, %s, %s", flushed, past, flushing);
        b.op("@%s bra.uni %s", flushed, tilesDone);
        b.op("mov.pred %s, %s", flushing, past);
        if (popping != null) {
          // That pass has no items there (a run's header would be read past the batch): pops.
          b.op("@%s bra.uni %s", past, popping);
        }
      }
      String tileOffset = b.b64();
      b.op("cvt.u64.u32 %s, %s", tileOffset, tileStart);
      // The tile's rows in the batch (at most 0 in the pass that flushes the queues).
      String numTileItems = b.b32();
      b.op("sub.s32 %s, %s, %s", numTileItems, rows32, tileStart);
      b.op("min.s32 %s, %s, %s", numTileItems, numTileItems, tileItems);
      if (prefetchesTiles(filter)) {
        body.prefetchTile(body.plainColumnsLoaded(needed), thread, blockThreads, ITEMS,
            tileOffset, numTileItems, null);
      } else if (prefetchesNextTile(filter)) {
        prefetchNextTile(needed, thread, tileStart, rows32);
      }
      // The GPU-DFOR tiles (block-wide: the tile loop is the same for every thread).
      body.loadDforTiles(needed, tiles, tileOffset, numTileItems);
      if (body.decodesTiles() || registers != null) {
        // One copy of the code per item: each item reads its own registers of the decoded
        // tiles; and accumulating in registers, the items' loads overlap (and the code is short).
        // Neither kernel fills a multiprocessor (that takes keys and no GPU-DFOR input: a
        // register kernel has no keys, a decoding one reads GPU-DFOR), so the block here is
        // BLOCK_THREADS, which the items' constant offsets below assume.
        if (anyBlockSize) {
          throw new IllegalStateException("a kernel of one copy per item fills a multiprocessor:"
              + " its items' offsets assume blocks of " + BLOCK_THREADS + " threads");
        }
        if (queue != null) {
          throw new IllegalStateException("a kernel of one copy per item queues its kept rows:"
              + " the update's code would be there once per item");
        }
        if (runs) {
          // The thread's rows are RUN_ITEMS consecutive ones, in one GPU-FOR miniblock (a tile is
          // whole miniblocks), whose headers the items share. Read past the batch's end, a
          // header is the last row's, for a thread whose items all lie past it.
          b.comment(RUN_MARK);
          String firstInTile = b.b32();
          b.op("mul.lo.u32 %s, %s, %d", firstInTile, thread, items);
          String firstRow = b.b64();
          b.op("cvt.u64.u32 %s, %s", firstRow, firstInTile);
          b.op("add.s64 %s, %s, %s", firstRow, firstRow, tileOffset);
          String lastRow = b.b64();
          b.op("add.s64 %s, %s, -1", lastRow, rows);
          String headerRow = b.b64();
          b.op("min.s64 %s, %s, %s", headerRow, firstRow, lastRow);
          // The run's items in the batch (item i is outside where there are at most i).
          String runItems = b.b32();
          b.op("sub.s32 %s, %s, %s", runItems, numTileItems, firstInTile);
          body.beginRun(split != null ? split.first() : needed, headerRow);
          for (int item = 0; item < items; item++) {
            String outside = b.pred();
            b.op("setp.le.s32 %s, %s, %d", outside, runItems, item);
            item(item, Integer.toString(item), firstInTile, tileOffset, outside, cone, rest,
                filter, outputs);
          }
          body.endRun();
        } else {
          for (int item = 0; item < ITEMS; item++) {
            String outside = outsideTile(thread, Integer.toString(item * BLOCK_THREADS),
                numTileItems);
            item(item, Long.toString((long) item * BLOCK_THREADS), thread, tileOffset, outside,
                cone, rest, filter, outputs);
          }
        }
        if (popping != null) {
          b.place(popping);
          popPrefiltered(cone, rest, filter, outputs);
        }
      } else {
        // One copy of the item's code, run for each item: a quarter of the PTX to compile.
        if (tileHeaders != null) {
          tileHeaders.load(tileStart, rows32);
        }
        String itemOffset = b.b32();
        b.op("mov.b32 %s, 0", itemOffset);
        String itemLoop = b.label("item_loop");
        b.place(itemLoop);
        String outside = outsideTile(thread, itemOffset, numTileItems);
        String itemOffset64 = b.b64();
        b.op("cvt.u64.u32 %s, %s", itemOffset64, itemOffset);
        int step = pairsItems() ? 2 : 1;
        Map<Integer, LookaheadColumns.Raw> firstLoaded = Map.of();
        if (ahead != null) {
          firstLoaded = ahead.take();
          loadNextRow(ahead, thread, tileStart, itemOffset, 0, step, rows32);
        }
        if (step == 2) {
          Map<Integer, LookaheadColumns.Raw> secondLoaded = Map.of();
          if (secondAhead != null) {
            secondLoaded = secondAhead.take();
            loadNextRow(secondAhead, thread, tileStart, itemOffset, 1, step, rows32);
          }
          // The pair's second item is a block's threads after the first.
          String secondOffset = b.b32();
          b.op("add.u32 %s, %s, %d", secondOffset, itemOffset, BLOCK_THREADS);
          String secondOutside = outsideTile(thread, secondOffset, numTileItems);
          String secondOffset64 = b.b64();
          b.op("cvt.u64.u32 %s, %s", secondOffset64, secondOffset);
          prefilterPair(new String[] {itemOffset64, secondOffset64}, thread, tileOffset,
              new String[] {outside, secondOutside}, List.of(firstLoaded, secondLoaded));
        } else {
          body.takeLoadedAhead(firstLoaded);
          item(0, itemOffset64, thread, tileOffset, outside, cone, rest, filter, outputs);
          if (ahead != null) {
            ahead.loadHeaders(); // the next row's, whose block start has had the item to arrive
          }
        }
        body.takeLoadedAhead(Map.of());
        if (prefiltered != null) {
          popPrefiltered(cone, rest, filter, outputs);
        }
        if (step == 1) {
          b.op("add.u32 %s, %s, %s", itemOffset, itemOffset, blockThreads32);
        } else { // pairsItems: blocks of BLOCK_THREADS
          b.op("add.u32 %s, %s, %d", itemOffset, itemOffset, step * BLOCK_THREADS);
        }
        String more = b.pred();
        b.op("setp.lt.u32 %s, %s, %s", more, itemOffset, tileItems);
        b.op("@%s bra.uni %s", more, itemLoop);
      }
      b.op("mad.lo.u32 %s, %s, %s, %s", tileStart, gridRowGroups(), tileItems, tileStart);
      b.op("bra.uni %s", tileLoop);
      b.place(tilesDone);

      if (registers != null) {
        registers.flush();
      } else {
        update.end();
        b.op("bar.sync 0");
        localTableCall(layout.mergeFunction());
      }
      b.op("ret");
      return text();
    }

    /**
     * Whether the loop of one copy of the item's code loads each row's plain columns an item
     * ahead ({@link LookaheadColumns}): in a kernel that {@link #fillsMultiprocessor}, whose rows
     * run no block-wide step between items (one that slices its groups too, whose blocks read
     * every row of their row group and queue their slice's); and, of the columns the first part
     * reads, where rows
     * wait for a probe's walk after its filter's bit ({@link ProgramEmitter#splitAtFilteredProbe}:
     * an item is then its key's load, the key's hash and the bit, and waited for DRAM at the
     * key's first use: StarJoinBench sparse 24.5% of the stall samples there, 390.7 -> 378.4 us
     * with the key loaded ahead; H200, ncu).
     */
    private boolean readsAhead() {
      if (split != null && split.probe() >= 0) {
        return !body.decodesTiles() && registers == null;
      }
      return anyBlockSize && split == null;
    }

    /**
     * Whether the item loop runs two items an iteration (the second a block's threads after the
     * first), each with its own columns loaded ahead, and pops after both, so that two items'
     * first parts wait together: where rows wait after a probe filter's bit (an item is the
     * key's load, its hash and the bit's byte, and waits for that byte's load), and where they
     * wait after a guard split's first part (SSB's grouped kernels: -1 to -2%, H200, ncu). Not
     * in a kernel of register accumulators or of GPU-DFOR tiles (one copy of the code per item).
     */
    private boolean pairsItems() {
      // A tile's items go in whole pairs (ITEMS is even), each pair inside one tile.
      return ITEMS % 2 == 0 && split != null && registers == null && !body.decodesTiles()
          && !anyBlockSize && (split.probe() < 0 || readsAhead());
    }

    /**
     * Whether {@link #prefilterPair} reads a row past the batch's end at its last row: where the
     * first part loads a column not loaded ahead. Elsewhere it reads nothing there (the keys
     * loaded ahead read nothing past the batch, and a probe filter's bit lies inside the filter
     * for any keys), and needs no clamp.
     */
    private boolean clampsPairedRows() {
      SortedSet<Integer> loaded = body.columnsLoaded(split.first());
      return !readsAhead() || !LookaheadColumns.columns(loaded, inputs).equals(loaded);
    }

    /**
     * Two items' first parts ({@link #firstPart}), then their pushes, without a branch around
     * either (a row outside the tile does not pass), so that their loads (a filter's two bytes)
     * are in flight together; each item takes its words in {@code loaded}. Where the first part
     * reads a column not loaded ahead ({@link #clampsPairedRows}), a row past the batch is read
     * at its last row, and the pass that flushes the queues skips the pair (a branch the block
     * takes together). Only where {@link #pairsItems}: StarJoinBench sparse 278.0 -> 240.1 us
     * (H200, ncu), where an item waited for its byte's load (31% of the stall samples).
     */
    private void prefilterPair(String[] itemOffsets, String threadOffset, String tileOffset,
        String[] outside, List<Map<Integer, LookaheadColumns.Raw>> loaded)
        throws CodegenUnsupportedException {
      List<FirstPart> parts = new ArrayList<>();
      String[] passes = {b.pred(), b.pred()};
      String done = null;
      if (lastRow != null) {
        // The pass that flushes the queues has no rows to read (the batch may have none): its
        // rows do not pass.
        for (String p : passes) {
          b.op("setp.ne.u32 %s, 0, 0", p);
        }
        done = b.label("pair_done");
        b.op("@%s bra.uni %s", flushing, done);
      }
      for (int k = 0; k < 2; k++) {
        b.comment(PAIRED_ITEM + k);
        body.takeLoadedAhead(loaded.get(k));
        FirstPart part = firstPart(k, itemOffsets[k], threadOffset, tileOffset, lastRow);
        String inside = b.pred();
        b.op("not.pred %s, %s", inside, outside[k]);
        b.op("and.pred %s, %s, %s", passes[k], part.passes(), inside);
        parts.add(part);
      }
      // The pass that skips the pair skips its pushes too (no row of it passes): a push after
      // the skip would read registers the skip did not write, which ptxas then keeps live through
      // every loop (SSB Q3.1's kernel: 72 registers, 64 without).
      for (int k = 0; k < 2; k++) {
        prefiltered.push(passes[k], parts.get(k).row(), parts.get(k).values());
      }
      if (done != null) {
        b.place(done);
      }
    }

    /** {@link LookaheadColumns#load} of the thread's row {@code offset} rows into the tile. */
    private void loadFirstRow(LookaheadColumns ahead, String thread, String tileStart,
        int offset, String rows32) {
      loadRow(ahead, thread, tileStart, Integer.toString(offset), rows32);
    }

    /**
     * {@link LookaheadColumns#load} of the thread's row {@code offset} (.b32 register or
     * immediate) rows after the tile at {@code tileStart}; none past the batch's {@code rows32}.
     */
    private void loadRow(LookaheadColumns ahead, String thread, String tileStart, String offset,
        String rows32) {
      String row = b.b32();
      b.op("add.u32 %s, %s, %s", row, tileStart, thread);
      b.op("add.u32 %s, %s, %s", row, row, offset);
      String inBatch = b.pred();
      b.op("setp.lt.u32 %s, %s, %s", inBatch, row, rows32);
      ahead.load(row, inBatch);
    }

    /**
     * {@link LookaheadColumns#load} of the thread's row for item {@code index} of the loop's
     * next iteration, {@code step} items an iteration, after the iteration at {@code itemOffset}
     * (.b32) of the tile at {@code tileStart}: in this tile, or past its last the block's next
     * tile's; none past the batch's {@code rows32}.
     */
    private void loadNextRow(LookaheadColumns ahead, String thread, String tileStart,
        String itemOffset, int index, int step, String rows32) {
      String offset = b.b32();
      String wrapped = gridStride();
      if (step == 1) {
        b.op("add.u32 %s, %s, %s", offset, itemOffset, blockThreads32);
      } else { // pairsItems: blocks of BLOCK_THREADS
        b.op("add.u32 %s, %s, %d", offset, itemOffset, (step + index) * BLOCK_THREADS);
        b.op("add.u32 %s, %s, %d", wrapped, wrapped, index * BLOCK_THREADS);
      }
      String inTile = b.pred();
      b.op("setp.lt.u32 %s, %s, %s", inTile, offset, tileItems);
      b.op("selp.b32 %s, %s, %s, %s", offset, offset, wrapped, inTile);
      loadRow(ahead, thread, tileStart, offset, rows32);
    }

    /** A new .b32: the rows from a block's tile to its next, the grid's row groups' tiles. */
    private String gridStride() {
      String rowGroupsNow = gridRowGroups();
      String stride = b.b32();
      b.op("mul.lo.u32 %s, %s, %s", stride, rowGroupsNow, tileItems);
      return stride;
    }

    /**
     * The grid's row groups (.b32): its blocks, or where the groups are sliced, a block's
     * {@link #slices} per row group.
     */
    private String gridRowGroups() {
      if (rowGroups != null) {
        return rowGroups;
      }
      String grid = b.b32();
      b.op("mov.u32 %s, %%nctaid.x", grid);
      return grid;
    }

    /**
     * Where the groups are sliced, at the kernel's start: the block's slice (its index modulo
     * {@link #slices}), its row group (the index over them) and the grid's row groups.
     */
    private void sliceShape() {
      if (slices == 1) {
        return;
      }
      String block = b.b32();
      b.op("mov.u32 %s, %%ctaid.x", block);
      blockSlice = b.b32();
      b.op("rem.u32 %s, %s, %d", blockSlice, block, slices);
      rowGroup = b.b32();
      b.op("div.u32 %s, %s, %d", rowGroup, block, slices);
      String grid = b.b32();
      b.op("mov.u32 %s, %%nctaid.x", grid);
      rowGroups = b.b32();
      b.op("div.u32 %s, %s, %d", rowGroups, grid, slices);
    }

    /**
     * Where the groups are sliced: a kept row whose keys ({@code values} at the first outputs)
     * fall in another block's slice branches to {@code done}, as a row the filter drops. The
     * slice is of the keys' product with {@link LocalKeyTable#SLOT_MULTIPLIER} (as the table's
     * first slot mixes them), its bits 32 to 47 scaled to the slices, where the first slot takes
     * the top bits: a block's groups spread over its table's slots. Any function of the row's
     * values would give right results (each row is then updated by exactly one block of its row
     * group); one of its keys puts each group's rows in one table (a NULL key's slice is of the
     * value its column holds there, so NULL rows may meet in several tables, as every group did
     * before slicing).
     */
    private void sliceCheck(Val[] values, int[] outputs, String done) {
      b.comment("the row's slice of the groups: another block's rows leave the item");
      String mixed = null;
      for (int k = 0; k < spec.keyCount(); k++) {
        String key = update.canonical(k, values[outputs[k]]).value();
        if (mixed == null) {
          mixed = b.b64();
          b.op("mul.lo.s64 %s, %s, %d", mixed, key, LocalKeyTable.SLOT_MULTIPLIER);
        } else {
          b.op("xor.b64 %s, %s, %s", mixed, mixed, key);
          b.op("mul.lo.s64 %s, %s, %d", mixed, mixed, LocalKeyTable.SLOT_MULTIPLIER);
        }
      }
      String high = b.b32();
      b.op("mov.b64 {%s, %s}, %s", b.b32(), high, mixed);
      String bits = b.b32();
      b.op("shl.b32 %s, %s, 16", bits, high);
      String slice = b.b32();
      b.op("mul.hi.u32 %s, %s, %d", slice, bits, slices);
      String other = b.pred();
      b.op("setp.ne.u32 %s, %s, %s", other, slice, blockSlice);
      b.op("@%s bra %s", other, done);
    }

    /**
     * Whether the thread's item {@code itemOffset} rows after it in the tile (.b32 register or
     * immediate) lies past the tile's {@code numTileItems} rows in the batch (.b32): a .pred.
     */
    private String outsideTile(String thread, String itemOffset, String numTileItems) {
      String inTile = b.b32();
      b.op("add.u32 %s, %s, %s", inTile, thread, itemOffset);
      String outside = b.pred();
      b.op("setp.ge.s32 %s, %s, %s", outside, inTile, numTileItems);
      return outside;
    }

    /**
     * Whether a thread's items are consecutive rows, one run ({@link ProgramEmitter#beginRun})
     * sharing the GPU-FOR headers of the columns {@code needed} loads: in a kernel of one copy
     * per item that reads a GPU-FOR column and no GPU-DFOR tile (whose values are the thread's
     * items a block apart). Elsewhere a thread's items are a block's threads apart.
     */
    private boolean runsOfRows(BitSet needed) {
      BitSet shared = split != null ? split.first() : needed;
      return registers != null && !body.loadsDfor(needed)
          && !body.inlineDecodes(body.columnLoads(shared)).isEmpty();
    }

    /**
     * The row's program split at the filter's first probe, where the rows that reach it wait for
     * it ({@link PrefilteredRows}): in a kernel whose blocks are {@link #BLOCK_THREADS} (the
     * stacks' arrays are sized for them) that reads no GPU-DFOR tile (whose values are the
     * thread's own items' registers), where the program splits: at that probe's filter where
     * its table has one ({@link ProgramEmitter#splitAtFilteredProbe}), else at the first guard
     * before a probe ({@link ProgramEmitter#splitAtFirstProbe}); null elsewhere.
     */
    private ProgramEmitter.Split prefiltersRows(BitSet needed, int[] outputs) {
      if (anyBlockSize || body.loadsDfor(needed)) {
        return null;
      }
      ProgramEmitter.Split atFilter = body.splitAtFilteredProbe(needed, outputs, probeFiltered);
      return atFilter != null ? atFilter : body.splitAtFirstProbe(needed, outputs);
    }

    /**
     * Whether the kernel queues its kept rows for the update ({@link KeptRowQueue}): where the
     * queue {@link KeptRowQueue#admits admits} the aggregation and the program filters its rows,
     * in the kernel whose items share one copy of the code (no GPU-DFOR input: its tiles are
     * decoded into per-item registers), so the update's code is there once.
     */
    private boolean queuesKeptRows(int filter) {
      return filter >= 0 && !anyBlockSize && KeptRowQueue.admits(spec, BLOCK_THREADS)
          && !InputSpec.anyDfor(inputs);
    }

    /**
     * Whether each tile asks L2 for its rows of every plain column the program loads, at its
     * start: where the kernel {@link #fillsMultiprocessor} and has a filter, whose kept rows load
     * their other columns only after it, so an item waits for two loads one after the other.
     * HashAggregateBench "filter v > 0" on an H200 (ncu, 1 to 10^5 groups): 6-12% faster. Without
     * a filter an item issues all its loads at once, and the same request measured -3% to +4%.
     */
    private boolean prefetchesTiles(int filter) {
      return anyBlockSize && filter >= 0;
    }

    /**
     * Whether each tile asks L2 for the block's next tile's rows of every plain column the
     * program loads, at its start, while the block's table has room ({@link
     * GroupedAggregateEmitter#tableHasRoom}): where the kernel {@link #fillsMultiprocessor} and
     * has no filter (with one, {@link #prefetchesTiles}). Its items issue their loads together,
     * but 32 warps a multiprocessor with one item's loads in flight each do not cover DRAM's
     * latency: HashAggregateBench's long keys, 1 to 1,000 groups, 5-6% faster (H200, ncu). With
     * more groups than the table holds most rows go to the global accumulators, L2 is what the
     * kernel waits for, and the requests made 10^4 and 10^5 groups 2-3% slower: there the
     * table soon has no room, and the tiles ask for nothing. A table found by group (a string
     * key's) has no such test: its tiles always ask (not measured without).
     */
    private boolean prefetchesNextTile(int filter) {
      return anyBlockSize && filter < 0;
    }

    /** {@link #prefetchesNextTile}: the tile after {@code tileStart} (.b32) of the block's. */
    private void prefetchNextTile(BitSet needed, String thread, String tileStart, String rows32) {
      String nextStart = b.b32();
      b.op("add.u32 %s, %s, %s", nextStart, tileStart, gridStride());
      String nextItems = b.b32(); // its rows in the batch: none past the batch's end
      b.op("sub.s32 %s, %s, %s", nextItems, rows32, nextStart);
      b.op("min.s32 %s, %s, %s", nextItems, nextItems, tileItems);
      b.op("max.s32 %s, %s, 0", nextItems, nextItems);
      String nextOffset = b.b64();
      b.op("cvt.u64.u32 %s, %s", nextOffset, nextStart);
      body.prefetchTile(body.plainColumnsLoaded(needed), thread, blockThreads, ITEMS, nextOffset,
          nextItems, update.tableHasRoom());
    }

    /**
     * The block's threads and a tile's rows: constants, or where the launch picks the block's
     * size, read from %ntid.x.
     */
    private void blockShape() {
      if (!anyBlockSize) {
        blockThreads = Integer.toString(BLOCK_THREADS);
        blockThreads32 = blockThreads;
        tileItems = Integer.toString(BLOCK_THREADS * items);
        return;
      }
      blockThreads32 = b.b32();
      b.op("mov.u32 %s, %%ntid.x", blockThreads32);
      blockThreads = b.b64();
      b.op("cvt.u64.u32 %s, %s", blockThreads, blockThreads32);
      tileItems = b.b32();
      b.op("mul.lo.u32 %s, %s, %d", tileItems, blockThreads32, ITEMS);
    }

    /**
     * One item: the program for its row, then the group's update (every lane runs it). The row is
     * the tile's, plus {@code threadOffset} (.b32: the thread's, or its first row's in the tile),
     * plus {@code itemOffset} (a register or an immediate); where {@code outside} (.pred) holds,
     * the row is none of the tile's. {@code item} picks the item's registers of the decoded
     * GPU-DFOR tiles.
     */
    private void item(int item, String itemOffset, String threadOffset, String tileOffset,
        String outside, BitSet cone, BitSet rest, int filter, int[] outputs)
        throws CodegenUnsupportedException {
      b.comment("item " + item);
      if (split != null) {
        prefilterItem(item, itemOffset, threadOffset, tileOffset, outside);
        return;
      }
      // Loaded per item: held from one item to the next, they would take registers through the
      // group's update.
      BitSet needed = (BitSet) cone.clone();
      needed.or(rest);
      body.loadPhaseValues(needed);
      String row = row(itemOffset, threadOffset, tileOffset);
      RowEmitter.Item it = new RowEmitter.Item(item, row);
      body.useTileHeaders(tileHeaders);
      String active = b.b32();
      b.op("mov.b32 %s, 0", active);
      String done = b.label("item" + item + "_done");
      b.op("@%s bra %s", outside, done);
      Val[] values = new Val[body.count()];
      rowProgram(values, it, done, cone, rest, filter, outputs);
      body.useTileHeaders(null);
      if (blockSlice != null) {
        sliceCheck(values, outputs, done);
      }
      aggregate(active, values, outputs);
      b.place(done);
      update(active, values, outputs);
    }

    /** A row the program kept (its lane's {@code active} then 1): queued, or accumulated. */
    private void aggregate(String active, Val[] values, int[] outputs) {
      b.op("mov.b32 %s, 1", active);
      if (queue != null) {
        queue.push(values, outputs, update);
      }
      if (registers != null) {
        registers.accumulate(values, outputs);
      }
    }

    /**
     * Where the warp's lanes meet again after a row each ({@code active} where it was kept): the
     * groups' update of the kept rows, or of whole warps of them from the queue.
     */
    private void update(String active, Val[] values, int[] outputs) {
      if (queue != null) {
        queue.arrived();
        // Whole warps of kept rows go through the update; the flushing pass takes the rest.
        String take = queue.full();
        String last = b.pred();
        b.op("and.pred %s, %s, %s", last, flushing, queue.pending());
        b.op("or.pred %s, %s, %s", take, take, last);
        String skip = b.label("queue_kept");
        b.op("@!%s bra.uni %s", take, skip);
        KeptRowQueue.Taken taken = queue.take();
        update.item(taken.active(), taken.column(), queue.nullable());
        queue.release();
        b.place(skip);
      } else if (update != null) {
        update.item(active, values, outputs);
      }
    }

    /** The item's row: the tile's, plus the thread's (.b32), plus the item's offset. */
    private String row(String itemOffset, String threadOffset, String tileOffset) {
      String row = b.b64();
      String thread64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", thread64, threadOffset);
      b.op("add.s64 %s, %s, %s", row, tileOffset, thread64);
      b.op("add.s64 %s, %s, %s", row, row, itemOffset);
      return row;
    }

    /**
     * With prefiltered rows: the item's part of its program up to the filter's first probe, and
     * its row onto the warp's stack where it reaches the probe ({@link #popPrefiltered} runs the
     * rest). Parameters as {@link #item}'s.
     */
    private void prefilterItem(int item, String itemOffset, String threadOffset,
        String tileOffset, String outside) throws CodegenUnsupportedException {
      String passes = b.pred();
      b.op("setp.ne.u32 %s, 0, 0", passes);
      String done = b.label("item" + item + "_prefiltered");
      String skipped = b.label("item" + item + "_outside");
      b.op("@%s bra %s", outside, skipped);
      Map<PtxBuilder.Kind, Integer> before = b.registersMade();
      FirstPart part = firstPart(item, itemOffset, threadOffset, tileOffset, null);
      b.op("mov.pred %s, %s", passes, part.passes());
      b.op("bra %s", done);
      b.place(skipped);
      prefiltered.writeSkipped(part.row(), part.values(), r -> b.madeSince(before, r));
      b.place(done);
      prefiltered.push(passes, part.row(), part.values());
    }

    /**
     * An item's row, its values of the split's first part, and a .pred that holds where the row
     * passes it (goes on to the probe or conjunct the program split at).
     */
    private record FirstPart(String row, Val[] values, String passes) {}

    /**
     * The split's first part for item {@code item}'s row (see {@link #row}), read at the batch's
     * {@code lastRow} (.b64) where it lies past it (null: no clamp); with the tile's GPU-FOR
     * headers where the kernel has them.
     */
    private FirstPart firstPart(int item, String itemOffset, String threadOffset,
        String tileOffset, String lastRow) throws CodegenUnsupportedException {
      body.loadPhaseValues(split.first());
      String row = row(itemOffset, threadOffset, tileOffset);
      if (lastRow != null) {
        b.op("min.s64 %s, %s, %s", row, row, lastRow);
      }
      body.useTileHeaders(tileHeaders);
      RowEmitter.Item it = new RowEmitter.Item(item, row);
      Val[] values = split.valuesBeforeFirst(body.count());
      BitSet loads = body.columnLoads(split.first());
      body.emitAll(loads, values, it);
      BitSet others = (BitSet) split.first().clone();
      others.andNot(loads);
      body.emitAll(others, values, it);
      body.useTileHeaders(null);
      String passes = b.pred();
      b.op("not.pred %s, %s", passes, body.guardStops(split, values));
      return new FirstPart(row, values, passes);
    }

    /**
     * The tile's GPU-FOR headers, read once a tile and handed to its items ({@link
     * TileForHeaders}), for the columns of {@code itemCode} (the code that runs in the tile's
     * order: the split's first part, or the whole program) of the kernel's {@code needed}: in
     * the loop of one copy of the item's code (no register accumulators, no GPU-DFOR tile),
     * whose blocks are BLOCK_THREADS, a GPU-FOR block's values, so a tile's item k lies in its
     * block k. Null where that code decodes no GPU-FOR column.
     */
    private TileForHeaders tileForHeaders(BitSet needed, BitSet itemCode) {
      if (anyBlockSize || registers != null || body.loadsDfor(needed)
          || BLOCK_THREADS != GpuForLayout.BLOCK_VALUES) {
        return null;
      }
      SortedSet<Integer> columns = TileForHeaders.columns(body.columnsLoaded(itemCode), inputs);
      return columns.isEmpty() ? null : new TileForHeaders(b, body, inputs, columns, ITEMS,
          entry + "_for_headers", BLOCK_THREADS);
    }

    /**
     * With prefiltered rows, after the items that pushed them: while the warp's stack holds 32
     * rows (in the flushing pass, any; and with a queue, until the queue is empty too), the rest
     * of their program from the filter's first probe, 32 rows at once, and their aggregation.
     */
    private void popPrefiltered(BitSet cone, BitSet rest, int filter, int[] outputs)
        throws CodegenUnsupportedException {
      BitSet coneAfter = (BitSet) cone.clone();
      coneAfter.and(split.after());
      BitSet needed = (BitSet) coneAfter.clone();
      needed.or(rest);
      String pop = b.label("pop");
      String popped = b.label("popped");
      b.place(pop);
      String pops = prefiltered.pops(flushing);
      if (queue != null) {
        // In the flushing pass the queue's last rows go through the update here: no item's
        // pass takes them after the pops.
        String queued = b.pred();
        b.op("and.pred %s, %s, %s", queued, flushing, queue.pending());
        b.op("or.pred %s, %s, %s", pops, pops, queued);
      }
      b.op("@!%s bra.uni %s", pops, popped);
      String active = b.b32();
      b.op("mov.b32 %s, 0", active);
      String done = b.label("prefiltered_done");
      PrefilteredRows.Taken taken = prefiltered.pop(done);
      body.loadPhaseValues(needed);
      Val[] values = taken.values();
      if (split.left() >= 0) {
        values[split.left()] = body.alwaysTrue();
      }
      body.rowsPassedFilterBitOf(split.probe());
      rowProgram(values, new RowEmitter.Item(0, taken.row()), done, coneAfter, rest, filter,
          outputs);
      body.rowsPassedFilterBitOf(-1);
      aggregate(active, values, outputs);
      b.place(done);
      update(active, values, outputs);
      b.op("bra.uni %s", pop);
      b.place(popped);
    }

    /**
     * A row's program from its column loads (of {@code cone}, the filter's instructions still to
     * run, and {@code rest}, the outputs' others) to its outputs' errors, into {@code values}
     * (holding those of the instructions run before); a row the filter drops or whose program
     * fails branches to {@code done}, one that is aggregated goes on.
     */
    private void rowProgram(Val[] values, RowEmitter.Item it, String done, BitSet cone,
        BitSet rest, int filter, int[] outputs) throws CodegenUnsupportedException {
      String row = it.row();
      // The item's column loads first, every one issued before any is used: emitted where the
      // program reads them, a load in a guarded conjunct waited for memory after the left
      // operand's probes (StarJoinBench: the supplier's key after the part's probe and payload),
      // and a load after the filter after the filter's own (HashAggregateBench's "filter v > 0":
      // the key after v). A dropped row's loads cost DRAM bandwidth, which these kernels have to
      // spare (they wait on latency: StarJoinBench's at 4-5% of DRAM's throughput). On an H200:
      // StarJoinBench's fused aggregate -3%, "filter v > 0" at 1-1,000 groups -5 to -9%.
      // Except a GPU-FOR value that only a kept row reads (an aggregation input or a group key
      // the filter does not read): its decode is some 30 instructions, not one load, and SSB
      // keeps 0.01-3% of the rows, so the kept rows decode it after the filter. SSB SF10 on an
      // H200: Q4.3 -14%, Q4.1 -9% (60 to 52 registers), Q1.1 -2%, Q2.1 -0.5%, Q3.1 +1.6% (it
      // keeps the most).
      BitSet loads = body.columnLoads(cone);
      BitSet restLoads = body.columnLoads(rest);
      restLoads.andNot(body.inlineDecodes(restLoads));
      loads.or(restLoads);
      body.emitAll(loads, values, it);
      BitSet filterRest = (BitSet) cone.clone();
      filterRest.andNot(loads);
      body.emitAll(filterRest, values, it);
      // HostFilterProject's order: the filter's error, then each output's if the row is kept.
      String filterError = null;
      if (filter >= 0) {
        Val f = values[filter];
        String keep = body.keeps(f);
        filterError = f.error();
        if (filterError != null) {
          String failed = b.pred();
          b.op("setp.ne.s32 %s, %s, 0", failed, filterError);
          reportError(filterError, row, failed);
          b.op("@%s bra %s", failed, done);
        }
        String dropped = b.pred();
        b.op("not.pred %s, %s", dropped, keep);
        b.op("@%s bra %s", dropped, done);
      }
      BitSet restAfter = (BitSet) rest.clone();
      restAfter.andNot(loads);
      body.emitAll(restAfter, values, it);
      String outputError = null;
      for (int o : outputs) {
        if (values[o].error() != null) {
          outputError = outputError == null ? values[o].error()
              : body.firstNonZero(outputError, values[o].error());
        }
      }
      if (outputError != null) {
        String failed = b.pred();
        b.op("setp.ne.s32 %s, %s, 0", failed, outputError);
        reportError(outputError, row, failed);
        b.op("@%s bra %s", failed, done);
      }
    }

    /** atomicMin(first_error, (row << 8) | code), where {@code when} holds. */
    private void reportError(String code, String row, String when) {
      String packed = b.b64();
      b.op("shl.b64 %s, %s, %d", packed, row, ERROR_ROW_SHIFT);
      String code64 = b.b64();
      b.op("cvt.u64.u32 %s, %s", code64, code);
      b.op("or.b64 %s, %s, %s", packed, packed, code64);
      String firstError = body.global(body.loadParam("u64", "first_error"));
      String old = b.b64();
      b.op("@%s atom.global.min.u64 %s, [%s], %s", when, old, firstError, packed);
    }

    private String localName() {
      return entry + "_local";
    }

    /** The generic address of the per-block table (dynamic shared memory). */
    private String localTable() {
      String r = b.b64();
      b.op("mov.u64 %s, %s", r, localName());
      b.op("cvta.shared.u64 %s, %s", r, r);
      return r;
    }

    private void localTableCall(String function) {
      PreludeCall.callVoid(b, function, List.of(
          PreludeCall.b64(body.loadParam("u64", "plan")), PreludeCall.b64(localTable())));
    }

    private String text() {
      String params = body.parameters(PARAMETERS, PlanWords.parameter(body, spec));
      // A kernel whose launch picks its block's size declares no .maxntid, and asks for the
      // registers of a block of 1,024 threads, which GeneratedModule lifts where they spill;
      // the launch takes as many threads as its registers allow.
      String maxThreads = anyBlockSize ? "" : ".maxntid " + BLOCK_THREADS + ", 1, 1\n";
      int registers = anyBlockSize ? WHOLE_BLOCK_REGISTERS : GeneratedModule.MAX_REGISTERS;
      return ".extern .shared .align 8 .b8 " + localName() + "[];\n"
          + ".visible .entry " + entry + "(\n" + params + "\n)\n" + maxThreads + ".maxnreg "
          + registers + "\n{\n" + b.finish() + "}\n";
    }
  }
}
