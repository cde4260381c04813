package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codegen.KernelFeatures.SharedMemory;

/**
 * How many entries a hash aggregation's per-block pre-aggregation table has (hash_aggregate.cuh's
 * {@code LocalTable}, 4 + 20 F bytes an entry for F functions, or, in a generated kernel that
 * fills a multiprocessor, the compact layout's ({@link LocalTableLayout}), and, where a generated
 * kernel finds its entries by key, their keys: {@link LocalKeyTable#bytes}), and how much shared
 * memory it takes. One definition for the launch (CudaHashAggregate) and the generator, which
 * writes the entries of a kernel that {@link AggregateUpdateGenerator#fillsMultiprocessor fills a
 * multiprocessor} into its code as a constant (AggregateUpdateGenerator.constantEntries).
 */
public final class LocalTableSize {
  /** The table of a block of 128 threads (16 KiB keeps about 8 blocks a multiprocessor). */
  private static final int TABLE_BYTES = 16 << 10;
  /**
   * The same, for a generated kernel that finds entries by key (their keys included), where a row
   * the table holds skips the global table: 256 entries of HashAggregateBench's four functions
   * and key. Its 9 blocks a multiprocessor are what the kernel's registers (56 a thread) allow;
   * 40 KiB (5 blocks) made 10^5 groups 19% slower and 100 groups no faster (H100).
   */
  private static final int KEYED_TABLE_BYTES = 24 << 10;
  /**
   * For such a kernel, the most of a multiprocessor's shared memory its blocks may take (the
   * rest is L1). HashAggregateBench on an H100, 24 KiB blocks: 100% (the driver's choice, 9
   * blocks, 28 KiB of L1) made 10^6 groups 7.5 -> 10.6 ms; 79% (7 blocks, 60 KiB) against 70%
   * (6 blocks, 92 KiB): 1 to 100 groups 7-10% faster, 10^5 to 10^7 groups 1-4% slower.
   */
  public static final int KEYED_SHARED_PERCENT = 79;
  private static final int MAX_ENTRIES = 256;
  /**
   * For a kernel that runs one block a multiprocessor ({@link
   * AggregateUpdateGenerator#fillsMultiprocessor}), the carveout its table takes: 85% of an
   * H100's or H200's 228 KiB (193.8 KiB) holds a table of 192 KiB and the system's 1 KiB, and
   * rounds up to the 196 KiB carveout, 60 KiB of L1 as the 128-thread blocks had (86% would
   * round up to all 228 KiB, 28 KiB of L1: see {@link #KEYED_SHARED_PERCENT}). And the
   * most entries such a table has: 2,048 entries of HashAggregateBench's four functions took
   * 1,000 groups from 3.45 to 1.39 ms, 10^4 groups from 3.26 to 2.71 ms (1,024: 1.51 and 3.02;
   * H200, ncu).
   */
  public static final int WHOLE_SHARED_PERCENT = 85;
  static final int MAX_WHOLE_ENTRIES = 2048;
  /**
   * The most entries of a sliced table: what the budget holds decides
   * (HashAggregateBench's four functions and one key: about 2,300 on an H100).
   */
  static final int MAX_SLICED_ENTRIES = 4096;

  private LocalTableSize() {}

  /**
   * Entries of the table of {@code spec}'s kernel of blocks of 128 threads (LocalTable's
   * layout): the largest power of two whose entries fit {@link #TABLE_BYTES}, or, where each
   * entry also holds its keys ({@code keyBytes} of them, {@link
   * AggregateUpdateGenerator#localKeyBytes}), {@link #KEYED_TABLE_BYTES}; at most {@link
   * #MAX_ENTRIES}; 1 for a global aggregate (one group); 0 without functions.
   */
  public static int entries(AggregateSpec spec, int keyBytes) {
    int budget = keyBytes > 0 ? KEYED_TABLE_BYTES : TABLE_BYTES;
    return entriesWithin(LocalTableLayout.of(spec, false), budget, keyBytes,
        spec.keyCount() == 0 ? 1 : MAX_ENTRIES);
  }

