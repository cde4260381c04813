package dev.tessera.ssb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** SF 0.01, generated twice with seed 7: in 3 tasks and in 1. */
class SsbGeneratorTest {
  private static final double SF = 0.01;

  private static SparkSession spark;
  private static Path root;
  private static Path data;

  @BeforeAll
  static void generate() throws IOException {
    spark = SparkSession.builder().master("local[2]").appName("SsbGeneratorTest")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate();
    root = Files.createTempDirectory("ssb-test");
    data = root.resolve("seed7-3tasks");
    SsbGenerator.generate(spark, SF, 7, data, 3);
    SsbGenerator.generate(spark, SF, 7, root.resolve("seed7-1task"), 1);
    SsbTables.register(spark, data, false);
  }

  @AfterAll
  static void stop() throws IOException {
    if (spark != null) {
      spark.stop();
    }
    if (root != null) {
      try (Stream<Path> paths = Files.walk(root)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static long count(String sql) {
    return spark.sql(sql).first().getLong(0);
  }

  private static Dataset<Row> read(String dir, String table) {
    return spark.read().parquet(root.resolve(dir).resolve(table).toString());
  }

  @Test
  void rowCountsFollowTheFormulas() {
    SsbScale scale = SsbScale.of(SF);
    assertEquals(scale.customers(), count("SELECT count(*) FROM customer"));
    assertEquals(scale.suppliers(), count("SELECT count(*) FROM supplier"));
    assertEquals(scale.parts(), count("SELECT count(*) FROM part"));
    assertEquals(2556, count("SELECT count(*) FROM date"));
    assertEquals(scale.orders(), count("SELECT count(DISTINCT lo_orderkey) FROM lineorder"));
    long lines = count("SELECT count(*) FROM lineorder");
    // 1 to 7 lines an order, 4 on average: within 2% of 6,000,000 x SF at this size.
    assertTrue(Math.abs(lines - 6_000_000 * SF) < 0.02 * 6_000_000 * SF, "lines: " + lines);
    assertEquals(0, count("SELECT count(*) FROM (SELECT lo_orderkey, count(*) AS n,"
        + " max(lo_linenumber) AS m FROM lineorder GROUP BY lo_orderkey)"
        + " WHERE n < 1 OR n > 7 OR m != n"));
  }

  @Test
  void theSameSeedGivesTheSameRowsWhateverTheTasks() {
    for (String table : SsbTables.NAMES) {
      assertEquals(fingerprint(read("seed7-3tasks", table)),
          fingerprint(read("seed7-1task", table)), table);
    }
  }

  @Test
  void anotherSeedGivesOtherRows() {
    SsbScale scale = SsbScale.of(SF);
    for (long seed : new long[] {8, 9}) {
      assertNotEquals(rows(new LineorderChunks(7, scale)), rows(new LineorderChunks(seed, scale)));
      assertNotEquals(rows(new DimensionChunks.Customers(7, 300)),
          rows(new DimensionChunks.Customers(seed, 300)));
      assertNotEquals(rows(new DimensionChunks.Suppliers(7, 20)),
          rows(new DimensionChunks.Suppliers(seed, 20)));
      assertNotEquals(rows(new DimensionChunks.Parts(7, 2000)),
          rows(new DimensionChunks.Parts(seed, 2000)));
    }
    // The same seed gives the same chunk, however often it is generated.
    assertEquals(rows(new LineorderChunks(7, scale)), rows(new LineorderChunks(7, scale)));
  }

  /**
   * The row count and sums of two hashes of every row: whatever order the files hold the rows
   * in, equal tables agree, and a changed value changes the sums (one pass, no shuffle; the
   * 64-bit hash is cut to 40 bits so that its sum cannot overflow).
   */
  private static Row fingerprint(Dataset<Row> table) {
    return table.selectExpr("count(*)", "sum(hash(*))",
        "sum(shiftrightunsigned(xxhash64(*), 24))").first();
  }

  /** The first chunk's rows. */
  private static List<Row> rows(TableChunks chunks) {
    List<Row> rows = new ArrayList<>();
    chunks.call(0).forEachRemaining(rows::add);
    return rows;
  }

  @Test
  void measuresStayInTheirDomains() {
    assertEquals(0, count("SELECT count(*) FROM lineorder WHERE lo_discount NOT BETWEEN 0 AND 10"
        + " OR lo_quantity NOT BETWEEN 1 AND 50 OR lo_tax NOT BETWEEN 0 AND 8"
        + " OR lo_revenue != CAST(CAST(lo_extendedprice AS BIGINT) * (100 - lo_discount) / 100"
        + " AS INT) OR lo_supplycost <= 0 OR lo_extendedprice < lo_quantity"
        + " OR lo_commitdate <= lo_orderdate OR lo_ordtotalprice < lo_revenue"
        + " OR lo_orderpriority NOT IN ('1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECI', '5-LOW')"
        + " OR lo_shipmode NOT IN ('REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB')"));
    // Every value of the domains turns up at this size.
    assertEquals(11, count("SELECT count(DISTINCT lo_discount) FROM lineorder"));
    assertEquals(50, count("SELECT count(DISTINCT lo_quantity) FROM lineorder"));
  }

  @Test
  void partsAndPlacesFollowTheSpecificationsFormats() {
    assertEquals(0, count("SELECT count(*) FROM part WHERE p_mfgr NOT RLIKE '^MFGR#[1-5]$'"
        + " OR p_category NOT RLIKE '^MFGR#[1-5][1-5]$' OR substr(p_category, 1, 6) != p_mfgr"
        + " OR p_brand1 NOT RLIKE '^MFGR#[1-5][1-5]([1-9]|[1-3][0-9]|40)$'"
        + " OR substr(p_brand1, 1, 7) != p_category OR p_size NOT BETWEEN 1 AND 50"));
    assertEquals(25, count("SELECT count(DISTINCT c_nation) FROM customer"));
    assertEquals(5, count("SELECT count(DISTINCT c_region) FROM customer"));
    assertEquals(0, count("SELECT count(*) FROM customer WHERE length(c_city) != 10"
        + " OR substr(c_city, 1, 9) != rpad(substr(c_nation, 1, 9), 9, ' ')"
        + " OR c_custkey < 1"));
    assertTrue(count("SELECT count(*) FROM customer WHERE c_city = 'UNITED KI1'") > 0);
  }

  @Test
  void everyForeignKeyHasItsDimensionRow() {
    // One job: each left join leaves NULL where a key has no row.
    Row missing = spark.sql("SELECT count_if(c_custkey IS NULL), count_if(p_partkey IS NULL),"
        + " count_if(s_suppkey IS NULL), count_if(o.d_datekey IS NULL),"
        + " count_if(c.d_datekey IS NULL) FROM lineorder"
        + " LEFT JOIN customer ON lo_custkey = c_custkey"
        + " LEFT JOIN part ON lo_partkey = p_partkey"
        + " LEFT JOIN supplier ON lo_suppkey = s_suppkey"
        + " LEFT JOIN date o ON lo_orderdate = o.d_datekey"
        + " LEFT JOIN date c ON lo_commitdate = c.d_datekey").first();
    for (int i = 0; i < 5; i++) {
      assertEquals(0L, missing.getLong(i), "keys without a row in join " + i + ": " + missing);
    }
  }

  @Test
  void theDateTableCoversSevenYears() {
    Row r = spark.sql("SELECT min(d_year), max(d_year), count(DISTINCT d_year), min(d_datekey),"
        + " max(d_datekey), count(DISTINCT d_yearmonth) FROM date").first();
    assertEquals(1992, r.getInt(0));
    assertEquals(1998, r.getInt(1));
    assertEquals(7, r.getLong(2));
    assertEquals(19920101, r.getInt(3));
    assertEquals(19981230, r.getInt(4));
    assertEquals(84, r.getLong(5));
    Row d = spark.sql("SELECT * FROM date WHERE d_datekey = 19971225").first();
    assertEquals("December 25, 1997", d.getAs("d_date"));
    assertEquals("Thursday", d.getAs("d_dayofweek"));
    assertEquals("Dec1997", d.getAs("d_yearmonth"));
    assertEquals("Christmas", d.getAs("d_sellingseason"));
    assertEquals(5, (int) d.getAs("d_daynuminweek"));
    assertEquals(1, (int) d.getAs("d_holidayfl"));
    assertEquals(1, (int) d.getAs("d_weekdayfl"));
  }

  @Test
  void all13QueriesResolveOnTheRegisteredViews() {
    // Analysis only: the integration tests run them. A view named date needs no quoting.
    for (SsbQuery q : SsbQueries.all()) {
      spark.sql(q.sql()).queryExecution().assertAnalyzed();
    }
    assertTrue(spark.sql(SsbQueries.byName("1.1").sql()).first().getLong(0) > 0);
  }

  @Test
  void aMissingTableDirectoryIsNamed() {
    Path empty = root.resolve("nothing-here");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SsbTables.register(spark, empty, false));
    assertTrue(e.getMessage().contains(empty.resolve("lineorder").toString()), e.getMessage());
  }
}
