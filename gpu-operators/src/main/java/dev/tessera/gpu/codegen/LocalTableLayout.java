package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.expr.Program;
import java.util.BitSet;
import java.util.List;

/**
 * Where a per-block aggregation table's sections lie in shared memory, per entry of E entries:
 * each function's value ({@code values[F][E]}, 8 bytes), its high word ({@code highs[H][E]}), the
 * entries' group words ({@code keys[E]}, 4 bytes) and each function's seen flag ({@code
 * seen[S][E]}, 4 bytes), in that order; a table found by key has its keys after these
 * ({@link LocalKeyTable}).
 *
 * <p>Two layouts. hash_aggregate.cuh {@code LocalTable} (the interpreter's, and that of every
 * generated kernel of blocks of 128 threads, at most 256 entries) gives every function a high word
 * and a seen flag: H = S = F, 4 + 20 F bytes an entry. {@code CompactLocalTable} (the prelude's
 * {@code tessera_agg_compact_reset} and {@code _merge}), the table of every generated kernel that
 * runs one block a multiprocessor ({@link AggregateUpdateGenerator#fillsMultiprocessor}), gives
 * high words to sums only and seen flags to all but counts, which the merge reads neither of:
 * HashAggregateBench's count, sum, min and max take 56 bytes an entry instead of 84, so such a
 * block holds more groups (and a sliced aggregation needs fewer slices, GroupSlices): 10^4 groups
 * of HashAggregateBench 18% faster on an H100 (docs/gpu-timings.md, 2026-12-07, sixth session).
 * With {@link #LEAN_PROPERTY} set, such a kernel's table is lean where it can be ({@code
 * LeanLocalTable}): no high word for a sum that wraps, no seen flag for a function of a GROUP BY
 * whose input is a column that cannot be NULL; its reset and merge read which words each
 * function has from the plan ({@link #tableWords}).
 */
