package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.bench.FilterProjectBench;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codegen.CodegenUnsupportedException;
import dev.tessera.gpu.codegen.FilterProjectGenerator;
import dev.tessera.gpu.codegen.InputSpec;
import dev.tessera.gpu.column.ColumnType;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * When a generated filter-project kernel reads its columns: which it asks L2 for after its block
 * scan (the plain columns only the outputs read, not the filter's, loaded already, and not
 * encoded ones, decoded from dependent reads), and that the outputs' loads of a group of items
 * come before any of them is used. Whether the kernel's results stay right is the CUDA suites'
 * job; this checks the PTX.
 */
class FilterProjectLoadOrderTest {
  /** A word of an input column's descriptor, read from the kernel's program words. */
  private static final Pattern COLUMN_FIELD =
      Pattern.compile("ld\\.param\\.u64 %rd\\d+, \\[\\w+_program_words\\+(\\d+)\\];");

  @Test
  void theOutputsOwnPlainColumnsAreAskedForAfterTheBlockScan() throws Exception {
    String ptx = ptx(List.of(plain(ColumnType.LONG), plain(ColumnType.INT),
        plain(ColumnType.DOUBLE)));
    String prefetching = prefetchSection(ptx);
    // x (column 0) and d (column 2), each one 8 KiB range of an 8-item tile: 64 lines, one round
    // of 128 threads; y (column 1) is the filter's.
    assertEquals(2, count(prefetching, "prefetch.global.L2"), prefetching);
    assertEquals(List.of(0, 2), columnsRead(prefetching));
    assertTrue(ptx.indexOf("prefetch.global.L2") > ptx.indexOf("positions: block scan"),
        "asked for before the block scan, where the tile's kept rows are not known");
  }

  @Test
  void encodedAndFilterColumnsAreNotAskedFor() throws Exception {
    String ptx = ptx(List.of(new InputSpec(ColumnType.LONG, Encoding.FOR, false),
        plain(ColumnType.INT), new InputSpec(ColumnType.DOUBLE, Encoding.FOR, false)));
    assertEquals(0, count(ptx, "prefetch"), "GPU-FOR columns are not one range of values");
  }

  @Test
  void everyPrefetchWaitsOnTheTilesKeptShare() throws Exception {
    String prefetching = prefetchSection(ptx(List.of(plain(ColumnType.LONG),
        plain(ColumnType.INT), plain(ColumnType.DOUBLE))));
    // The tile's kept count times 8 against its rows, and-ed into every prefetch's predicate.
    assertTrue(prefetching.contains("mul.lo.u32"), prefetching);
    assertEquals(2, count(prefetching, "and.pred"), prefetching);
  }

  @Test
  void theOutputsLoadsOfFiveItemsComeBeforeTheirUse() throws Exception {
    String ptx = ptx(List.of(plain(ColumnType.LONG), plain(ColumnType.INT),
        plain(ColumnType.DOUBLE)));
    // x, y and d hold 6 registers an item: 5 items' loads fit in 32.
    int firstUse = ptx.indexOf("// item 0: the outputs\n");
    int fifthUse = ptx.indexOf("// item 4: the outputs\n");
    assertTrue(firstUse > 0 && fifthUse > firstUse, "no outputs of items 0 and 4");
    for (int item = 0; item < 5; item++) {
      int loads = ptx.indexOf("// item " + item + ": the outputs' loads");
      assertTrue(loads > 0 && loads < firstUse, "item " + item + "'s loads after item 0's use");
    }
    int sixthLoads = ptx.indexOf("// item 5: the outputs' loads");
    assertTrue(sixthLoads > fifthUse, "item 5's loads come with the next group");
    String firstItemsLoads = ptx.substring(ptx.indexOf("// item 0: the outputs' loads"), firstUse);
    assertEquals(15, count(firstItemsLoads, "ld.global.nc"), firstItemsLoads);
  }

  private static InputSpec plain(ColumnType type) {
    return new InputSpec(type, Encoding.PLAIN, false);
  }

  /** FilterProjectBench's kernel over {@code inputs}. */
  private static String ptx(List<InputSpec> inputs) throws CodegenUnsupportedException {
    return FilterProjectGenerator.generate(FilterProjectBench.program(), inputs).ptx();
  }

  /** From the block scan's total to the last prefetch. */
  private static String prefetchSection(String ptx) {
    int from = ptx.indexOf("ld.shared.u32", ptx.indexOf("positions: block scan"));
    int last = ptx.lastIndexOf("prefetch.global.L2");
    return ptx.substring(from, last < from ? from : ptx.indexOf('\n', last));
  }

  /** The input columns whose descriptor fields {@code ptx} reads (descriptor offset / 48). */
  private static List<Integer> columnsRead(String ptx) {
    List<Integer> columns = new java.util.ArrayList<>();
    Matcher m = COLUMN_FIELD.matcher(ptx);
    while (m.find()) {
      columns.add(Integer.parseInt(m.group(1)) / 48);
    }
    return columns;
  }

  private static int count(String text, String what) {
    return text.split(Pattern.quote(what), -1).length - 1;
  }
}
