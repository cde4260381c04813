package dev.tessera.it

import java.math.BigDecimal
import java.sql.{Date, Timestamp}
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** Filters and projections on the GPU against Spark's own results. */
class FilterProjectSuite extends AnyFunSuite with GpuQueryTest {
  // Spark 4 runs in ANSI mode by default; the legacy semantics are tested here, ANSI below.
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false")

  private val schema = StructType(Seq(
    StructField("b", BooleanType), StructField("y", ByteType), StructField("h", ShortType),
    StructField("i", IntegerType), StructField("l", LongType), StructField("f", FloatType),
    StructField("d", DoubleType), StructField("dt", DateType), StructField("ts", TimestampType),
    StructField("dec", DecimalType(12, 2)), StructField("s", StringType)))

  private val rows: Seq[Row] = {
    val edge = Seq(
      Row(true, Byte.MaxValue, Short.MinValue, Int.MaxValue, Long.MinValue, Float.NaN, -0.0,
        Date.valueOf("2000-02-29"), Timestamp.valueOf("2020-01-01 00:00:00"),
        new BigDecimal("9999999999.99"), "grüße"),
      Row(false, Byte.MinValue, Short.MaxValue, Int.MinValue, Long.MaxValue, -0.0f, Double.NaN,
        Date.valueOf("1900-03-01"), Timestamp.valueOf("1969-12-31 23:59:59"),
        new BigDecimal("-0.01"), ""),
      Row(null, null, null, null, null, null, null, null, null, null, null),
      Row(true, 0.toByte, 0.toShort, 0, 0L, Float.PositiveInfinity, 0.0,
        Date.valueOf("1970-01-01"), Timestamp.valueOf("2000-01-01 12:00:00"),
        new BigDecimal("0.00"), "日本語"))
    val regular = (0 until 3000).map { k =>
      def nul[T](v: T): Any = if (k % 11 == 5) null else v
      Row(nul(k % 2 == 0), nul((k % 100 - 50).toByte), nul((k * 7 - 9000).toShort), nul(k * 1001 - 77),
        nul(k.toLong * 1000003L), nul(k / 7.0f - 50), nul(k * 0.37 - 400), nul(Date.valueOf(
          java.time.LocalDate.of(1990, 1, 1).plusDays(k * 3L))), nul(new Timestamp(k * 1000L * 3600)),
        nul(new BigDecimal(k * 17 - 3000).movePointLeft(2)), nul(s"s${k % 37}" + ("ab" * (k % 5))))
    }
    edge ++ regular
  }