public record LocalTableLayout(List<AggregateFunction> functions, boolean compact,
    BitSet wrapping, BitSet neverNull) {
  /**
   * The switch for the lean compact layout (off by default): in a compact table, no high word for
   * a sum that wraps ({@link AccumulatorArithmetic#wraps}: nothing reads it) and no seen flag for
   * a function whose input is a column that cannot be NULL, in a GROUP BY (every entry a row
   * claimed has a value of it, so an entry's flag would be its claim). HashAggregateBench's count,
   * sum, min and max then take 36 bytes an entry instead of 56. Its kernels call the prelude's
   * {@code tessera_agg_lean_reset} and {@code _merge}, which read each function's words from the
   * plan ({@link #tableWords}). The CUDA aggregate suites pass with it on; off because its kernel
   * times are mixed: HashAggregateBench 4-10% faster where it takes slices away (7,000 and 10^4
   * groups), 8-9% slower at 1,000 groups (an unsliced table of 4,096 entries to reset and merge)
   * and 4,500 (two slices instead of three) on an H100 (docs/gpu-timings.md, 2026-12-08).
   */
  public static final String LEAN_PROPERTY = "tessera.codegen.leanTable";
  /** Bits of {@link #tableWords} (hash_aggregate.cuh kTableHigh, kTableSeen). */
  public static final int TABLE_HIGH = 1;
  public static final int TABLE_SEEN = 2;

  public LocalTableLayout {
    functions = List.copyOf(functions);
    wrapping = (BitSet) wrapping.clone();
    neverNull = (BitSet) neverNull.clone();
    if (!compact && !(wrapping.isEmpty() && neverNull.isEmpty())) {
      throw new IllegalArgumentException("only a compact table leaves words out");
    }
  }

  /** LocalTable's layout ({@code compact} false) or the compact one, not lean. */
  public LocalTableLayout(List<AggregateFunction> functions, boolean compact) {
    this(functions, compact, new BitSet(), new BitSet());
  }

  /**
   * The layout of the table of a kernel of {@code spec} that runs {@code program} over {@code
   * inputs}: compact where the kernel {@code fills} a multiprocessor, and lean where {@link
   * #LEAN_PROPERTY} is set too. The one definition for the generator, the kernel's key and the
   * launch's sizing.
   */
  public static LocalTableLayout of(Program program, AggregateSpec spec, List<InputSpec> inputs,
      boolean fills) {
    if (!fills || !Boolean.getBoolean(LEAN_PROPERTY)) {
      return new LocalTableLayout(spec.functions(), fills);
    }
    BitSet wrapping = new BitSet();
    BitSet neverNull = new BitSet();
    for (int f = 0; f < spec.functions().size(); f++) {
      AggregateFunction fn = spec.functions().get(f);
      wrapping.set(f, AccumulatorArithmetic.wraps(spec, f));
      // A global aggregate's one entry is there with no row: its flags say whether one came.
      neverNull.set(f, spec.keyCount() > 0 && !isCount(fn.kind())
          && ProgramEmitter.loadsColumnWithoutNulls(program,
              program.outputs().get(fn.input()).register(), inputs));
    }
    return new LocalTableLayout(spec.functions(), true, wrapping, neverNull);
  }

  /**
   * LocalTable's layout for a kernel of {@code spec} of blocks of 128 threads, or the compact one
   * (not lean) for one that {@code fills} a multiprocessor.
   */
  public static LocalTableLayout of(AggregateSpec spec, boolean fills) {
    return new LocalTableLayout(spec.functions(), fills);
  }

  @Override
  public BitSet wrapping() {
    return (BitSet) wrapping.clone();
  }

  @Override
  public BitSet neverNull() {
    return (BitSet) neverNull.clone();
  }

  /**
   * Whether the layout leaves out words the compact one has: its kernels reset and merge the
   * table with the prelude's lean functions, which read {@link #tableWords} from the plan.
   */
  public boolean lean() {
    return !wrapping.isEmpty() || !neverNull.isEmpty();
  }

  /** The kernel key's part for the layout's left-out words ("" where it is not lean). */
  String key() {
    return lean() ? "lean" + wrapping + neverNull + ";" : "";
  }

  /**
   * Function f's words in the table, as the lean functions read them from the plan (its
   * {@code table_words}): {@link #TABLE_HIGH} where it has a high word, {@link #TABLE_SEEN} where
   * it has a seen flag.
   */
  public long tableWords(int f) {
    return (hasHigh(f) ? TABLE_HIGH : 0) | (hasSeen(f) ? TABLE_SEEN : 0);
  }

  /**
   * Whether function f has a high word in the table (the compact layout: sums only; the lean one:
   * sums that do not wrap).
   */
  public boolean hasHigh(int f) {
    return !compact || isSum(functions.get(f).kind()) && !wrapping.get(f);
  }

  /**
   * Whether function f has a seen flag in the table (the compact layout: all but counts; the lean
   * one: not those whose input cannot be NULL either).
   */
  public boolean hasSeen(int f) {
    return !compact || !isCount(functions.get(f).kind()) && !neverNull.get(f);
  }

  /** Function f's row of {@code highs}: the functions before it that have one. */
  public int highRow(int f) {
    int row = 0;
    for (int g = 0; g < f; g++) {
      row += hasHigh(g) ? 1 : 0;
    }
    return row;
  }

  /** Function f's row of {@code seen}: the functions before it that have one. */
  public int seenRow(int f) {
    int row = 0;
    for (int g = 0; g < f; g++) {
      row += hasSeen(g) ? 1 : 0;
    }
    return row;
  }

  /** Bytes an entry of {@code highs} starts after the table's start: 8 F. */
  public long highsPerEntry() {
    return (long) Long.BYTES * functions.size();
  }

  /** Bytes an entry {@code keys} (the group words) starts after the table's start: 8 (F + H). */
  public long groupWordsPerEntry() {
    return highsPerEntry() + (long) Long.BYTES * highRow(functions.size());
  }

  /** Bytes an entry {@code seen} starts after the table's start: 8 (F + H) + 4. */
  public long seenPerEntry() {
    return groupWordsPerEntry() + Integer.BYTES;
  }

  /** Bytes of an entry (its keys, in a table found by key, not counted). */
  public int entryBytes() {
    return (int) seenPerEntry() + Integer.BYTES * seenRow(functions.size());
  }

  /** Bytes of a table of {@code entries}, rounded up to 8 (the keys of one found by key follow). */
  public int tableBytes(int entries) {
    long bytes = (long) entries * entryBytes();
    return (int) ((bytes + Long.BYTES - 1) / Long.BYTES * Long.BYTES);
  }

  /** The prelude function that resets the table (then the block synchronizes). */
  String resetFunction() {
    return "tessera_agg_" + tableName() + "_reset";
  }

  /** The prelude function that merges the table into the global accumulators. */
  String mergeFunction() {
    return "tessera_agg_" + tableName() + "_merge";
  }

  private String tableName() {
    return !compact ? "local" : lean() ? "lean" : "compact";
  }

  private static boolean isSum(Kind kind) {
    return kind == Kind.SUM || kind == Kind.SUM_DECIMAL;
  }

  private static boolean isCount(Kind kind) {
    return kind == Kind.COUNT_ROWS || kind == Kind.COUNT;
  }
}
