package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.column.TestColumns;
import dev.tessera.gpu.memory.DeviceBuffer;
import dev.tessera.gpu.memory.PoolExhaustedException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import org.apache.arrow.memory.ArrowBuf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The contract every backend meets: the same tests run on the host reference backend and, where
 * a GPU is present, on CUDA. Every test must leave the device pool, the pinned pool and the
 * staging allocator empty.
 */
public abstract class BackendContractTest extends BackendTestBase {
  static Stream<ColumnType> allTypes() {
    return TestColumns.ALL_TYPES.stream();
  }

  private void assertRoundTrip(ColumnType type, List<Object> values) {
    try (HostColumn host = TestColumns.build(type, values, backend.stagingAllocator());
        DeviceColumn device = ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
        HostColumn back = ColumnTransfer.toHost(device, backend.stagingAllocator(), stream)) {
      assertEquals(host.nullCount(), device.nullCount());
      TestColumns.assertHolds(type, values, back);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("allTypes")
  void roundTripsEveryTypeWithNulls(ColumnType type) {
    assertRoundTrip(type, TestColumns.random(type, 10_007, 0.2, type.hashCode()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("allTypes")
  void roundTripsColumnsWithoutNulls(ColumnType type) {
    List<Object> values = TestColumns.random(type, 1000, 0.0, 7);
    try (HostColumn host = TestColumns.build(type, values, backend.stagingAllocator())) {
      assertEquals(null, host.validity(), "no nulls, no validity bitmap");
    }
    assertRoundTrip(type, values);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("allTypes")
  void roundTripsAllNullColumns(ColumnType type) {
    assertRoundTrip(type, new ArrayList<>(Collections.nCopies(777, null)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("allTypes")
  void roundTripsEmptyColumns(ColumnType type) {
    assertRoundTrip(type, List.of());
  }

  @Test
  void roundTripsLargeColumns() {
    assertRoundTrip(ColumnType.LONG, TestColumns.random(ColumnType.LONG, 3_000_000, 0.01, 1));
    assertRoundTrip(ColumnType.STRING, TestColumns.random(ColumnType.STRING, 400_000, 0.05, 2));
  }

  @Test
  void roundTripsABatchOfEveryTypeWithOneWait() {
    int rows = 5000;
    List<List<Object>> values = new ArrayList<>();
    List<HostColumn> columns = new ArrayList<>();
    for (ColumnType type : TestColumns.ALL_TYPES) {
      List<Object> v = TestColumns.random(type, rows, 0.3, type.toString().hashCode());
      values.add(v);
      columns.add(TestColumns.build(type, v, backend.stagingAllocator()));
    }
    try (ColumnBatch<HostColumn> host = new ColumnBatch<>(columns, rows);
        ColumnBatch<DeviceColumn> device =
            ColumnTransfer.toDeviceAsync(host, backend.deviceMemory(), stream);
        ColumnBatch<HostColumn> back =
            ColumnTransfer.toHost(device, backend.stagingAllocator(), stream)) {
      assertEquals(rows, back.rowCount());
      for (int c = 0; c < TestColumns.ALL_TYPES.size(); c++) {
        TestColumns.assertHolds(TestColumns.ALL_TYPES.get(c), values.get(c), back.column(c));
      }
    }
  }

  @Test
  void copiesAndFillsWithinDeviceMemory() {
    long bytes = 3 * (1 << 20) + 5;
    try (ArrowBuf host = backend.stagingAllocator().buffer(bytes);
        DeviceBuffer a = DeviceBuffer.allocate(backend.deviceMemory(), bytes);
        DeviceBuffer b = DeviceBuffer.allocate(backend.deviceMemory(), bytes)) {
      for (long i = 0; i < bytes; i++) {
        host.setByte(i, (int) (i * 31 + 7));
      }
      stream.copyHostToDevice(host.memoryAddress(), a.address(), bytes);
      stream.copyDeviceToDevice(a.address(), b.address(), bytes);
      stream.fill(b.address() + 10, 100, (byte) 0x5A);
      host.setZero(0, bytes);
      stream.copyDeviceToHost(b.address(), host.memoryAddress(), bytes);
      stream.synchronize();
      for (long i = 0; i < bytes; i++) {
        byte expected = (i >= 10 && i < 110) ? (byte) 0x5A : (byte) (i * 31 + 7);
        if (host.getByte(i) != expected) {
          throw new AssertionError("byte " + i + ": " + host.getByte(i) + " != " + expected);
        }
      }
    }
  }

  @ParameterizedTest(name = "{0} values")
  @ValueSource(ints = {0, 1, 127, 511, 512, 513, 1_000_003})
  void smokeKernelComputesAxpbAndItsSum(int count) {
    checkSmokeKernel(count, 3, -11);
  }

  @Test
  void smokeKernelArithmeticWrapsLikeJava() {
    checkSmokeKernel(4099, Long.MAX_VALUE, Long.MIN_VALUE + 5);
  }

  private void checkSmokeKernel(int count, long a, long b) {
    long bytes = Math.max(8, count * 8L);
    try (ArrowBuf host = backend.stagingAllocator().buffer(bytes);
        DeviceBuffer x = DeviceBuffer.allocate(backend.deviceMemory(), count * 8L);
        DeviceBuffer y = DeviceBuffer.allocate(backend.deviceMemory(), count * 8L);
        DeviceBuffer sum = DeviceBuffer.allocate(backend.deviceMemory(), 8)) {
      long expectedSum = 0;
      for (int i = 0; i < count; i++) {
        long v = i * 1_000_003L - 77;
        host.setLong(i * 8L, v);
        expectedSum += a * v + b;
      }
      stream.copyHostToDevice(host.memoryAddress(), x.address(), count * 8L);
      stream.fill(y.address(), count * 8L, (byte) 0xEE); // poison: every value must be written
      stream.fill(sum.address(), 8, (byte) 0);
      backend.smokeKernel().axpbSum(stream, x, y, count, a, b, sum);
      stream.copyDeviceToHost(y.address(), host.memoryAddress(), count * 8L);
      stream.synchronize();
      for (int i = 0; i < count; i++) {
        assertEquals(a * (i * 1_000_003L - 77) + b, host.getLong(i * 8L), "y[" + i + "]");
      }
      stream.copyDeviceToHost(sum.address(), host.memoryAddress(), 8);
      stream.synchronize();
      assertEquals(expectedSum, host.getLong(0), "sum");
    }
  }

  @Test
  void smokeKernelRejectsBuffersTooSmall() {
    try (DeviceBuffer x = DeviceBuffer.allocate(backend.deviceMemory(), 80);
        DeviceBuffer sum = DeviceBuffer.allocate(backend.deviceMemory(), 8)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> backend.smokeKernel().axpbSum(stream, x, x, 11, 1, 1, sum));
      assertTrue(e.getMessage().contains("88 bytes"), e.getMessage());
    }
  }

  @Test
  void aFullDevicePoolSaysWhichSettingToRaiseAndStaysUsable() {
    RuntimeOptions small = RuntimeOptions.defaults().withDeviceMemoryCap(32L << 20);
    try (Backend limited = openBackend(small)) {
      DeviceBuffer kept = DeviceBuffer.allocate(limited.deviceMemory(), 20L << 20);
      PoolExhaustedException e = assertThrows(PoolExhaustedException.class,
          () -> DeviceBuffer.allocate(limited.deviceMemory(), 20L << 20));
      assertTrue(e.getMessage().contains(small.deviceCapSetting()), e.getMessage());
      kept.close();
      DeviceBuffer.allocate(limited.deviceMemory(), 30L << 20).close();
      assertEquals(0, limited.deviceMemory().bytesInUse());
    }
  }

  @Test
  void stagingBeyondAFullPinnedPoolComesFromPageableMemoryAndRoundTrips() {
    RuntimeOptions small = RuntimeOptions.defaults().withPinnedMemoryCap(RuntimeOptions.MiB);
    try (Backend limited = openBackend(small); GpuStream s = limited.newStream()) {
      // 300,000 longs and strings: several MiB of staging, the pinned pool holds one.
      for (ColumnType type : List.of(ColumnType.LONG, ColumnType.STRING)) {
        List<Object> values = TestColumns.random(type, 300_000, 0.1, 11);
        try (HostColumn host = TestColumns.build(type, values, limited.stagingAllocator());
            DeviceColumn device = ColumnTransfer.toDeviceAsync(host, limited.deviceMemory(), s);
            HostColumn back = ColumnTransfer.toHost(device, limited.stagingAllocator(), s)) {
          TestColumns.assertHolds(type, values, back);
        }
      }
      assertEquals(0, limited.pinnedMemory().bytesInUse());
    }
  }

  @Test
  void buffersCannotBeClosedTwice() {
    DeviceBuffer buffer = DeviceBuffer.allocate(backend.deviceMemory(), 64);
    buffer.close();
    assertThrows(IllegalStateException.class, buffer::close);
    assertThrows(IllegalStateException.class, buffer::address);
  }
}
