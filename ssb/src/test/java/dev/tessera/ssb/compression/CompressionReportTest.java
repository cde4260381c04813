package dev.tessera.ssb.compression;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.EncodedColumn;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.ssb.SsbTableRows;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The report at SF 0.002 (about 12,000 lineorder rows) in batches of 2,048 rows, so that every
 * table but supplier and customer has several batches and a partial last one.
 */
class CompressionReportTest {
  private static final double SF = 0.002;
  private static final long SEED = 3;
  private static final int BATCH_ROWS = 2048;

  private static CompressionReport report;

  @BeforeAll
  static void measure() {
    report = CompressionReport.measure(SF, SEED, BATCH_ROWS, line -> { });
  }

  /** The sizes the encoder gives for a column cut into batches, computed here on their own. */
  private record Expected(long rows, int batches, long plainBytes, long encodedBytes) {}

  /** Encodes column {@code c} of {@code rows} (INT or STRING) straight from the Rows' values. */
  private static Expected encodeDirectly(List<Row> rows, StructType schema, int c) {
    boolean string = schema.fields()[c].dataType() instanceof StringType;
    assertTrue(string || schema.fields()[c].dataType() == IntegerType$.MODULE$,
        "the SSB schemas have INT and STRING columns only");
    long plain = 0;
    long encoded = 0;
    int batches = 0;
    for (int start = 0; start < rows.size(); start += BATCH_ROWS) {
      int n = Math.min(BATCH_ROWS, rows.size() - start);
      EncodedColumn column;
      if (string) {
        byte[][] values = new byte[n][];
        for (int r = 0; r < n; r++) {
          values[r] = rows.get(start + r).getString(c).getBytes(StandardCharsets.UTF_8);
        }
        column = EncodedColumn.encodeStrings(values, n);
      } else {
        long[] values = new long[n];
        for (int r = 0; r < n; r++) {
          values[r] = rows.get(start + r).getInt(c);
        }
        column = EncodedColumn.encodeFixed(ColumnType.INT, values, null, n);
      }
      plain += column.plainBytes();
      encoded += column.encodedBytes();
      batches++;
    }
    return new Expected(rows.size(), batches, plain, encoded);
  }

  private static List<Row> materialise(SsbTableRows table) {
    List<Row> rows = new ArrayList<>();
    table.rows().forEachRemaining(rows::add);
    return rows;
  }

  private static ColumnCompression column(String table, String name) {
    return report.table(table).columns().stream().filter(c -> c.name().equals(name)).findFirst()
        .orElseThrow();
  }

  /** Blocks of 128 over the report's batches of {@code rows} rows. */
  private static long blocks(long rows) {
    long full = rows / BATCH_ROWS;
    return full * GpuForLayout.blocks(BATCH_ROWS) + GpuForLayout.blocks((int) (rows % BATCH_ROWS));
  }

  @Test
  void everyColumnMeasuresWhatTheEncoderStores() {
    for (SsbTableRows table : SsbTableRows.all(SF, SEED)) {
      List<Row> rows = materialise(table);
      TableCompression measured = report.table(table.name());
      assertEquals(rows.size(), measured.rows(), table.name());
      assertEquals((rows.size() + BATCH_ROWS - 1) / BATCH_ROWS, measured.batches(), table.name());
      assertEquals(table.schema().fields().length, measured.columns().size());
      for (int c = 0; c < measured.columns().size(); c++) {
        ColumnCompression column = measured.columns().get(c);
        Expected expected = encodeDirectly(rows, table.schema(), c);
        String what = table.name() + "." + column.name();
        assertEquals(expected.rows(), column.rows(), what);
        assertEquals(expected.plainBytes(), column.plainBytes(), what);
        assertEquals(expected.encodedBytes(), column.encodedBytes(), what);
        assertEquals(8.0 * expected.encodedBytes() / expected.rows(), column.encodedBits(), 1e-9,
            what);
        assertEquals(expected.batches(),
            column.encodings().values().stream().mapToInt(Integer::intValue).sum(), what);
        assertEquals(column.encodedBits(), column.payloadBits() + column.overheadBits(), 1e-9);
        // A PLAIN column without nulls has no overhead (its values are its payload).
        assertTrue(column.payloadBits() >= 0 && column.overheadBits() >= 0, what);
      }
      assertEquals(measured.columns().stream().mapToLong(ColumnCompression::encodedBytes).sum(),
          measured.encodedBytes(), table.name());
      assertEquals(measured.columns().stream().mapToLong(ColumnCompression::plainBytes).sum(),
          measured.plainBytes(), table.name());
      assertEquals((double) measured.encodedBytes() / measured.plainBytes(), measured.ratio(),
          1e-12);
    }
  }

  @Test
  void theReportTotalIsTheSumOfItsTables() {
    assertEquals(5, report.tables().size());
    assertEquals(report.tables().stream().mapToLong(TableCompression::encodedBytes).sum(),
        report.encodedBytes());
    assertEquals(report.tables().stream().mapToLong(TableCompression::plainBytes).sum(),
        report.plainBytes());
    assertTrue(report.encodedBytes() < report.plainBytes());
  }

  @Test
  void theBatchesAreTheCachesRoundedToWholeTiles() {
    assertEquals(BATCH_ROWS, report.batchRows());
    assertEquals(GpuForLayout.SET_VALUES, CompressionReport.cacheBatchRows(1));
    assertEquals(1024, CompressionReport.cacheBatchRows(1000));
    assertEquals(1 << 22, CompressionReport.cacheBatchRows(CompressionReport.DEFAULT_BATCH_ROWS));
  }