  /**
   * Entries of the table of {@code spec}'s kernel that runs one block a multiprocessor of a device
   * with {@code shared}: as many as fit {@link #wholeMultiprocessorBudget} with their keys, at most
   * {@link #MAX_WHOLE_ENTRIES} (a lean layout's: {@link #MAX_SLICED_ENTRIES}); {@code coded}:
   * whether its keys are found by their codes ({@link CodeGroups}). A table found by group (no
   * keys) takes a power of two of them (LocalTable.Find masks its slots); one found by key ({@link
   * LocalKeyTable#find}) takes any count: HashAggregateBench's four functions and two keys took 104
   * bytes an entry in LocalTable's layout, 1,898 of them where a power of two was 1,024, which
   * 1,000 groups all but filled (one group in eight found no slot): "two columns" at 1,000 groups
   * 919 -> 659 us, at 10^4 -9% (H200, ncu). In the kernel's {@code layout}, compact as such
   * kernels' tables are ({@link LocalTableLayout#of(dev.tessera.gpu.expr.Program, AggregateSpec,
   * java.util.List, boolean)}).
   */
  public static int wholeMultiprocessorEntries(AggregateSpec spec, LocalTableLayout layout,
      boolean coded, SharedMemory shared) {
    // A lean table takes what the budget holds, as a sliced one does: GroupSlices leaves up to
    // TABLE_FILL of a sliced table's groups unsliced (about 2,440 of HashAggregateBench's in a
    // lean table of an H100), which 2,048 entries would not hold.
    return wholeMultiprocessorEntries(layout, LocalKeyTable.bytes(spec, 1, true, coded),
        wholeMultiprocessorBudget(shared), layout.lean() ? MAX_SLICED_ENTRIES : MAX_WHOLE_ENTRIES);
  }

  /**
   * The entries of the table of {@code spec}'s kernel that slices its groups ({@link
   * AggregateUpdateGenerator#slicedTableEntries}), beside its warps' queues' {@code besideTable}
   * bytes: as {@link #wholeMultiprocessorEntries(AggregateSpec, LocalTableLayout, boolean,
   * SharedMemory)}, but as many as fit, to hold the most groups (at most {@link
   * #MAX_SLICED_ENTRIES}).
   */
  public static int slicedEntries(AggregateSpec spec, LocalTableLayout layout,
      SharedMemory shared, int besideTable) {
    return wholeMultiprocessorEntries(layout, LocalKeyTable.bytes(spec, 1, true, false),
        Math.max(0, wholeMultiprocessorBudget(shared) - besideTable), MAX_SLICED_ENTRIES);
  }

  /**
   * The entries of a table of {@code layout} and {@code keyBytes} of keys an entry that fit
   * {@code budget}, at most {@code most}: a power of two where the table is found by group (no
   * keys), else as many as fit with the keys after the table's bytes ({@link
   * LocalTableLayout#tableBytes}, rounded up to 8).
   */
  static int wholeMultiprocessorEntries(LocalTableLayout layout, int keyBytes, int budget,
      int most) {
    if (keyBytes == 0 || layout.functions().isEmpty()) {
      // A table found by group: a power of two (LocalTable.Find masks its slots).
      int bytes = layout.entryBytes() + keyBytes;
      return layout.functions().isEmpty() || bytes > budget ? 0
          : Math.min(Integer.highestOneBit(budget / bytes), most);
    }
    int entries = Math.min(budget / (layout.entryBytes() + keyBytes), most);
    return layout.tableBytes(entries) + keyBytes * entries <= budget ? entries : entries - 1;
  }

  /**
   * The shared-memory bytes a block that fills a multiprocessor gives its table: {@link
   * #WHOLE_SHARED_PERCENT} of the multiprocessor's, less what the system keeps for the block, and
   * no more than one block may ask for.
   */
  public static int wholeMultiprocessorBudget(SharedMemory shared) {
    return Math.min(shared.perBlockOptIn(),
        (int) ((long) shared.perMultiprocessor() * WHOLE_SHARED_PERCENT / 100)
            - shared.reservedPerBlock());
  }

  /**
   * The largest power of two of entries of {@code layout}, at most {@code most}, whose bytes fit
   * {@code budget}; 0 where one entry does not (rows then go straight to the global
   * accumulators) or there are no functions.
   */
  private static int entriesWithin(LocalTableLayout layout, int budget, int keyBytes,
      int most) {
    if (layout.functions().isEmpty()) {
      return 0;
    }
    int bytes = layout.entryBytes() + keyBytes;
    if (bytes > budget) {
      return 0;
    }
    return Math.min(Integer.highestOneBit(budget / bytes), most);
  }
}
