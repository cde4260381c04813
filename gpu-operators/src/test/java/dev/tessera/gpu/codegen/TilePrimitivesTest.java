package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
   * A GPU-DFOR tile's decode: each of the 4 items behind a branch of its own (the form that has run
   * on GPUs), or, with {@link TilePrimitives#DFOR_TILE_BRANCH_FREE}'s form, one branch, the
   * block's (a tile without rows reads nothing), so that the items' loads wait together.
   */
  @Test
  void aGpuDforTilesItemsLoadBehindBranchesOfTheirOwnOrNone() {
    assertEquals(4, branches(false));
    assertEquals(1, branches(true));
  }

  private static int branches(boolean branchFree) {
    PtxBuilder b = new PtxBuilder();
    new TilePrimitives(b, "%r1", 128, 4, branchFree).dforTile("%rd1", "%rd2", "%rd3", "%r2", 1);
    Matcher branch = Pattern.compile("\\bbra(\\.uni)?\\s").matcher(b.finish());
    int count = 0;
    while (branch.find()) {
      count++;
    }
    return count;
  }
}