  @Test
  void theSortedOrderKeyIsDeltaEncoded() {
    ColumnCompression orderKey = column("lineorder", "lo_orderkey");
    int batches = report.table("lineorder").batches();
    assertEquals(Map.of("DFOR", batches), orderKey.encodings());
    // GPU-DFOR of 32-bit lanes: per block a reference, a widths word and a block start; per set
    // of 4 blocks its first value; per batch the closing block start. All else is payload.
    long rows = orderKey.rows();
    long sets = (rows / BATCH_ROWS) * (BATCH_ROWS / GpuForLayout.SET_VALUES)
        + (rows % BATCH_ROWS + GpuForLayout.SET_VALUES - 1) / GpuForLayout.SET_VALUES;
    assertEquals(32.0 * (3 * blocks(rows) + sets + batches) / rows, orderKey.overheadBits(), 1e-9);
    assertTrue(orderKey.overheadBits() > 0.81 && orderKey.overheadBits() < 0.9);
    // Keys 1, 1, 2, 2, 2, 3...: deltas of 0 and 1, one bit or none per value stored (the last
    // block's padding included).
    assertTrue(orderKey.payloadBits() * rows <= 128.0 * blocks(rows),
        "payload " + orderKey.payloadBits());
  }

  @Test
  void aForColumnCostsThreeWordsPerBlock() {
    int checked = 0;
    for (ColumnCompression c : report.table("lineorder").columns()) {
      if (!c.type().equals(ColumnType.INT) || !c.encodings().keySet().equals(Set.of("FOR"))) {
        continue;
      }
      // GPU-FOR of 32-bit lanes: reference, widths word and block start per block of 128 values
      // (0.75 bit per value, the thesis's figure), plus each batch's closing block start.
      long batches = report.table("lineorder").batches();
      assertEquals(32.0 * (3 * blocks(c.rows()) + batches) / c.rows(), c.overheadBits(), 1e-9,
          c.name());
      assertTrue(c.overheadBits() >= 0.75 && c.overheadBits() < 1.1, c.name());
      assertTrue(c.payloadBits() < 32 && c.encodedBits() < c.plainBits(), c.name());
      checked++;
    }
    assertTrue(checked >= 8, "FOR columns in lineorder: " + checked);
  }

  @Test
  void stringsAreDictionariesWhenTheyRepeat() {
    ColumnCompression shipMode = column("lineorder", "lo_shipmode");
    assertEquals(Set.of("dict FOR"), shipMode.encodings().keySet());
    assertTrue(shipMode.dictionaryBits() > 0 && shipMode.dictionaryBits()
        < shipMode.overheadBits());
    assertTrue(shipMode.payloadBits() * shipMode.rows() <= 3.0 * 128 * blocks(shipMode.rows()),
        "7 modes: codes of at most 3 bits, padding of the last block included");
    assertEquals(-1, shipMode.nsfBytes());
    // Unique names: a dictionary would repeat every value, so the plain layout is kept, its
    // offsets (32 bits a row, one more per batch) all of the overhead.
    ColumnCompression name = column("customer", "c_name");
    assertEquals(Map.of("PLAIN", report.table("customer").batches()), name.encodings());
    assertEquals(1.0, name.ratio(), 1e-12);
    assertEquals(32.0 * (name.rows() + report.table("customer").batches()) / name.rows(),
        name.overheadBits(), 1e-9);
  }

  @Test
  void nsfTakesTheFewestBytesThatHoldTheValues() {
    assertEquals(1, ColumnCompression.nsfBytes(0, 255));
    assertEquals(2, ColumnCompression.nsfBytes(0, 256));
    assertEquals(1, ColumnCompression.nsfBytes(-128, 127));
    assertEquals(2, ColumnCompression.nsfBytes(-129, 0));
    assertEquals(4, ColumnCompression.nsfBytes(19920101, 19981231));
    assertEquals(8, ColumnCompression.nsfBytes(0, 1L << 32));
    ColumnCompression lineNumber = column("lineorder", "lo_linenumber");
    assertEquals(lineNumber.rows(), lineNumber.nsfBytes(), "line numbers 1 to 7: one byte");
    ColumnCompression orderKey = column("lineorder", "lo_orderkey");
    assertEquals(2 * orderKey.rows(), orderKey.nsfBytes(), "3,000 orders: two bytes");
  }

  /** The cache's mapping of other types: dates as days, decimals unscaled, nulls in validity. */
  @Test
  void otherTypesAreEncodedAsTheCacheEncodesThem() {
    StructType schema = new StructType()
        .add("day", DataTypes.DateType)
        .add("price", DataTypes.createDecimalType(10, 2))
        .add("note", DataTypes.StringType, true);
    List<Row> rows = List.of(
        RowFactory.create(LocalDate.ofEpochDay(100), new BigDecimal("12.34"), "a"),
        RowFactory.create(LocalDate.ofEpochDay(300), new BigDecimal("56.78"), null),
        RowFactory.create(LocalDate.ofEpochDay(200), new BigDecimal("0.01"), "a"));
    TableCompression table = new BatchEncoder(schema, 512).encode("t", rows.iterator());
    assertEquals(3, table.rows());
    ColumnCompression day = table.columns().get(0);
    assertEquals(ColumnType.DATE, day.type());
    assertEquals(3 * 2, day.nsfBytes(), "days 100 to 300: two bytes");
    ColumnCompression price = table.columns().get(1);
    assertEquals(ColumnType.decimal(10, 2), price.type());
    assertEquals(3 * 2, price.nsfBytes(), "unscaled 1 to 5678: two bytes");
    assertEquals(8.0 * 8, price.plainBits(), 1e-12, "a decimal's plain slot is a long");
    ColumnCompression note = table.columns().get(2);
    // Plain: 3 rows + 1 offsets, 2 bytes, and a one-byte validity bitmap.
    assertEquals(4 * 4 + 2 + 1, note.plainBytes());
  }
}
