package dev.tessera.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.codec.DeviceEncodedColumn;
import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Encoded (cached) columns as program input, on every backend: a program reading GPU-FOR,
 * GPU-DFOR, dictionary and plain columns sees the values the reference codec decodes (the CUDA
 * kernels decode in their loads, GPU-DFOR a tile at a time; the host reference decodes up front).
 * The batches span several tiles and end in a partial one, whose GPU-DFOR set is short.
 */
public abstract class EncodedInputContractTest extends BackendTestBase {
  private static final int ROWS = 1300; // 2 full tiles of 512 and a partial one of 276

  private static List<EncodedColumn> columns(long seed) {
    Random random = new Random(seed);
    int n = ROWS;
    long[] small = new long[n];
    boolean[] smallValid = new boolean[n];
    long[] sorted = new long[n];
    long[] wide = new long[n];
    long[] dates = new long[n];
    long[] shorts = new long[n];
    long[] decimals = new long[n];
    long[] doubles = new long[n];
    byte[][] fewStrings = new byte[n][];
    byte[][] sortedStrings = new byte[n][];
    long[] fullInts = new long[n];
    long[] fullLongs = new long[n];
    for (int i = 0; i < n; i++) {
      small[i] = random.nextInt(1000) - 500;
      smallValid[i] = i % 7 != 3;
      sorted[i] = (1L << 40) + 1000L * i + random.nextInt(50);
      wide[i] = random.nextLong() >>> 2; // 62 bits: GPU-FOR, values across three words
      dates[i] = 18000 + i / 3;
      shorts[i] = (short) (-30000 + random.nextInt(200));
      decimals[i] = random.nextInt(100000) - 50000;
      doubles[i] = Double.doubleToRawLongBits(i % 11 == 0 ? Double.NaN : i % 13 == 0 ? -0.0
          : random.nextGaussian());
      fewStrings[i] = i % 9 == 0 ? null
          : ("" + "abcdé".substring(0, random.nextInt(5))).getBytes(StandardCharsets.UTF_8);
      sortedStrings[i] = ("key-" + (1000 + i / 40)).getBytes(StandardCharsets.UTF_8);
      // Each block's first miniblock one value (width 0), the others the whole int range (width
      // 32, the reference plus the bits wrapping modulo 2^32); the longs' widths are 64.
      fullInts[i] = i % GpuForLayout.BLOCK_VALUES < GpuForLayout.MINIBLOCK_VALUES ? 7
          : random.nextInt();
      fullLongs[i] = i % 5 == 0 ? (i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE)
          : random.nextLong();
    }
    boolean[] sortedValid = new boolean[n];
    java.util.Arrays.fill(sortedValid, true);
    sortedValid[777] = false;
    return List.of(
        EncodedColumn.encodeFixed(ColumnType.INT, small, smallValid, n),
        EncodedColumn.encodeFixed(ColumnType.LONG, sorted, sortedValid, n),
        EncodedColumn.encodeFixed(ColumnType.LONG, wide, null, n),
        EncodedColumn.encodeFixed(ColumnType.DATE, dates, null, n),
        EncodedColumn.encodeFixed(ColumnType.SHORT, shorts, null, n),
        EncodedColumn.encodeFixed(ColumnType.decimal(9, 2), decimals, null, n),
        EncodedColumn.encodeFixed(ColumnType.DOUBLE, doubles, null, n),
        EncodedColumn.encodeStrings(fewStrings, n),
        EncodedColumn.encodeStrings(sortedStrings, n),
        EncodedColumn.encodeFixed(ColumnType.INT, fullInts, null, n, Encoding.FOR),
        EncodedColumn.encodeFixed(ColumnType.LONG, fullLongs, null, n, Encoding.FOR));
  }

  @Test
  void theCodecChoosesEveryEncodingHere() {
    List<EncodedColumn> columns = columns(1);
    assertEquals(Encoding.FOR, columns.get(0).encoding());
    assertEquals(Encoding.DFOR, columns.get(1).encoding());
    assertEquals(Encoding.FOR, columns.get(2).encoding());
    assertEquals(Encoding.DFOR, columns.get(3).encoding());
    assertEquals(Encoding.PLAIN, columns.get(6).encoding());
    assertEquals(true, columns.get(7).isDictionary());
    assertEquals(Encoding.DFOR, columns.get(8).encoding());
  }

  @Test
  void aProgramReadsTheDecodedValues() {
    for (long seed = 1; seed <= 3; seed++) {
      List<EncodedColumn> encoded = columns(seed);
      List<ColumnType> types = new ArrayList<>();
      List<DeviceEncodedColumn> copies = new ArrayList<>();
      List<DeviceColumn> input = new ArrayList<>();
      try {
        for (EncodedColumn c : encoded) {
          types.add(c.type());
          DeviceEncodedColumn copy = DeviceEncodedColumn.upload(c, backend.deviceMemory(),
              backend.stagingAllocator(), stream);
          copies.add(copy);
          input.add(copy.borrow(() -> { }));
        }
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(input, ROWS);
            ColumnBatch<DeviceColumn> out = backend.programKernel().run(
                ProgramBuilder.identity(types, false), batch, backend.deviceMemory(), stream);
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(out, backend.stagingAllocator(), stream)) {
          assertEquals(ROWS, host.rowCount());
          for (int c = 0; c < encoded.size(); c++) {
            assertColumn(encoded.get(c), host.column(c), "seed " + seed + " column " + c);
          }
        }
        // The rare host path (a replay, a split) decodes the same values.
        try (ColumnBatch<DeviceColumn> batch = new ColumnBatch<>(borrowAll(copies), ROWS);
            ColumnBatch<HostColumn> host =
                ColumnTransfer.toHost(batch, backend.stagingAllocator(), stream)) {
          for (int c = 0; c < encoded.size(); c++) {
            assertColumn(encoded.get(c), host.column(c), "download, column " + c);
          }
        }
      } finally {
        copies.forEach(DeviceEncodedColumn::close);
      }
    }
  }

  private static List<DeviceColumn> borrowAll(List<DeviceEncodedColumn> copies) {
    List<DeviceColumn> columns = new ArrayList<>();
    for (DeviceEncodedColumn copy : copies) {
      columns.add(copy.borrow(() -> { }));
    }
    return columns;
  }

  private static void assertColumn(EncodedColumn expected, HostColumn actual, String what) {
    for (int row = 0; row < expected.rowCount(); row++) {
      String at = what + " row " + row;
      assertEquals(expected.isNull(row), actual.isNull(row), at);
      if (expected.isNull(row)) {
        continue;
      }
      if (expected.type().isString()) {
        assertArrayEquals(expected.stringValue(row), actual.getUtf8(row), at);
        continue;
      }
      long value = switch (expected.type().id()) {
        case SHORT -> actual.getShort(row);
        case INT, DATE -> actual.getInt(row);
        case DOUBLE -> Double.doubleToRawLongBits(actual.getDouble(row));
        default -> actual.getLong(row);
      };
      assertEquals(expected.fixedValue(row), value, at);
    }
  }
}
