package dev.tessera.gpu.codegen;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The packed words of the next pair of items, loaded while the current pair runs (part of
 * AggregateUpdateGenerator's loop of paired items, where the tile's GPU-FOR headers are in the
 * warp's shared memory: {@link TileForHeaders}). There an item's first part is its key's words,
 * then the probe those words decide (SSB's Q2.1: the part's direct map), two loads one after the
 * other, eleven turns a warp; with the next pair's words in flight during this pair's probe, the
 * tile's second pair waits for its probe alone. Within the tile only: the next tile's headers are
 * not read yet when its first pair would be loaded, so that pair loads its own words.
 *
 * <p>For columns of one reference word (32-lane values), each item's two words ({@link
 * ColumnLoads#loadForWords}) in registers that live from one pair to the next.
 */
final class TileWordsAhead {
  private final PtxBuilder b;
  private final TileForHeaders headers;
  /**
   * Per item of the pair, per column, the registers its words are in: loaded by the pair before,
   * or by the pair itself; after the pair's loads have read them, the next pair's.
   */
  private final List<Map<Integer, ColumnLoads.ForWords>> words = new ArrayList<>();
  /** Whether the pair before loaded this pair's words (.pred, the same in every lane). */
  private final String loaded;

  /** {@code columns}: those of {@link #columns}, not empty; {@code items} of a turn. */
  TileWordsAhead(PtxBuilder b, TileForHeaders headers, SortedSet<Integer> columns, int items) {
    this.b = b;
    this.headers = headers;
    for (int k = 0; k < items; k++) {
      Map<Integer, ColumnLoads.ForWords> item = new LinkedHashMap<>();
      for (int c : columns) {
        item.put(c, new ColumnLoads.ForWords(b.b32(), b.b32()));
      }
      words.add(item);
    }
    loaded = b.pred();
  }

  /**
   * The columns of {@code loaded} (those the items' code loads) whose words are loaded ahead:
   * GPU-FOR columns of the tile's headers of one reference word.
   */
  static SortedSet<Integer> columns(TileForHeaders headers, SortedSet<Integer> loaded,
      List<InputSpec> inputs) {
    SortedSet<Integer> ahead = new TreeSet<>();
    for (int c : loaded) {
      if (headers.covers(c) && inputs.get(c).referenceWords() == 1) {
        ahead.add(c);
      }
    }
    return ahead;
  }

  /** At the kernel's start: every register written (none is read unwritten). */
  void begin() {
    for (Map<Integer, ColumnLoads.ForWords> item : words) {
      for (ColumnLoads.ForWords w : item.values()) {
        b.op("mov.b32 %s, 0", w.first());
        b.op("mov.b32 %s, 0", w.second());
      }
    }
    atTileStart();
  }

  /** At a tile's start, after its headers: its first pair loads its own words. */
  void atTileStart() {
    b.op("setp.ne.u32 %s, 0, 0", loaded);
  }

  /**
   * The words of the pair whose items' rows are {@code rows} (.b64, in the tile, or clamped to
   * the batch's last row), loaded here where the pair before did not: per item, what its loads
   * take ({@link ProgramEmitter#takeWordsAhead}).
   */
  List<Map<Integer, ColumnLoads.ForWords>> loadPair(String[] rows) {
    b.comment("the pair's GPU-FOR words, where the pair before did not load them (TileWordsAhead)");
    String notLoaded = b.pred();
    b.op("not.pred %s, %s", notLoaded, loaded);
    load(rows, notLoaded);
    return words;
  }

  /**
   * After the pair's loads have read their words: the next pair's, whose rows are {@code
   * nextRows}, where {@code nextInTile} (.pred) holds (else those rows must lie in the tile
   * too: the headers are read for them either way).
   */
  void loadNextPair(String[] nextRows, String nextInTile) {
    b.comment("the next pair's GPU-FOR words, ahead (TileWordsAhead)");
    load(nextRows, nextInTile);
    b.op("mov.pred %s, %s", loaded, nextInTile);
  }

  private void load(String[] rows, String when) {
    for (int k = 0; k < rows.length; k++) {
      for (Map.Entry<Integer, ColumnLoads.ForWords> column : words.get(k).entrySet()) {
        ColumnLoads.loadForWords(b, headers.miniblock(column.getKey(), rows[k]), when,
            column.getValue());
      }
    }
  }
}
