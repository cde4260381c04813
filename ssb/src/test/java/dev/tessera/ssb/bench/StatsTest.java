package dev.tessera.ssb.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class StatsTest {
  @Test
  void medianOfOddAndEvenCounts() {
    assertEquals(2.0, Stats.median(List.of(3.0, 1.0, 2.0)));
    assertEquals(2.5, Stats.median(List.of(4.0, 1.0, 2.0, 3.0)));
    assertEquals(7.0, Stats.median(List.of(7.0)));
  }

  @Test
  void medianOfNothingIsAnError() {
    assertThrows(IllegalArgumentException.class, () -> Stats.median(List.of()));
  }

  @Test
  void speedUpAndFraction() {
    assertEquals(4.0, Stats.speedUp(100, 25));
    assertTrue(Double.isNaN(Stats.speedUp(100, 0)));
    assertEquals(0.75, Stats.fraction(3, 4));
    assertTrue(Double.isNaN(Stats.fraction(0, 0)));
  }

  @Test
  void floorFromBytesAndPeak() {
    PlanProfile profile = new PlanProfile(3, 4, 2_000_000_000L, TaskTimes.NONE, "plan");
    QueryResult r = new QueryResult("1.1", "parquet", 1, List.of(10.0), List.of(2.0, 4.0, 3.0),
        profile, null);
    assertEquals(3.0, r.gpuMedianMillis());
    assertEquals(1.0, r.floorMillis(2000), 1e-12);   // 2 GB at 2000 GB/s: 1 ms
    assertEquals(3.0, r.timesFloor(2000), 1e-12);
    assertTrue(Double.isNaN(r.floorMillis(Double.NaN)));
    assertEquals(0.75, profile.gpuFraction());
  }
}
