package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shape of the inline string compare (what it computes, the CUDA contract tests check on a
 * GPU: FilterProjectContractTest.stringsCompareByUnsignedBytesThenLength).
 */
class Utf8CompareEmitterTest {

  /** Four items' compares, as a lockstep phase emits them. */
  private static List<String> fourPairs() {
    PtxBuilder b = new PtxBuilder();
    Val[] xs = new Val[4];
    Val[] ys = new Val[4];
    for (int k = 0; k < 4; k++) {
      xs[k] = new Val("%rd" + (10 + k), null, null, "%r" + (10 + k));
      ys[k] = new Val("%rd" + (20 + k), null, null, "%r" + (20 + k));
    }
    Utf8CompareEmitter.orders(b, xs, ys);
    return b.finish().lines().map(String::strip).toList();
  }

  @Test
  void everyPairsFirstBytesAreReadBeforeAnyPairsRest() {
    List<String> ptx = fourPairs();
    int lastByteLoad = -1;
    int firstCall = Integer.MAX_VALUE;
    int byteLoads = 0;
    int calls = 0;
    for (int i = 0; i < ptx.size(); i++) {
      if (ptx.get(i).contains("ld.u8")) {
        lastByteLoad = i;
        byteLoads++;
      }
      if (ptx.get(i).startsWith("call")) {
        firstCall = Math.min(firstCall, i);
        calls++;
      }
    }
    assertEquals(4 * 2 * Utf8CompareEmitter.STEP_BYTES, byteLoads);
    assertEquals(4, calls);
    assertTrue(lastByteLoad < firstCall, "a pair's rest comes before another pair's bytes");
  }

  @Test
  void anEmptyStringReadsNothingAndTheRestIsCalledByTheLanesThatNeedIt() {
    for (String line : fourPairs()) {
      if (line.contains("ld.u8")) {
        assertTrue(line.startsWith("@"), "an unpredicated byte load: " + line);
      }
      // Behind a branch some lanes take, a call may not claim that every lane makes it.
      assertFalse(line.startsWith("call.uni"), line);
    }
  }
}
