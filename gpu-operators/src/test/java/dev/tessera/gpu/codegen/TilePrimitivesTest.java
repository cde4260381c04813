package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The tile shapes the block-wide steps take. */
class TilePrimitivesTest {

  @Test
  void theBlockScanTakesAsManySegmentsAsOneWarpHasLanes() {
    // blockExclusiveSum's second level is one warp scanning every (item, warp) segment total.
    assertDoesNotThrow(() -> new TilePrimitives(new PtxBuilder(), "%r1", 128, 8));
    assertDoesNotThrow(() -> new TilePrimitives(new PtxBuilder(), "%r1", 256, 4));
    assertThrows(IllegalArgumentException.class,
        () -> new TilePrimitives(new PtxBuilder(), "%r1", 128, 16));
    assertThrows(IllegalArgumentException.class,
        () -> new TilePrimitives(new PtxBuilder(), "%r1", 256, 8));
  }

  /**
   * A GPU-DFOR tile's decode takes one branch, the block's (a tile without rows reads nothing), and
   * none an item's own, so that the items' loads wait together (each behind a branch of its own,
   * they waited one after the other).
   */
  @Test
  void aGpuDforTilesItemsLoadBehindNoBranchesOfTheirOwn() {
    PtxBuilder b = new PtxBuilder();
    new TilePrimitives(b, "%r1", 128, 4).dforTile("%rd1", "%rd2", "%rd3", "%r2", 1);
    assertEquals(1, TestPtx.hits(b.finish(), "\\bbra(\\.uni)?\\s"));
  }
}
