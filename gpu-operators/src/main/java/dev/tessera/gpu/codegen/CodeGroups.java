package dev.tessera.gpu.codegen;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.DeviceColumn;
import java.util.List;

/**
 * A launch's map from a dictionary string key's code to its group: one .s32 a code, -1 until a
 * row of that code has found its group in the global table. Where a GROUP BY's one key is a
 * dictionary column's string as loaded (a cached table's, {@link GroupLookup}'s code form), a row
 * that misses the block's table reads its code's group here, and only where it is -1 hashes its
 * string, walks the global table's slots and compares the key heap's bytes; it then stores the
 * group it found. Every row of the same code finds the same group, so a stale -1 (a store not yet
 * seen) costs a lookup, never a wrong group. The codes are the launch's one batch's: the launch
 * clears the map before the kernel runs, and it serves that launch alone.
 */
public final class CodeGroups {
  /** The generated aggregate kernel's parameter with the map's address (0 where none). */
  static final String PARAMETER = "code_groups";
  /** Bytes of one code's entry. */
  public static final int ENTRY_BYTES = Integer.BYTES;

  private CodeGroups() {}

  /**
   * Whether the launch of a generated kernel of {@code spec} over {@code inputs} that fills a
   * multiprocessor ({@code fills}) gives it a map: its block's table is then found by key for its
   * one string key ({@link LocalKeyTable#holdsShortStrings}), and a dictionary string input may
   * be that key (the kernel reads the map only if it is).
   */
  public static boolean given(AggregateSpec spec, List<InputSpec> inputs, boolean fills) {
    return fills && LocalKeyTable.holdsShortStrings(spec)
        && inputs.stream().anyMatch(InputSpec::dictionary);
  }

  /**
   * The entries a map over {@code columns} needs: at least every code of each dictionary string
   * column (its offsets hold one word more than its dictionary's entries).
   */
  public static long entries(List<DeviceColumn> columns) {
    long entries = 0;
    for (DeviceColumn column : columns) {
      if (column.type().isString() && column.encoding() != Encoding.PLAIN) {
        entries = Math.max(entries, column.offsets().size() / Integer.BYTES);
      }
    }
    return entries;
  }
}
