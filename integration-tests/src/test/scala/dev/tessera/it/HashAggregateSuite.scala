package dev.tessera.it

import dev.tessera.spark.exec.{HostToDeviceExec, TesseraHashAggregateExec}
import org.apache.spark.sql.DataFrame

/** Hash aggregates on the GPU against Spark's own results. */
class HashAggregateSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  // The suite checks the GPU's min and max of doubles too: they differ from Spark's only in the
  // sign of a zero where a group holds both -0.0 and 0.0 (see the test of that).
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false", "spark.tessera.incompatibleOps.enabled" -> "true")

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(0, 200000, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 13 = 0 THEN NULL ELSE id % 1000 END AS k",
      "CAST(id % 7 AS INT) AS k2",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id * 7 % 10007 - 5000 AS INT) END AS v",
      "CAST(id % 97 AS DOUBLE) / 3 AS d",
      "CAST(id % 5 AS DECIMAL(8, 2)) AS dec").createOrReplaceTempView("a")
    // One column of every supported type, with NULLs; f and g also hold NaN, -0.0 and 0.0.
    spark.range(0, 20000, 1, 3).selectExpr(
      "CAST(id % 4 AS INT) AS grp",
      "CASE WHEN id % 17 = 0 THEN NULL ELSE id % 3 = 0 END AS bo",
      "CASE WHEN id % 17 = 1 THEN NULL ELSE CAST(id % 200 - 100 AS TINYINT) END AS by",
      "CASE WHEN id % 17 = 2 THEN NULL ELSE CAST(id * 31 % 3000 - 1500 AS SMALLINT) END AS sh",
      "CASE WHEN id % 17 = 3 THEN NULL ELSE CAST(id * 7919 % 100003 AS INT) END AS i",
      "CASE WHEN id % 17 = 4 THEN NULL ELSE id * 1000003 % 9999991 - 5000000 END AS l",
      "CASE WHEN id % 17 = 5 THEN NULL WHEN id % 19 = 0 THEN float('NaN')" +
        " WHEN id % 23 = 0 THEN float(-0.0) WHEN id % 29 = 0 THEN float(0.0)" +
        " ELSE CAST(id % 50 + 1 AS FLOAT) / 4 END AS f",
      "CASE WHEN id % 17 = 6 THEN NULL WHEN id % 19 = 0 THEN double('NaN')" +
        " WHEN id % 23 = 0 THEN -0.0 WHEN id % 29 = 0 THEN 0.0" +
        " ELSE CAST(id % 70 + 1 AS DOUBLE) / 8 END AS g",
      "CASE WHEN id % 17 = 7 THEN NULL ELSE date_add(DATE'2020-01-01', CAST(id % 400 AS INT))" +
        " END AS dt",
      "CASE WHEN id % 17 = 8 THEN NULL ELSE timestamp_seconds(1600000000 + id % 300 * 3607)" +
        " END AS ts",
      "CASE WHEN id % 17 = 9 THEN NULL ELSE CAST(id % 100000 / 100.0 AS DECIMAL(8, 2)) END AS de",
      "CASE WHEN id % 17 = 10 THEN NULL ELSE concat('s', CAST(id % 50 AS STRING)) END AS s")
      .createOrReplaceTempView("typed")
  }

  private def sql(query: String): DataFrame = spark.sql(query)

  private def aggregates(df: DataFrame): Seq[TesseraHashAggregateExec] =
    nodes(finalPlan(df)).collect { case a: TesseraHashAggregateExec => a }

  /**
   * Checks the result against Spark, that `gpuAggregates` aggregates ran on the GPU, and that
   * each reads its batches straight from the host, or from the GPU aggregate below it (Spark's
   * DISTINCT plans): the filter and projection below it are fused into it, not a node of their
   * own.
   */
  private def checkAggregate(query: String, gpuAggregates: Int = 2): DataFrame = {
    val df = checkGpu(sql(query), gpuNodeCount = 0)
    val gpu = aggregates(df)
    assert(gpu.size == gpuAggregates, s"CPU because ${cpuReasons(df)}\n${finalPlan(df)}")
    gpu.foreach(a => assert(a.child.isInstanceOf[HostToDeviceExec] ||
      a.child.isInstanceOf[TesseraHashAggregateExec], s"\n${finalPlan(df)}"))
    df
  }

  private def cpuReasons(df: DataFrame): Seq[String] =
    nodes(finalPlan(df)).flatMap(cpuReasonsOn)

  test("count, sum, min and max grouped by a long key with nulls, across a shuffle") {
    checkAggregate("SELECT k, count(*), count(v), sum(v), min(v), max(v), min(d), max(dec)" +
      " FROM a GROUP BY k")
  }

  test("several keys, and a filter and computed keys fused into the aggregate") {
    val df = checkAggregate(
      "SELECT k2, k % 10 AS m, sum(id), count(1) FROM a WHERE v > 0 GROUP BY k2, m")
    assert(aggregates(df).exists(_.steps.stream().anyMatch(_.isFilter)), s"\n${finalPlan(df)}")
    // Explain shows the fused program; the metrics count what ran.
    assert(finalPlan(df).toString.contains("fused [Filter"), s"\n${finalPlan(df)}")
    val partial = aggregates(df).find(_.steps.stream().anyMatch(_.isFilter)).get
    assert(partial.metrics()("numOutputRows").value > 0)
    assert(partial.metrics()("gpuBytesRead").value > 0)
    assert(partial.metrics()("tableFlushes").value == 0)
  }

  test("from one group to a million, and a skewed hot key") {
    for ((groups, rows) <- Seq(1 -> 200000, 1000 -> 200000, 1000000 -> 1000000)) {
      checkAggregate(s"SELECT id % $groups AS g, count(*), sum(id), max(id)" +
        s" FROM range(0, $rows, 1, 4) GROUP BY g")
    }
    checkAggregate("SELECT CASE WHEN id % 10 < 9 THEN 0 ELSE id END AS hot, count(*), sum(id)" +
      " FROM range(0, 300000, 1, 4) GROUP BY hot")
  }

  test("every supported type as a grouping key") {
    for (key <- Seq("bo", "by", "sh", "i", "l", "f", "g", "dt", "ts", "de", "s")) {
      checkAggregate(s"SELECT $key, count(*), sum(i), min(l) FROM typed GROUP BY $key")
    }
    checkAggregate("SELECT s, bo, dt, count(*) FROM typed GROUP BY s, bo, dt")
  }

  test("every supported type as a value: count, min and max; sum and avg of numbers") {
    for (v <- Seq("bo", "by", "sh", "i", "l", "dt", "ts", "de")) {
      checkAggregate(s"SELECT grp, count($v), min($v), max($v) FROM typed GROUP BY grp")
    }
    checkAggregate("SELECT grp, count(s) FROM typed GROUP BY grp")
    for (v <- Seq("by", "sh", "i", "l", "de")) {
      checkAggregate(s"SELECT grp, sum($v), avg($v) FROM typed GROUP BY grp")
      checkAggregate(s"SELECT sum($v), avg($v), count($v) FROM typed")
    }
  }

  test("min and max of floating point: on the CPU by default, the GPU's differ only in a zero's sign") {
    for (v <- Seq("f", "g")) {
      val query = s"SELECT grp, count($v), min($v), max($v) FROM typed GROUP BY grp"
      withConf("spark.tessera.incompatibleOps.enabled" -> "false") {
        val df = checkGpu(sql(query), gpuNodeCount = -1)
        assert(aggregates(df).isEmpty)
        assert(cpuReasons(df).exists(r => r.contains("-0.0") &&
          r.contains("spark.tessera.incompatibleOps.enabled")), cpuReasons(df))
      }
      // On: Spark's min of -0.0 and 0.0 is whichever it met first; the GPU's may be the other.
      def zeroless(rows: Array[org.apache.spark.sql.Row]): Seq[String] =
        rows.toSeq.map(_.toString.replace("-0.0", "0.0")).sorted
      val expected = withConf("spark.tessera.enabled" -> "false")(zeroless(sql(query).collect()))
      val df = sql(query)
      assert(zeroless(df.collect()) == expected)
      assert(aggregates(df).size == 2, s"\n${finalPlan(df)}")
    }
  }

  test("all-null and mixed-null keys and values") {
    checkAggregate("SELECT CAST(NULL AS INT) AS n, count(*), sum(v) FROM a GROUP BY n")
    checkAggregate("SELECT k2, sum(CAST(NULL AS BIGINT)), avg(CAST(NULL AS INT))," +
      " max(CAST(NULL AS DOUBLE)), sum(CAST(NULL AS DECIMAL(5, 2))), count(CAST(NULL AS INT))" +
      " FROM a GROUP BY k2")
    checkAggregate("SELECT k, v, count(*), sum(dec), avg(dec) FROM a WHERE id < 5000" +
      " GROUP BY k, v")
    // NULL beside the values a generated kernel's tables use as markers: Long.MIN_VALUE (an
    // empty entry's key), Long.MIN_VALUE + 1 (a NULL key in the per-block table) and 0 (a NULL
    // key's value in the global table); alone and as the first of two keys.
    sql("SELECT CASE id % 6 WHEN 0 THEN NULL WHEN 1 THEN -9223372036854775807L" +
      " WHEN 2 THEN -9223372036854775807L - 1 WHEN 3 THEN 0L ELSE id % 5 END AS m," +
      " CASE WHEN id % 4 = 0 THEN NULL ELSE k2 END AS n, v, id FROM a")
      .createOrReplaceTempView("markers")
    checkAggregate("SELECT m, count(*), sum(v), min(id), max(id) FROM markers GROUP BY m")
    checkAggregate("SELECT m, n, count(*), sum(id), min(id), max(id) FROM markers GROUP BY m, n")
  }

  test("floating point keys group NaN together and -0.0 with 0.0, as Spark does") {
    sql("SELECT * FROM VALUES (double('NaN'), 1), (-0.0, 2), (0.0, 3), (double('NaN'), 4)," +
      " (1.5, 5), (CAST(NULL AS DOUBLE), 6) AS x(f, n)").repartition(3)
      .createOrReplaceTempView("fk")
    checkAggregate("SELECT f, sum(n), count(*) FROM fk GROUP BY f")
    checkAggregate("SELECT d, max(id) FROM a GROUP BY d")
  }

  test("global and grouped aggregates over an empty input give Spark's initial values") {
    checkAggregate("SELECT count(*), sum(v), max(id) FROM a")
    val functions = "count(*), count(v), sum(v), sum(dec), avg(v), avg(dec), min(d), max(dec)"
    checkAggregate(s"SELECT $functions FROM a WHERE id < 0")
    // Adaptive execution would replace a grouped aggregate of nothing by an empty relation.
    withConf("spark.sql.adaptive.enabled" -> "false") {
      checkAggregate(s"SELECT k2, $functions FROM a WHERE id < 0 GROUP BY k2")
    }
  }

  test("many batches per task, and adaptive execution off") {
    withConf("spark.tessera.batchSizeBytes" -> "16k") {
      checkAggregate("SELECT k2, count(*), sum(v), avg(dec), min(d) FROM a GROUP BY k2")
      checkAggregate("SELECT count(*), sum(dec), avg(v) FROM a WHERE k > 100")
    }
    withConf("spark.sql.adaptive.enabled" -> "false") {
      checkAggregate("SELECT k, sum(dec), avg(v) FROM a GROUP BY k")
    }
  }

  test("integer sums wrap without ANSI; computed inputs run in the fused projection") {
    checkAggregate("SELECT k2, sum(id * 46116860184273879) FROM a GROUP BY k2")
    checkAggregate("SELECT k2, sum(big) FROM (SELECT k2, id * 46116860184273879 AS big FROM a)" +
      " GROUP BY k2")
    checkAggregate("SELECT k2, sum(v * k2), avg(v + 1), sum(CAST(dec AS DECIMAL(6, 2)) * 2) FROM a GROUP BY k2")
  }

  test("ANSI mode: overflow raises Spark's error, also in the fused projection") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      // The sum's total overflows.
      assert(checkSameError(sql("SELECT k2, sum(9223372036854775807 - id) FROM a GROUP BY k2"))
        == "ARITHMETIC_OVERFLOW")
      // The computed input overflows: the batch is replayed through Spark's expressions.
      assert(checkSameError(sql("SELECT k2, sum(id * 46116860184273879) FROM a GROUP BY k2"))
        == "ARITHMETIC_OVERFLOW")
      // No error where the filter drops the overflowing rows first.
      checkAggregate("SELECT k2, sum(v + 2147483647), count(*) FROM a WHERE v < 0 GROUP BY k2")
      checkAggregate("SELECT k2, count(*), sum(v), avg(v), sum(dec), avg(dec), min(d)" +
        " FROM a GROUP BY k2")
    }
  }

  test("decimal sums and averages as decimals, when Spark does not sum them as longs") {
    // Spark's optimizer sums decimals of up to 8 digits (averages: 11) as their unscaled longs;
    // without that rule the GPU computes Spark's decimal buffers (sum, isEmpty; sum, count).
    withConf("spark.sql.optimizer.excludedRules" ->
        "org.apache.spark.sql.catalyst.optimizer.DecimalAggregates") {
      checkAggregate("SELECT k2, sum(dec), avg(dec), count(dec) FROM a GROUP BY k2")
      checkAggregate("SELECT sum(dec), avg(dec) FROM a")
      checkAggregate("SELECT sum(dec), avg(dec) FROM a WHERE id < 0")
      checkAggregate("SELECT k2, sum(CAST(NULL AS DECIMAL(5, 2))) FROM a GROUP BY k2")
      withConf("spark.sql.ansi.enabled" -> "true") {
        checkAggregate("SELECT k, sum(dec), avg(dec) FROM a GROUP BY k")
      }
    }
  }

  test("avg of integers and decimals") {
    checkAggregate("SELECT k, avg(v), avg(dec), avg(id) FROM a GROUP BY k")
    checkAggregate("SELECT avg(v), avg(dec) FROM a")
  }

  test("count(DISTINCT), alone and with other aggregates") {
    // Partial and PartialMerge over (k2, k), then Partial and Final of the distinct count.
    checkAggregate("SELECT k2, count(DISTINCT k) FROM a GROUP BY k2", gpuAggregates = 4)
    checkAggregate("SELECT k2, count(DISTINCT k), sum(v), max(d) FROM a GROUP BY k2",
      gpuAggregates = 4)
    checkAggregate("SELECT count(DISTINCT k2), count(*) FROM a", gpuAggregates = 4)
    // Several distinct columns: Spark expands the rows; whatever stays on the CPU, the result
    // is Spark's.
    checkGpu(sql("SELECT k2, count(DISTINCT k), count(DISTINCT v), sum(v) FROM a GROUP BY k2"),
      gpuNodeCount = -1)
  }

  test("a TPC-H Q1-like query") {
    // From Parquet, so the date filter is a plain column comparison the aggregate fuses.
    val dir = java.nio.file.Files.createTempDirectory("lineitem").resolve("t").toString
    spark.range(0, 100000, 1, 4).selectExpr(
      "CASE id % 3 WHEN 0 THEN 'A' WHEN 1 THEN 'N' ELSE 'R' END AS l_returnflag",
      "CASE WHEN id % 7 < 4 THEN 'F' ELSE 'O' END AS l_linestatus",
      "CAST(id % 50 + 1 AS DECIMAL(7, 2)) AS l_quantity",
      "CAST(id * 37 % 100000 AS DECIMAL(7, 2)) AS l_extendedprice",
      "CAST(id % 11 AS DECIMAL(7, 2)) AS l_discount_amount",
      "date_add(DATE'1992-01-01', CAST(id % 2500 AS INT)) AS l_shipdate")
      .write.parquet(dir)
    spark.read.parquet(dir).createOrReplaceTempView("lineitem")
    val df = checkAggregate("""
      SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
        sum(l_extendedprice) AS sum_base_price,
        sum(l_extendedprice - l_discount_amount) AS sum_disc_price,
        avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, count(*) AS count_order
      FROM lineitem WHERE l_shipdate <= date_sub(DATE'1998-12-01', 90)
      GROUP BY l_returnflag, l_linestatus""")
    assert(aggregates(df).exists(_.steps.stream().anyMatch(_.isFilter)), s"\n${finalPlan(df)}")
  }

  test("SSB-like queries") {
    spark.range(0, 100000, 1, 4).selectExpr(
      "CAST(id * 7919 % 100000 AS INT) AS lo_extendedprice",
      "CAST(id % 11 AS INT) AS lo_discount",
      "CAST(id % 50 + 1 AS INT) AS lo_quantity",
      "date_add(DATE'1992-01-01', CAST(id % 2500 AS INT)) AS lo_orderdate",
      "concat('MFGR#22', CAST(id % 40 AS STRING)) AS p_brand1",
      "CAST(id * 13 % 1000 AS INT) AS lo_revenue").createOrReplaceTempView("lineorder")
    checkAggregate("SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM lineorder" +
      " WHERE year(lo_orderdate) = 1993 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25")
    checkAggregate("SELECT year(lo_orderdate) AS y, p_brand1, sum(lo_revenue) FROM lineorder" +
      " WHERE p_brand1 >= 'MFGR#2221' GROUP BY y, p_brand1")
  }

  test("unsupported aggregates stay on the CPU with a reason") {
    def reasonsOf(query: String): Seq[String] = {
      val df = checkGpu(sql(query), gpuNodeCount = -1)
      assert(aggregates(df).isEmpty, s"\n${finalPlan(df)}")
      cpuReasons(df)
    }
    assert(reasonsOf("SELECT k2, sum(d) FROM a GROUP BY k2")
      .exists(_.contains("floating point sum depends on the order")))
    assert(reasonsOf("SELECT k2, avg(d) FROM a GROUP BY k2")
      .exists(_.contains("floating point sum depends on the order")))
    assert(reasonsOf("SELECT k2, try_sum(v) FROM a GROUP BY k2").exists(_.contains("try_sum")))
    assert(reasonsOf("SELECT k2, sum(CAST(v AS DECIMAL(12, 2))) FROM a GROUP BY k2")
      .exists(_.contains("DECIMAL(22,2)")))
    assert(reasonsOf("SELECT k2, first(v) FROM a GROUP BY k2").exists(_.contains("first")))
  }
}
