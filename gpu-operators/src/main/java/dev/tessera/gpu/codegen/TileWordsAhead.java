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
 * ColumnLoads#loadForWords}) in registers that live from one pair to the next; or, {@code
 * viaShared}, copied by {@code cp.async} (sm_80 and newer) into the thread's slots of a shared
 * array, which hold them through the pair's probes and pops without registers, and read into
 * registers by the pair that takes them.
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
  /** The shared array the next pair's words are copied into, or null (held in registers). */
  private final String shared;
  private final int blockThreads;
  /** The thread (.b32), whose slots of {@link #shared} are its own. */
  private final String thread;

  /**
   * {@code columns}: those of {@link #columns}, not empty; {@code items} of a turn; {@code
   * shared}, where not null, the name of the shared array the next pair's words go through
   * (sm_80's {@code cp.async}), sized for {@code blockThreads} threads; {@code thread} (.b32).
   */
  TileWordsAhead(PtxBuilder b, TileForHeaders headers, SortedSet<Integer> columns, int items,
      String shared, int blockThreads, String thread) {
    this.b = b;
    this.headers = headers;
    this.shared = shared;
    this.blockThreads = blockThreads;
    this.thread = thread;
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

  /** Whether the next pair's words go through shared memory (cp.async), not registers. */
  boolean viaShared() {
    return shared != null;
  }

  /** At the kernel's start: every register written (none is read unwritten). */
  void begin() {
    if (shared != null) {
      // Two sets: a pair reads one while it copies the next pair's words into the other.
      int slots = 2 * words.size() * words.get(0).size() * 2 * blockThreads;
      b.declare(".shared .align 4 .b32 " + shared + "[" + slots + "]");
    }
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
  List<Map<Integer, ColumnLoads.ForWords>> loadPair(String[] rows, String pair) {
    b.comment("the pair's GPU-FOR words, where the pair before did not load them (TileWordsAhead)");
    String notLoaded = b.pred();
    b.op("not.pred %s, %s", notLoaded, loaded);
    load(rows, notLoaded);
    if (shared != null) {
      // The thread's own copies of the pair before's loads (none where it made none).
      b.op("cp.async.wait_all");
      String base = threadSlots(pair, false);
      int slot = 0;
      for (Map<Integer, ColumnLoads.ForWords> item : words) {
        for (ColumnLoads.ForWords w : item.values()) {
          b.op("@%s ld.shared.u32 %s, [%s+%d]", loaded, w.first(), base, slotOffset(slot++));
          b.op("@%s ld.shared.u32 %s, [%s+%d]", loaded, w.second(), base, slotOffset(slot++));
        }
      }
    }
    return words;
  }

  /**
   * After the pair's loads have read their words: the next pair's, whose rows are {@code
   * nextRows}, where {@code nextInTile} (.pred) holds (else those rows must lie in the tile
   * too: the headers are read for them either way).
   */
  void loadNextPair(String[] nextRows, String nextInTile, String pair) {
    b.comment("the next pair's GPU-FOR words, ahead (TileWordsAhead)");
    if (shared == null) {
      load(nextRows, nextInTile);
    } else {
      String base = threadSlots(pair, true);
      int slot = 0;
      for (int k = 0; k < nextRows.length; k++) {
        for (int c : words.get(k).keySet()) {
          String from = ColumnLoads.forWordsAddress(b, headers.miniblock(c, nextRows[k]));
          b.op("@%s cp.async.ca.shared.global [%s+%d], [%s], 4", nextInTile, base,
              slotOffset(slot++), from);
          b.op("@%s cp.async.ca.shared.global [%s+%d], [%s+4], 4", nextInTile, base,
              slotOffset(slot++), from);
        }
      }
      b.op("cp.async.commit_group");
    }
    b.op("mov.pred %s, %s", loaded, nextInTile);
  }

  /**
   * The shared address (.b32) of the thread's first slot of the set pair {@code pair} (.b32, the
   * pair's index in its tile) reads, or with {@code next} the one it copies the next pair's words
   * into: slot i is {@link #slotOffset} on.
   */
  private String threadSlots(String pair, boolean next) {
    String set = b.b32();
    b.op(next ? "not.b32 %s, %s" : "mov.b32 %s, %s", set, pair);
    b.op("and.b32 %s, %s, 1", set, set);
    String base = b.b32();
    b.op("mov.u32 %s, %s", base, shared);
    b.op("mad.lo.u32 %s, %s, %d, %s", base, set, slotOffset(setSlots()), base);
    b.op("mad.lo.u32 %s, %s, 4, %s", base, thread, base);
    return base;
  }

  /** The slots of a set: two words an item and column. */
  private int setSlots() {
    return words.size() * words.get(0).size() * 2;
  }

  /** Slot i's bytes past the thread's first: the block's threads' slots i side by side. */
  private int slotOffset(int slot) {
    return slot * blockThreads * 4;
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
