package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import java.util.BitSet;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * SSB Q2.1's shape ({@link TileForHeadersTest#partThenSupplierProgram}) over GPU-FOR columns,
 * with the paired items' next pair's words loaded ahead ({@link TileWordsAhead}, {@code
 * AggregateUpdateGenerator.WORDS_AHEAD}): each pair's first part decodes the part's key from
 * words in registers, loaded by the pair before or, for a tile's first pair, just before; the
 * next pair's words are asked for after the pair's decodes and before its probes. No GPU: the
 * CUDA encoded-input suite checks the values with the switch on.
 */
class TileWordsAheadTest {
  private static final String PAIR_WORDS = "// the pair's GPU-FOR words";
  private static final String NEXT_WORDS = "// the next pair's GPU-FOR words, ahead";
  /** A packed word of a 32-lane column's value: its block's words start 8 bytes in. */
  private static final String WORD = "ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+\\+(8|12)\\];";
  /** A packed word loaded ahead: at the address of the value's first word, or 4 bytes on. */
  private static final String PREDICATED_WORD =
      "@%p\\d+ ld\\.global\\.nc\\.u32 %r\\d+, \\[%rd\\d+(\\+4)?\\];";

  private static GeneratedKernel kernel(Encoding encoding, boolean wordsAhead)
      throws CodegenUnsupportedException {
    InputSpec column = new InputSpec(ColumnType.INT, encoding, false);
    return AggregateUpdateGenerator.generate(TileForHeadersTest.partThenSupplierProgram(),
        List.of(column, column, column), TileForHeadersTest.partThenSupplierSpec(),
        KernelFeatures.forArch("sm_90"), new BitSet(), wordsAhead);
  }

  @Test
  void theNextPairsWordsAreAskedForBeforeThePairsProbes() throws Exception {
    String ptx = kernel(Encoding.FOR, true).ptx();
    assertEquals(1, hits(ptx, Pattern.quote(PAIR_WORDS)));
    assertEquals(1, hits(ptx, Pattern.quote(NEXT_WORDS)));
    int pair = ptx.indexOf(PAIR_WORDS);
    int first = ptx.indexOf(AggregateUpdateGenerator.PAIRED_ITEM + 0);
    int next = ptx.indexOf(NEXT_WORDS);
    int probe = ptx.indexOf("// probe of join table 0");
    assertTrue(pair < first && first < next && next < probe,
        "the pair's words, its decodes, the next pair's words, then its probes");
    // Two words a row of the part's key, for each of the pair's two rows: predicated on the
    // pair before not having loaded them, and on the next pair lying in the tile.
    assertEquals(4, hits(ptx.substring(pair, first), PREDICATED_WORD));
    assertEquals(4, hits(ptx.substring(next, probe), PREDICATED_WORD));
    // The decodes read those registers: no word of theirs is loaded between them.
    assertEquals(0, hits(ptx.substring(first, next), WORD));
  }

  @Test
  void theKernelWithoutItLoadsEachItemsWordsInItsDecode() throws Exception {
    GeneratedKernel without = kernel(Encoding.FOR, false);
    GeneratedKernel with = kernel(Encoding.FOR, true);
    assertFalse(without.ptx().contains(PAIR_WORDS));
    assertFalse(without.key().contains("words-ahead"));
    assertTrue(with.key().contains("words-ahead;"));
    assertNotEquals(without.entry(), with.entry());
    String ptx = without.ptx();
    int first = ptx.indexOf(AggregateUpdateGenerator.PAIRED_ITEM + 0);
    int probe = ptx.indexOf("// probe of join table 0");
    assertEquals(2, hits(ptx.substring(first, probe), WORD), "item 0's two words");
  }

  @Test
  void plainColumnsHaveNoWordsToLoadAhead() throws Exception {
    assertFalse(kernel(Encoding.PLAIN, true).ptx().contains(PAIR_WORDS));
  }

  @Test
  @RequiresPtxCompiler
  void theKernelCompilesClean() throws Exception {
    TestPtx.assertCompilesClean(kernel(Encoding.FOR, true), "sm_90");
  }
}
