package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * When a CUDA join table gets a direct map (CudaHashJoin.directKeys / directSpan), and how large
 * the probe filter of one without is (ProbeFilter). No GPU.
 */
class JoinDirectMapTest {
  @Test
  void onlyOneIntegralKeyCanHaveADirectMap() {
    for (ColumnType t : List.of(ColumnType.BYTE, ColumnType.SHORT, ColumnType.INT,
        ColumnType.LONG, ColumnType.DATE, ColumnType.TIMESTAMP)) {
      assertTrue(CudaHashJoin.directKeys(List.of(t)), t.toString());
    }
    assertFalse(CudaHashJoin.directKeys(List.of(ColumnType.STRING)));
    assertFalse(CudaHashJoin.directKeys(List.of(ColumnType.decimal(12, 2))));
    assertFalse(CudaHashJoin.directKeys(List.of(ColumnType.INT, ColumnType.INT)));
    assertFalse(CudaHashJoin.directKeys(List.of()));
  }

  @Test
  void rangesWithinTheL2BoundOrDenseGetAMapHugeOnesDoNot() {
    // SSB's part (keys 1..200,000) and date (2,556 days from 19920101 to 19981230).
    assertEquals(200_000, CudaHashJoin.directSpan(1, 200_000, 200_000));
    assertEquals(19981230 - 19920101 + 1, CudaHashJoin.directSpan(19920101, 19981230, 2_556));
    assertEquals(1, CudaHashJoin.directSpan(-7, -7, 1));
    // Sparser: 4,096 words a row while the map is at most 2^22 words (16 MiB). SSB's filtered
    // dimensions at scale factor 10: q2.1's, q2.2's and q2.3's part sides (32,000, 6,400 and 800
    // rows of keys 1..800,000), q3.3's customer side (2,400 rows of keys 1..300,000).
    assertEquals(800_000, CudaHashJoin.directSpan(1, 800_000, 32_000));
    assertEquals(800_000, CudaHashJoin.directSpan(1, 800_000, 6_400));
    assertEquals(800_000, CudaHashJoin.directSpan(1, 800_000, 800));
    assertEquals(300_000, CudaHashJoin.directSpan(1, 300_000, 2_400));
    assertEquals(4_096 * 100, CudaHashJoin.directSpan(0, 4_096 * 100 - 1, 100));
    assertEquals(0, CudaHashJoin.directSpan(0, 4_096 * 100, 100));
    assertEquals(1 << 22, CudaHashJoin.directSpan(1, 1 << 22, 100_000));
    assertEquals(0, CudaHashJoin.directSpan(1, (1 << 22) + 1, 100_000));
    // Denser: 16 words a row plus 65,536, up to 2^28 words.
    assertEquals(16 * 1_000_000 + 65_536,
        CudaHashJoin.directSpan(0, 16 * 1_000_000 + 65_535, 1_000_000));
    assertEquals(0, CudaHashJoin.directSpan(0, 16 * 1_000_000 + 65_536, 1_000_000));
    assertEquals(0, CudaHashJoin.directSpan(0, 1L << 40, 1L << 30)); // over 2^28 words
    // No non-NULL key (the range stays empty), and ranges whose size overflows a long.
    assertEquals(0, CudaHashJoin.directSpan(Long.MAX_VALUE, Long.MIN_VALUE, 10));
    assertEquals(0, CudaHashJoin.directSpan(Long.MIN_VALUE, Long.MAX_VALUE, 1 << 20));
    assertEquals(0, CudaHashJoin.directSpan(-1, Long.MAX_VALUE, 1 << 20));
    assertEquals(2_000, CudaHashJoin.directSpan(Long.MAX_VALUE - 1_999, Long.MAX_VALUE, 2_000));
  }

  @Test
  void slotsOfFewKeysGetSixteenBitsAKeyFromTheHashsHighBits() {
    // StarJoinBench's sparse part side: 8,000 keys, 2^17 bits from the hash's top 17.
    assertEquals(new ProbeFilter(64 - 17, 1 << 17), ProbeFilter.forSlots(8_000));
    assertEquals(new ProbeFilter(64 - 5, 32), ProbeFilter.forSlots(1));
    assertEquals(1, ProbeFilter.forSlots(1).words());
    // At most 2^19 bits, and no fewer than 8 a key.
    assertEquals(new ProbeFilter(64 - 19, 1 << 19), ProbeFilter.forSlots(65_536));
    assertNull(ProbeFilter.forSlots(65_537));
    assertNull(ProbeFilter.forSlots(0));
  }
}
