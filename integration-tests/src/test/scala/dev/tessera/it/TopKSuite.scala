package dev.tessera.it

import dev.tessera.spark.exec.TesseraTopKExec
import org.apache.spark.sql.{DataFrame, Row}

/**
 * ORDER BY ... LIMIT k (Spark's TakeOrderedAndProjectExec): each partition's first k rows on the
 * GPU (TesseraTopKExec), Spark merging them, against Spark's own results. Where the order is total
 * the rows must be the same, in order; where keys tie, the sort keys must be the same in order,
 * and every row one the query without LIMIT has (a row Spark could return).
 */
class TopKSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false")


  override def beforeAll(): Unit = {
    super.beforeAll()
    // 5 partitions; keys with heavy ties, NULLs, NaN, -0.0, empty strings and boundaries.
    spark.range(0, 20000, 1, 5).selectExpr(
      "id",
      "CASE WHEN id % 13 = 0 THEN NULL ELSE CAST(id % 6 AS INT) END AS k",
      "CASE id % 9 WHEN 0 THEN CAST('NaN' AS DOUBLE) WHEN 1 THEN -0.0D WHEN 2 THEN 0.0D" +
        " WHEN 3 THEN NULL WHEN 4 THEN CAST('-Infinity' AS DOUBLE)" +
        " ELSE (id % 101) / 7.0D - 5 END AS d",
      "CASE WHEN id % 11 = 0 THEN NULL WHEN id % 11 = 1 THEN ''" +
        " ELSE concat(CAST(id % 37 AS STRING), 'é') END AS s",
      "CASE id % 1000 WHEN 7 THEN 9223372036854775807L WHEN 8 THEN -9223372036854775808L" +
        " ELSE id * 7919 % 100003 END AS v",
      "CAST(id % 301 / 8.0 AS DECIMAL(12, 3)) AS dec",
      "date_add(DATE'2020-01-01', CAST(id % 400 AS INT)) AS dt",
      "CASE WHEN id < -1 THEN CAST(id AS INT) END AS n",
      "id % 3 = 0 AS b").createOrReplaceTempView("t")
  }

  private def topKNodes(df: DataFrame): Seq[TesseraTopKExec] =
    nodes(finalPlan(df)).collect { case t: TesseraTopKExec => t }

  /** The top-k ran on the GPU. */
  private def assertTopKPlacement(df: DataFrame): Unit =
    assert(topKNodes(df).size == 1, s"no GPU top-k:\n${finalPlan(df)}")

  /** A query whose ORDER BY is total (a unique column last): the same rows in the same order. */
  private def checkTotal(query: String): DataFrame = {
    val df = checkGpu(spark.sql(query), gpuNodeCount = -1, ordered = true)
    assertTopKPlacement(df)
    df
  }

  /**
   * A query whose ORDER BY may tie: `keys` (the first output columns) in the same order as
   * Spark's, and every row one of the query's rows without LIMIT (`unlimited`).
   */
  private def checkTies(query: String, unlimited: String, keys: Int): Unit = {
    def run(enabled: Boolean): (Seq[Row], DataFrame) =
      withConf("spark.tessera.enabled" -> enabled.toString) {
        val df = spark.sql(query)
        (df.collect().toSeq, df)
      }
    val (expected, _) = run(enabled = false)
    val (actual, df) = run(enabled = true)
    assertTopKPlacement(df)
    def keyStrings(rows: Seq[Row]) = rows.map(r => (0 until keys).map(r.get).toString)
    assert(keyStrings(actual) == keyStrings(expected),
      s"\nGPU: ${actual.take(20)}\nSpark: ${expected.take(20)}\n${finalPlan(df)}")
    val all = withConf("spark.tessera.enabled" -> "false") {
      spark.sql(unlimited).collect().map(_.toString).groupBy(identity).view.mapValues(_.length)
    }.toMap
    val returned = actual.map(_.toString).groupBy(identity).view.mapValues(_.length)
    returned.foreach { case (row, n) =>
      assert(all.getOrElse(row, 0) >= n, s"$row is not a row of the query (or too many times)")
    }
  }

  test("distinct keys, descending") {
    checkTotal("SELECT id, v, s FROM t ORDER BY id DESC LIMIT 7")
  }

  test("heavy ties on one key: the keys in order, each row one of the table's") {
    checkTies("SELECT k, id, s FROM t ORDER BY k LIMIT 25", "SELECT k, id, s FROM t", keys = 1)
    checkTies("SELECT k, d, id FROM t ORDER BY k DESC NULLS FIRST, d LIMIT 100",
      "SELECT k, d, id FROM t", keys = 2)
  }

  test("all-NULL keys") {
    checkTies("SELECT n, id FROM t ORDER BY n LIMIT 5", "SELECT n, id FROM t", keys = 1)
  }

  test("NaN, -0.0 and infinities in Spark's order, both directions and NULL orders") {
    for (order <- Seq("ASC NULLS FIRST", "ASC NULLS LAST", "DESC NULLS FIRST", "DESC NULLS LAST")) {
      checkTotal(s"SELECT d, id FROM t ORDER BY d $order, id LIMIT 40")
    }
  }

  test("descending strings, empty strings and NULLs") {
    checkTotal("SELECT s, id FROM t ORDER BY s DESC, id LIMIT 30")
    checkTotal("SELECT s, id FROM t ORDER BY s ASC NULLS LAST, id DESC LIMIT 30")
  }

  test("mixed directions and NULL orders over several keys of other types") {
    checkTotal("SELECT k, dec, dt, b, v, id FROM t" +
      " ORDER BY k ASC NULLS LAST, dec DESC, dt, b DESC, v, id LIMIT 60")
  }

  test("k of 1, 256, 257 and more than the input") {
    for (k <- Seq(1, 256, 257)) {
      checkTotal(s"SELECT v, id FROM t ORDER BY v DESC, id LIMIT $k")
    }
    // 200 rows pass the filter (Spark drops a LIMIT above the table's own row count).
    checkTotal("SELECT v, id FROM t WHERE id % 100 = 0 ORDER BY v DESC, id LIMIT 1000")
  }

  test("empty input") {
    checkTotal("SELECT id, s FROM t WHERE id < 0 ORDER BY s, id LIMIT 10")
  }

  test("a filter and a computed column below fuse with the top-k; a computed sort key") {
    val df = checkTotal("SELECT id, v % 7 AS m FROM t WHERE v > 50000 ORDER BY v % 13, id" +
      " LIMIT 33")
    val steps = topKNodes(df).head.steps()
    assert(steps.size() >= 2 && steps.get(0).isFilter, s"not fused: $steps\n${finalPlan(df)}")
  }

  test("many small batches per partition") {
    withConf("spark.tessera.batchSizeBytes" -> "4096") {
      checkTotal("SELECT v, k, id FROM t ORDER BY k NULLS LAST, v, id LIMIT 300")
    }
  }

  test("OFFSET with LIMIT") {
    checkTotal("SELECT id, s FROM t ORDER BY s, id LIMIT 10 OFFSET 5")
  }

  test("as a stage under more operators (the shuffle to one partition, then Spark's merge)") {
    val df = checkGpu(spark.sql("SELECT count(*), sum(v), max(id) FROM" +
      " (SELECT v, id FROM t ORDER BY v, id LIMIT 500)"), gpuNodeCount = -1)
    assertTopKPlacement(df)
  }

  test("GROUP BY ... ORDER BY revenue DESC LIMIT 10") {
    checkTotal("SELECT k, sum(v) AS revenue FROM t GROUP BY k ORDER BY revenue DESC, k LIMIT 10")
  }

  test("explain says the merge stays on the CPU by design") {
    val explained = LogCapture("dev.tessera.spark.ExplainLog") { log =>
      withConf("spark.tessera.explain" -> "ALL") {
        spark.sql("SELECT id FROM t ORDER BY v LIMIT 3").collect()
      }
      log.at(org.apache.logging.log4j.Level.WARN).mkString("\n")
    }
    assert(explained.contains("TakeOrderedAndProject") && explained.contains("by design"),
      explained)
  }
}
