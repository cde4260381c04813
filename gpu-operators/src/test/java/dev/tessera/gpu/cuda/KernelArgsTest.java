package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.arrow.memory.util.MemoryUtil;
import org.junit.jupiter.api.Test;

/** The parameters are packed as a kernel lays them out: each aligned to its own size. */
class KernelArgsTest {
  private static ByteBuffer packed(KernelArgs args) {
    ByteBuffer to = ByteBuffer.allocate(args.size() + 8).order(ByteOrder.LITTLE_ENDIAN);
    to.putLong(args.size(), 0x5555_5555_5555_5555L); // past the end: must stay as it is
    args.copyTo(to);
    return to;
  }

  @Test
  void aWordAfterAnIntStartsAtTheNextMultipleOfEightAndThePaddingIsZero() {
    KernelArgs args = new KernelArgs().i32(-7).address(0x7f00_1234_5678L).i32(3).i32(4)
        .f64(-0.0).i32(9);
    assertEquals(36, args.size());
    ByteBuffer b = packed(args);
    assertEquals(-7, b.getInt(0));
    assertEquals(0, b.getInt(4));
    assertEquals(0x7f00_1234_5678L, b.getLong(8));
    assertEquals(3, b.getInt(16));
    assertEquals(4, b.getInt(20));
    assertEquals(Double.doubleToRawLongBits(-0.0), b.getLong(24));
    assertEquals(9, b.getInt(32));
    assertEquals(0x5555_5555_5555_5555L, b.getLong(36));
  }

  @Test
  void wordsAreEightAlignedAndInOrder() {
    KernelArgs args = new KernelArgs().i32(1).words(new long[] {Long.MIN_VALUE, -1, 42})
        .i64(Long.MAX_VALUE);
    assertEquals(40, args.size());
    ByteBuffer b = packed(args);
    assertEquals(1, b.getInt(0));
    assertEquals(Long.MIN_VALUE, b.getLong(8));
    assertEquals(-1, b.getLong(16));
    assertEquals(42, b.getLong(24));
    assertEquals(Long.MAX_VALUE, b.getLong(32));
  }

  @Test
  void manyParametersGrowTheBufferAndKeepEveryValue() {
    KernelArgs args = new KernelArgs();
    for (int i = 0; i < 100; i++) {
      args.i32(i).i64(-i);
    }
    assertEquals(1600, args.size());
    ByteBuffer b = packed(args);
    for (int i = 0; i < 100; i++) {
      assertEquals(i, b.getInt(16 * i));
      assertEquals(-i, b.getLong(16 * i + 8));
    }
  }

  @Test
  void theExtraArgumentPointsTheDriverAtTheSizeAndTheParameters() {
    KernelArgs args = new KernelArgs().i32(5).address(0xdead_beef_0000L);
    long extra = ((LaunchParameters.NativeAddress) LaunchParameters.extra(args)).address();
    assertEquals(1, MemoryUtil.getLong(extra)); // CU_LAUNCH_PARAM_BUFFER_POINTER
    long parameters = MemoryUtil.getLong(extra + 8);
    assertEquals(2, MemoryUtil.getLong(extra + 16)); // CU_LAUNCH_PARAM_BUFFER_SIZE
    assertEquals(16, MemoryUtil.getLong(MemoryUtil.getLong(extra + 24)));
    assertEquals(0, MemoryUtil.getLong(extra + 32)); // CU_LAUNCH_PARAM_END
    assertEquals(0, parameters % 8);
    assertEquals(5, MemoryUtil.getInt(parameters));
    assertEquals(0xdead_beef_0000L, MemoryUtil.getLong(parameters + 8));

    KernelArgs large = new KernelArgs().words(new long[1000]).i32(77);
    long again = ((LaunchParameters.NativeAddress) LaunchParameters.extra(large)).address();
    assertEquals(8004, MemoryUtil.getLong(MemoryUtil.getLong(again + 24)));
    assertEquals(77, MemoryUtil.getInt(MemoryUtil.getLong(again + 8) + 8000));
  }

  @Test
  void noParametersPackToNothing() {
    assertEquals(0, new KernelArgs().size());
    assertEquals(null, LaunchParameters.extra(new KernelArgs()));
  }
}
