package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
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
}