  private def table(): DataFrame =
    spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), schema)

  override def beforeAll(): Unit = {
    super.beforeAll()
    table().createOrReplaceTempView("t")
  }

  private def sql(q: String): DataFrame = spark.sql(q)

  test("a filter and a projection fuse into one GPU node, with transitions at its ends") {
    val df = checkGpu(sql("SELECT i + 1 AS a, l * 2 AS c, s FROM t WHERE i > 0"))
    assertTransitions(df)
  }

  test("GPU nodes report rows, batches, kernel time and bytes copied as SQL metrics") {
    val df = checkGpu(sql("SELECT i * 2 AS x, s FROM t WHERE i > 1000"))
    val expectedRows = rows.count(r => !r.isNullAt(3) && r.getInt(3) > 1000)
    val gpu = gpuNodes(df).head
    assert(gpu.metrics()("numOutputRows").value == expectedRows)
    assert(gpu.metrics()("numOutputBatches").value >= 1)
    assert(gpu.metrics()("gpuKernelTime").value > 0)
    val all = nodes(finalPlan(df))
    val upload = all.collectFirst { case h: dev.tessera.spark.exec.HostToDeviceExec => h }.get
    assert(upload.metrics()("bytesToDevice").value >= rows.size * 4L) // at least column i
    // The upload's time in its three parts: each step timed, none left at Spark's initial -1.
    Seq("inputTime", "stagingTime", "transferTime").foreach { m =>
      assert(upload.metrics()(m).value > 0, m)
    }
    val download = all.collectFirst { case d: dev.tessera.spark.exec.DeviceToHostExec => d }.get
    assert(download.metrics()("numOutputRows").value == expectedRows)
    assert(download.metrics()("bytesToHost").value >= expectedRows * 4L)
  }

  test("integer arithmetic wraps as Spark's does without ANSI") {
    checkGpu(sql("SELECT i + 2147483647, l - 9223372036854775807, y * y, h + h, -i, abs(i)," +
      " i % 7, pmod(i, 7), l % -3, pmod(l, -3) FROM t"))
  }

  test("floating point: NaN and -0.0 compare as Spark compares them") {
    checkGpu(sql("SELECT d, f FROM t WHERE d = 0.0 OR d > 1e300 OR d = double('NaN') OR f < 0"))
    checkGpu(sql("SELECT d / 3.0, d % 2.5, f * 2, f + f, d / 0.0, -d, abs(f) FROM t"))
  }

  test("comparisons, boolean logic and null tests with three-valued logic") {
    checkGpu(sql("SELECT b AND (i > 10), b OR (i < 0), NOT b, i <=> NULL, i IS NULL," +
      " s IS NOT NULL, dt < date'1995-01-01', ts >= timestamp'1970-01-01 00:00:00' FROM t"))
  }

  test("IN, CASE WHEN, IF and COALESCE") {
    checkGpu(sql("SELECT i IN (1, 2, 1001, NULL), l IN (0, 1000003), s IN ('s1', 's2ab')," +
      " CASE WHEN i > 1000 THEN 'big' WHEN i > 0 THEN 'small' ELSE s END," +
      " IF(b, y, h), COALESCE(s, 'none'), COALESCE(i, l) FROM t"))
  }

  test("strings: prefixes, suffixes, containment, ordering and length in UTF-8") {
    checkGpu(sql("SELECT s, length(s) FROM t WHERE s LIKE 's1%' OR s LIKE '%ab' OR" +
      " contains(s, 'ü') OR s < 's' OR s = ''"))
  }

  test("casts among numbers, decimals and booleans") {
    checkGpu(sql("SELECT CAST(i AS SMALLINT), CAST(l AS INT), CAST(d AS INT), CAST(f AS BIGINT)," +
      " CAST(d AS TINYINT), CAST(i AS DOUBLE), CAST(dec AS DOUBLE), CAST(dec AS INT)," +
      " CAST(i AS DECIMAL(12, 2)), CAST(dec AS DECIMAL(8, 1)), CAST(b AS INT), CAST(i AS BOOLEAN)" +
      " FROM t"))
  }

  test("decimal arithmetic keeps Spark's precision and scale") {
    checkGpu(sql("SELECT dec + dec, dec - 1.5, dec * 2, -dec, abs(dec) FROM t WHERE dec > 0"))
  }

  test("dates: year, month and day of month") {
    checkGpu(sql("SELECT year(dt), month(dt), dayofmonth(dt) FROM t WHERE year(dt) >= 1991"))
  }

  test("empty input, every row filtered out, no row filtered out") {
    checkGpu(sql("SELECT i FROM t WHERE 1 = 0"), gpuNodeCount = 0) // Spark prunes it itself
    checkGpu(sql("SELECT i FROM t WHERE i > 2147483647"))
    checkGpu(sql("SELECT i, s FROM t WHERE i IS NULL OR i IS NOT NULL"))
    checkGpu(table().filter("i < 0").limit(0).selectExpr("i + 1"), gpuNodeCount = 0)
  }

  test("a filter above a sort keeps the sorted order") {
    // Spark pushes the filter below the sort: one GPU node under it, one projection above it.
    checkGpu(sql("SELECT i, s FROM (SELECT * FROM t ORDER BY l DESC, i) WHERE i % 3 = 1"),
      gpuNodeCount = 2, ordered = true)
  }

  test("many small batches, and batches coalesced up to the target size") {
    withConf("spark.tessera.batchSizeBytes" -> "1024") {
      checkGpu(sql("SELECT i * 3, s FROM t WHERE i % 2 = 0"))
    }
    checkGpu(spark.range(0, 2000000, 1, 4).selectExpr("id * 7 AS x").filter("x % 3 = 0"))
  }

  test("Parquet and cached sources feed the GPU") {
    val dir = java.nio.file.Files.createTempDirectory("tessera-parquet").toString
    table().write.mode("overwrite").parquet(dir)
    checkGpu(spark.read.parquet(dir).filter("i > 100").selectExpr("i - 1", "s", "dec * 2"))
    val cached = table().cache()
    try checkGpu(cached.filter("l > 0").selectExpr("l % 97", "d")) finally cached.unpersist()
  }

  test("Parquet dictionary-encoded columns uploaded as ids and decoded on the device") {
    // Columns of few distinct values (Parquet writes them dictionary-encoded, and Spark hands
    // them over as ids) of every type Spark decodes lazily, with NULLs, NaN, -0.0, negative
    // values and empty strings; one of distinct values (written plain); small row groups (a dictionary each) and
    // small reader batches, so that one staged batch holds several dictionaries; and a second
    // file with a small dictionary page, whose chunks fall back to plain pages partway through.
    val dir = java.nio.file.Files.createTempDirectory("tessera-dictionary").toString
    val data = spark.range(0, 20000, 1, 1).selectExpr(
      "CAST(IF(id % 13 = 5, NULL, id % 7 - 3) AS BYTE) AS y",
      "CAST(IF(id % 11 = 5, NULL, (id % 50) * 1000 - 25000) AS SHORT) AS h",
      "CAST(IF(id % 9 = 5, NULL, (id % 97) * 22000000 - 1000000000) AS INT) AS i",
      "IF(id % 7 = 5, NULL, (id % 31) * 300000000000 - 4000000000000) AS l",
      "CAST(IF(id % 10 = 5, NULL, CASE id % 5 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0.0'" +
        " ELSE CAST((id % 40) / 8.0 AS STRING) END) AS FLOAT) AS f",
      "CAST(IF(id % 8 = 5, NULL, CASE id % 6 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0.0'" +
        " ELSE CAST((id % 60) * -1.5 AS STRING) END) AS DOUBLE) AS d",
      "IF(id % 12 = 5, NULL, date_add(DATE'1999-12-01', CAST(id % 40 AS INT))) AS dt",
      "IF(id % 15 = 5, NULL, TIMESTAMP'2020-01-01 00:00:00' + make_interval(0, 0, 0, 0," +
        " CAST(id % 24 AS INT))) AS ts",
      "CAST(IF(id % 14 = 5, NULL, (id % 25) / 4 - 3) AS DECIMAL(7, 2)) AS dec7",
      "CAST((id % 45) * 1000.125 AS DECIMAL(15, 3)) AS dec15",
      "IF(id % 16 = 5, NULL, IF(id % 23 = 7, '', concat('city ', CAST(id % 23 AS STRING)," +
        " IF(id % 2 = 0, 'ü', '')))) AS city",
      "CAST(id AS INT) AS distinct_i",
      "CAST(id % 3000 AS INT) AS mid_i")
    def query = spark.read.parquet(s"$dir/a", s"$dir/b").filter("i > -900000000 OR i IS NULL")
      .selectExpr("y", "h + 1", "i - 1", "l", "f", "d * 2", "dt", "ts", "dec7 * 2", "dec15",
        "city", "distinct_i", "mid_i")
    def decodedColumns(df: DataFrame): Long = nodes(finalPlan(df)).collectFirst {
      case h: dev.tessera.spark.exec.HostToDeviceExec => h
    }.get.metrics()("dictionaryColumnsDecoded").value
    // INT64 timestamps and dates read without rebasing: Spark decodes those lazily too.
    withConf("spark.sql.parquet.outputTimestampType" -> "TIMESTAMP_MICROS") {
      withConf("spark.sql.parquet.datetimeRebaseModeInRead" -> "CORRECTED") {
        data.write.mode("overwrite").option("parquet.block.size", "65536").parquet(s"$dir/a")
        data.write.mode("overwrite").option("parquet.block.size", "65536")
          .option("parquet.dictionary.page.size", "512").parquet(s"$dir/b")
        // On (the default).
        withConf("spark.sql.parquet.columnarReaderBatchSize" -> "700") {
          for (offHeap <- Seq("false", "true")) {
            withConf("spark.sql.columnVector.offheap.enabled" -> offHeap) {
              assert(decodedColumns(checkGpu(query)) > 0,
                s"no column was decoded on the device (off-heap $offHeap)")
            }
          }
        }
        // Off: the same query, every value staged as Spark decodes it.
        withConf("spark.tessera.upload.dictionaryIds.enabled" -> "false") {
          assert(decodedColumns(checkGpu(query)) == 0)
        }
      }
    }
  }

  test("with adaptive execution off, and around a shuffle") {
    withConf("spark.sql.adaptive.enabled" -> "false") {
      checkGpu(sql("SELECT i + 1 AS a FROM t WHERE i > 5"))
    }
    // The aggregates run on the GPU too, the filter and projection fused into the partial one:
    // no filter/project node is left.
    checkGpu(sql("SELECT k, count(*) FROM (SELECT i % 10 AS k FROM t WHERE i > 0) GROUP BY k"),
      gpuNodeCount = 0)
  }

  test("ANSI mode: overflow and division by zero raise Spark's errors") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      assert(checkSameError(sql("SELECT i + 2147483647 FROM t WHERE i > 0")) ==
        "ARITHMETIC_OVERFLOW")
      assert(checkSameError(sql("SELECT i % (i - i) FROM t WHERE i IS NOT NULL")) ==
        "REMAINDER_BY_ZERO")
      assert(checkSameError(sql("SELECT d / (d - d) FROM t WHERE d = 1.0 OR d > 3")) ==
        "DIVIDE_BY_ZERO")
      // No error where the failing rows are filtered out first.
      checkGpu(sql("SELECT i + 1 FROM t WHERE i < 100"))
    }
  }

  test("unsupported expressions stay on the CPU and explain says why") {
    // The filter stays on the CPU; the projection above it still runs on the GPU.
    val df = checkGpu(sql("SELECT i FROM t WHERE s RLIKE 's1.*'"))
    val reasons = nodes(finalPlan(df)).flatMap(cpuReasonsOn)
    assert(reasons.exists(_.contains("rlike")), reasons)
  }

  test("df.explain shows the GPU nodes") {
    val df = sql("SELECT i + 1 FROM t WHERE i > 0")
    val text = df.queryExecution.explainString(org.apache.spark.sql.execution.SimpleMode)
    df.collect()
    val executed = finalPlan(df).toString
    assert(executed.contains("TesseraFusedExec"), executed)
    assert(Seq("HostToDeviceExec", "TesseraFusedExec", "DeviceToHost").forall(text.contains),
      text)
    // With a shuffle, adaptive execution explains its final plan once the query has run.
    val grouped = sql("SELECT i % 3, count(*) FROM t WHERE i > 0 GROUP BY 1")
    grouped.collect()
    val adaptive = grouped.queryExecution.explainString(org.apache.spark.sql.execution.SimpleMode)
    assert(adaptive.contains("isFinalPlan=true") && adaptive.contains("TesseraHashAggregateExec"),
      adaptive)
  }

  test("local relations and spark.range feed the GPU") {
    val session = spark
    import session.implicits._
    val local = Seq((1, "a"), (2, null), (3, "ccc"), (-4, "ü")).toDF("x", "s")
    // Without this rule Spark evaluates a query over a local relation while optimizing it.
    withConf("spark.sql.optimizer.excludedRules" ->
        "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation") {
      checkGpu(local.filter("x > 0").selectExpr("x * 10", "coalesce(s, 'none')"))
    }
    checkGpu(spark.range(-50, 50).selectExpr("id % 7 AS r").filter("r <> 0"))
  }

  test("null-heavy columns") {
    val sparse = spark.range(0, 50000, 1, 3).selectExpr(
      "CASE WHEN id % 10 = 0 THEN id END AS a", "CASE WHEN id % 3 = 0 THEN 'x' END AS s")
    checkGpu(sparse.filter("a IS NOT NULL OR s IS NULL").selectExpr("a * 2", "s", "a + 1 > 5"))
  }

  test("broadcast and shuffle exchanges around GPU nodes") {
    val small = spark.range(0, 20).selectExpr("id AS k", "id * 100 AS v").filter("k % 2 = 0")
    val big = sql("SELECT i % 20 AS k, l FROM t WHERE l > 0")
    // The build side's filter/project, and the stream side's fused with the join's probe and
    // the projection above it.
    checkGpu(big.join(org.apache.spark.sql.functions.broadcast(small), "k")
      .selectExpr("k", "v + l"), gpuNodeCount = 2)
  }

  test("spark.tessera.explain=NOT_ON_GPU tells which node stayed on the CPU and why") {
    LogCapture("dev.tessera") { log =>
      withConf("spark.tessera.explain" -> "NOT_ON_GPU") {
        sql("SELECT i + 1 FROM t WHERE s RLIKE 's1.*'").collect()
      }
      val report = log.at(org.apache.logging.log4j.Level.WARN).filter(_.contains("Tessera plan"))
      assert(report.nonEmpty, "no explain report was logged")
      val text = report.mkString("\n")
      assert(text.contains("!Exec <Filter> cannot run on GPU because"), text)
      assert(text.contains("rlike"), text)
      assert(!text.contains("*Exec"), s"NOT_ON_GPU lists only CPU nodes:\n$text")
    }
  }

  test("an expression switched off by its setting stays on the CPU, naming the setting") {
    withConf("spark.tessera.expression.Add.enabled" -> "false") {
      val df = checkGpu(sql("SELECT i + 1 FROM t"), gpuNodeCount = 0)
      val reasons = nodes(finalPlan(df)).flatMap(cpuReasonsOn)
      assert(reasons.exists(_.contains("spark.tessera.expression.Add.enabled")), reasons)
    }
  }
}
