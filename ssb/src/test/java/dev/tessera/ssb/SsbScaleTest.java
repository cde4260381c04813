package dev.tessera.ssb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class SsbScaleTest {
  @Test
  void countsFollowTheSpecification() {
    SsbScale one = SsbScale.of(1);
    assertEquals(1_500_000, one.orders());
    assertEquals(30_000, one.customers());
    assertEquals(2_000, one.suppliers());
    assertEquals(200_000, one.parts());
    assertEquals(200_000 * 4, SsbScale.of(10).parts());
    assertEquals(200_000 * 2, SsbScale.of(2).parts());
    assertEquals(200_000 * 7, SsbScale.of(100).parts());
  }

  @Test
  void fractionalScaleFactorsScaleDownToAtLeastOneRow() {
    SsbScale small = SsbScale.of(0.01);
    assertEquals(15_000, small.orders());
    assertEquals(300, small.customers());
    assertEquals(20, small.suppliers());
    assertEquals(2_000, small.parts());
    SsbScale tiny = SsbScale.of(1e-9);
    assertEquals(1, tiny.orders());
    assertEquals(1, tiny.customers());
    assertEquals(1, tiny.suppliers());
    assertEquals(1, tiny.parts());
  }

  @Test
  void badScaleFactorsAreRefusedNamingTheValue() {
    for (double bad : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> SsbGenerator.generate(null, bad, 1, Path.of("unused")));
      assertTrue(e.getMessage().contains(String.valueOf(bad)), e.getMessage());
    }
    IllegalArgumentException huge = assertThrows(IllegalArgumentException.class,
        () -> SsbScale.of(1e6));
    assertTrue(huge.getMessage().contains("1000000.0"), huge.getMessage());
  }

  @Test
  void theDateTableHas2556DaysAndOrdersFitInIt() {
    assertEquals(19920101, SsbCalendar.key(0));
    assertEquals(19981230, SsbCalendar.key(SsbCalendar.DAYS - 1));
    assertEquals(19980802, SsbCalendar.key(SsbCalendar.ORDER_DAYS - 1));
    assertTrue(SsbCalendar.ORDER_DAYS - 1 + SsbCalendar.MAX_COMMIT_DELAY < SsbCalendar.DAYS);
  }
}
