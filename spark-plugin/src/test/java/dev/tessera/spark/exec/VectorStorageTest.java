package dev.tessera.spark.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import java.util.Random;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.junit.jupiter.api.Test;

/**
 * VectorStorage reads this Spark's vectors (so the staging's fast paths are taken, not silently
 * skipped) and gives what Spark's own API gives: SparkColumnReaderTest checks whole staged
 * columns; these check the NULL bits at every alignment and the value arrays' identity.
 */
class VectorStorageTest {

  @Test
  void gatherTakesOneBitPerByteThatIsOne() {
    Random random = new Random(7);
    for (int n = 0; n < 10_000; n++) {
      byte[] flags = new byte[8];
      long expected = 0;
      long word = 0;
      for (int i = 0; i < 8; i++) {
        // Mostly Spark's 0 and 1; now and then another byte, which isNullAt does not take as 1.
        int choice = random.nextInt(10);
        flags[i] = (byte) (choice < 4 ? 0 : choice < 9 ? 1 : random.nextInt(256));
        expected |= (flags[i] == 1 ? 1L : 0L) << i;
        word |= (flags[i] & 0xFFL) << (8 * i);
      }
      assertEquals(expected, VectorStorage.gather(word), () -> java.util.Arrays.toString(flags));
    }
    assertEquals(0xFF, VectorStorage.gather(0x0101010101010101L));
    assertEquals(0, VectorStorage.gather(0));
    assertEquals(0, VectorStorage.gather(0x8181818181818181L));
    assertEquals(0b1000_0001, VectorStorage.gather(0x0100000000000001L));
  }

  @Test
  void nullBitsAreIsNullAtForEveryRangeOfOnAndOffHeapVectors() {
    for (boolean offHeap : new boolean[] {false, true}) {
      try (WritableColumnVector vector = offHeap
          ? new OffHeapColumnVector(300, DataTypes.IntegerType)
          : new OnHeapColumnVector(300, DataTypes.IntegerType)) {
        Random random = new Random(offHeap ? 1 : 2);
        for (int r = 0; r < 300; r++) {
          if (random.nextInt(3) == 0) {
            vector.putNull(r);
          } else {
            vector.putInt(r, r);
          }
        }
        for (int from : new int[] {0, 1, 7, 8, 63, 64, 65, 130}) {
          for (int count : new int[] {1, 7, 8, 9, 64, 65, 127, 300 - 130}) {
            long[] bits = new long[(count + 63) >>> 6];
            assertTrue(VectorStorage.nullBits(vector, from, count, bits), "readable");
            assertArrayEquals(rowByRow(vector, from, count), bits,
                (offHeap ? "off" : "on") + "-heap from " + from + " count " + count);
          }
        }
      }
    }
  }

  @Test
  void onHeapValueArraysAreTheVectorsOwn() {
    try (OnHeapColumnVector ints = new OnHeapColumnVector(16, DataTypes.IntegerType);
        OnHeapColumnVector decimals = new OnHeapColumnVector(16,
            DataTypes.createDecimalType(7, 2));
        OnHeapColumnVector doubles = new OnHeapColumnVector(16, DataTypes.DoubleType)) {
      ints.putInt(3, 42);
      Object array = VectorStorage.values(ints, ColumnType.INT);
      assertTrue(array instanceof int[]);
      assertEquals(42, ((int[]) array)[3]);
      assertTrue(VectorStorage.values(decimals, ColumnType.decimal(7, 2)) instanceof int[]);
      doubles.putDouble(0, -0.0);
      Object doubleArray = VectorStorage.values(doubles, ColumnType.DOUBLE);
      assertTrue(doubleArray instanceof double[]);
      assertEquals(Double.doubleToRawLongBits(-0.0),
          Double.doubleToRawLongBits(((double[]) doubleArray)[0]));
    }
    try (OffHeapColumnVector offHeap = new OffHeapColumnVector(16, DataTypes.IntegerType)) {
      assertNull(VectorStorage.values(offHeap, ColumnType.INT), "off-heap: read by address");
    }
  }

  @Test
  void vectorsWithoutNullBytesAreLeftToIsNullAt() {
    try (ColumnVector constant = new org.apache.spark.sql.execution.vectorized.ConstantColumnVector(
        4, DataTypes.IntegerType)) {
      long[] bits = new long[1];
      assertFalse(VectorStorage.nullBits(constant, 0, 4, bits));
      assertEquals(0, bits[0]);
    }
  }

  private static long[] rowByRow(ColumnVector vector, int from, int count) {
    long[] bits = new long[(count + 63) >>> 6];
    for (int i = 0; i < count; i++) {
      if (vector.isNullAt(from + i)) {
        bits[i >>> 6] |= 1L << i;
      }
    }
    return bits;
  }
}
