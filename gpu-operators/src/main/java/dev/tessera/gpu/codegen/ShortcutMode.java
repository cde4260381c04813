package dev.tessera.gpu.codegen;

/**
 * Whether a warp's next item tries the shortcuts for keys that repeat (a lane's last group
 * recalled, the test for a warp of one group, the lanes' runs: {@link GroupLookup#recall},
 * {@link RunAccumulators}) or looks every row up with none of them, in a second copy of the
 * item's lookup and row path. Where keys come in random order the shortcuts fail at nearly every
 * item and cost about 20 of its instructions: without them HashAggregateBench at 10 to 1,000
 * groups was 10-14% faster, one group 2.6× slower (H200, ncu, branch {@code exp-shortcuts2}). So
 * a warp whose items found no shortcut {@value #MISSES} times in a row takes the next {@value
 * #PLAIN_ITEMS} items plainly, then tries again; with one group, or keys clustered in the data,
 * every item finds one and the warp never leaves them. Measured (H200, ncu): long keys 10 / 100 /
 * 1,000 groups 334 / 340 / 341 → 292 / 308 / 313 µs, with a filter 316 / 317 / 340 → 279 / 284 /
 * 309 µs; one group 179 → 187 µs, 10^5 groups +1%.
 *
 * <p>One .s32 register, the same in every lane of the warp (it changes only on warp-uniform
 * outcomes): above 0, the plain items left; 0 or below, the shortcut items in a row that found
 * none, negated. A plain item leaves the runs and the recalled group as they are: a run is a
 * partial accumulation merged later, and a group's index does not change during the launch.
 */
final class ShortcutMode {
  /** Items in a row without a shortcut after which the warp stops trying them. */
  static final int MISSES = 4;
  /** Items a warp then takes plainly before it tries the shortcuts again. */
  static final int PLAIN_ITEMS = 60;

  private final PtxBuilder b;
  private final String budget;

  /** At the kernel's start, before the tile loop: the register, shortcuts first. */
  ShortcutMode(PtxBuilder b) {
    this.b = b;
    this.budget = b.b32();
    b.op("mov.u32 %s, 0", budget);
  }

  /** At an item's start (every lane of the warp): to {@code plain} where it takes no shortcut. */
  void branchToPlain(String plain) {
    String plainMode = b.pred();
    b.op("setp.gt.s32 %s, %s, 0", plainMode, budget);
    b.op("@%s bra.uni %s", plainMode, plain);
  }

  /** In a plain item: one fewer left. */
  void plainItem() {
    b.op("sub.s32 %s, %s, 1", budget, budget);
  }

  /** After an item that a shortcut served whole (its rows all into their runs). */
  void found() {
    b.op("mov.s32 %s, 0", budget);
  }

  /**
   * After an item that tried the shortcuts: {@code found} (.pred, the same in every lane) says
   * whether one served it; a miss counts, and the {@value #MISSES}th in a row turns the warp to
   * plain items.
   */
  void shortcutItem(String found) {
    b.op("@%s mov.s32 %s, 0", found, budget);
    b.op("@!%s sub.s32 %s, %s, 1", found, budget, budget);
    String stop = b.pred();
    b.op("setp.le.s32 %s, %s, %d", stop, budget, -MISSES);
    b.op("@%s mov.s32 %s, %d", stop, budget, PLAIN_ITEMS);
  }
}
