package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.cuda.ColumnSumCases.Shape;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The decoders the query kernels load columns with (program.cuh's LoadColumn and LoadDforTile),
 * through {@link CudaColumnSum}: for INT and LONG columns stored PLAIN, GPU-FOR and GPU-DFOR, at
 * every bit width (0 to 32, 0 to 64), of every {@link ColumnSumCases} shape and length, the
 * device's sum of the non-null rows equals the host's sum of {@link EncodedColumn#decodeFixed}.
 * NULL rows add nothing, although their slots hold the row before's value.
 */
@RequiresCuda
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaColumnSumTest {
  private Backend backend;
  private GpuStream stream;

  @BeforeAll
  void open() {
    backend = Backends.open(BackendKind.CUDA,
        RuntimeOptions.defaults().withDeviceMemoryCap(1L << 30));
    stream = backend.newStream();
  }

  @AfterEach
  void poolsAreEmpty() {
    assertEquals(0, backend.stagingAllocator().getAllocatedMemory(), "staging leaked");
    assertEquals(0, backend.deviceMemory().bytesInUse(), "device memory leaked");
  }

  @AfterAll
  void close() {
    if (stream != null) {
      stream.close();
    }
    if (backend != null) {
      backend.close();
    }
  }

  static Stream<Arguments> typesEncodingsAndWidths() {
    return Stream.of(ColumnType.INT, ColumnType.LONG).flatMap(type ->
        Stream.of(Encoding.values()).flatMap(encoding ->
            IntStream.rangeClosed(0, lanes(type)).mapToObj(
                width -> Arguments.of(type, encoding, width))));
  }

  @ParameterizedTest(name = "{0} {1} {2} bits")
  @MethodSource("typesEncodingsAndWidths")
  void sumsEveryShapeAndLength(ColumnType type, Encoding encoding, int width) {
    for (Shape shape : Shape.values()) {
      for (int rows : ColumnSumCases.LENGTHS) {
        Random random = new Random(31L * width + rows);
        long[] values = ColumnSumCases.values(shape, width, lanes(type), rows, random);
        boolean[] valid = ColumnSumCases.validity(shape, rows, random);
        EncodedColumn column = EncodedColumn.encodeFixed(type, values, valid, rows, encoding);
        assertSum(column, shape + ", " + rows + " rows");
      }
    }
  }

  /** Many tiles, so many blocks add to the one total. */
  @ParameterizedTest
  @EnumSource(Encoding.class)
  void sumsALargeColumn(Encoding encoding) {
    int rows = 3_000_017;
    for (ColumnType type : new ColumnType[] {ColumnType.INT, ColumnType.LONG}) {
      Random random = new Random(11);
      Shape shape = Shape.NULLS;
      long[] values = ColumnSumCases.values(shape, 20, lanes(type), rows, random);
      boolean[] valid = ColumnSumCases.validity(shape, rows, random);
      assertSum(EncodedColumn.encodeFixed(type, values, valid, rows, encoding), type + "");
    }
  }

  @Test
  void wrapsLikeJavaLongs() {
    long[] values = {Long.MAX_VALUE, Long.MAX_VALUE, 3};
    for (Encoding encoding : Encoding.values()) {
      EncodedColumn column =
          EncodedColumn.encodeFixed(ColumnType.LONG, values, null, values.length, encoding);
      assertEquals(Long.MAX_VALUE + Long.MAX_VALUE + 3, deviceSum(column), encoding.name());
    }
  }

  @Test
  void refusesOtherTypes() {
    EncodedColumn column = EncodedColumn.encodeFixed(ColumnType.DOUBLE, new long[3], null, 3);
    try (DeviceEncodedColumn device = upload(column);
        DeviceColumn borrowed = device.borrow(() -> {})) {
      assertThrows(IllegalArgumentException.class,
          () -> CudaColumnSum.of(backend, borrowed, stream));
    }
  }

  private void assertSum(EncodedColumn column, String what) {
    long[] decoded = column.decodeFixed();
    long expected = 0;
    for (int r = 0; r < column.rowCount(); r++) {
      if (!column.isNull(r)) {
        expected += decoded[r];
      }
    }
    assertEquals(expected, deviceSum(column), what + ": " + column);
  }

  private long deviceSum(EncodedColumn column) {
    try (DeviceEncodedColumn device = upload(column);
        DeviceColumn borrowed = device.borrow(() -> {});
        CudaColumnSum sum = CudaColumnSum.of(backend, borrowed, stream)) {
      return sum.run().sum();
    }
  }

  private DeviceEncodedColumn upload(EncodedColumn column) {
    return DeviceEncodedColumn.upload(column, backend.deviceMemory(), backend.stagingAllocator(),
        stream);
  }

  private static int lanes(ColumnType type) {
    return type.id().width() * Byte.SIZE;
  }
}
