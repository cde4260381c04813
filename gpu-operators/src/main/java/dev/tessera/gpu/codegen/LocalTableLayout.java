package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
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
 */
public record LocalTableLayout(List<AggregateFunction> functions, boolean compact) {
  public LocalTableLayout {
    functions = List.copyOf(functions);
  }

  /**
   * The layout of the table of a kernel of {@code spec}: compact where the kernel {@code fills} a
   * multiprocessor.
   */
  public static LocalTableLayout of(AggregateSpec spec, boolean fills) {
    return new LocalTableLayout(spec.functions(), fills);
  }

  /** Whether function f has a high word in the table (the compact layout: sums only). */
  public boolean hasHigh(int f) {
    return !compact || isSum(functions.get(f).kind());
  }

  /** Whether function f has a seen flag in the table (the compact layout: all but counts). */
  public boolean hasSeen(int f) {
    return !compact || !isCount(functions.get(f).kind());
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
    return compact ? "tessera_agg_compact_reset" : "tessera_agg_local_reset";
  }

  /** The prelude function that merges the table into the global accumulators. */
  String mergeFunction() {
    return compact ? "tessera_agg_compact_merge" : "tessera_agg_local_merge";
  }

  private static boolean isSum(Kind kind) {
    return kind == Kind.SUM || kind == Kind.SUM_DECIMAL;
  }

  private static boolean isCount(Kind kind) {
    return kind == Kind.COUNT_ROWS || kind == Kind.COUNT;
  }
}
