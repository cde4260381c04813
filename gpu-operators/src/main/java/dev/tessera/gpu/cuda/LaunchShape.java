package dev.tessera.gpu.cuda;

/**
 * A 1-D launch configuration.
 *
 * @param gridBlocks thread blocks in the grid
 * @param blockThreads threads per block
 * @param sharedMemoryBytes dynamic shared memory per block
 */
public record LaunchShape(int gridBlocks, int blockThreads, int sharedMemoryBytes) {
  /** The tile geometry of native-kernels/include/tessera/config.cuh. */
  public static final int BLOCK_THREADS = 128;
  public static final int ITEMS_PER_THREAD = 4;
  public static final int TILE_ITEMS = BLOCK_THREADS * ITEMS_PER_THREAD;

  /** One block per tile of {@link #TILE_ITEMS} items (at least one block). */
  public static LaunchShape tilesFor(long items) {
    return tilesFor(items, TILE_ITEMS);
  }

  /** One block of {@link #BLOCK_THREADS} per tile of {@code tileItems} items (at least one). */
  public static LaunchShape tilesFor(long items, int tileItems) {
    long tiles = Math.max(1, (items + tileItems - 1) / tileItems);
    if (tiles > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(items + " items is more than one launch can cover");
    }
    return new LaunchShape((int) tiles, BLOCK_THREADS, 0);
  }
}
