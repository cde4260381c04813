package dev.tessera.it

import dev.tessera.spark.exec.TesseraHashAggregateExec
import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/** Hash aggregates on the GPU against Spark's own results. */
class HashAggregateSuite extends AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false")

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(0, 200000, 1, 4).selectExpr(
      "id",
      "CASE WHEN id % 13 = 0 THEN NULL ELSE id % 1000 END AS k",
      "CAST(id % 7 AS INT) AS k2",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id * 7 % 10007 - 5000 AS INT) END AS v",
      "CAST(id % 97 AS DOUBLE) / 3 AS d",
      "CAST(id % 5 AS DECIMAL(9, 2)) AS dec").createOrReplaceTempView("a")
  }

  private def aggregateNodes(df: DataFrame): Int =
    nodes(finalPlan(df)).count(_.isInstanceOf[TesseraHashAggregateExec])

  /** Checks the result against Spark and that the partial and final aggregates ran on the GPU. */
  private def checkAggregate(query: String, gpuAggregates: Int = 2): Unit = {
    val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
    assert(aggregateNodes(df) == gpuAggregates, s"\n${finalPlan(df)}")
  }

  test("count, sum, min and max grouped by a long key with nulls, across a shuffle") {
    checkAggregate("SELECT k, count(*), count(v), sum(v), min(v), max(v), min(d), max(dec)" +
      " FROM a GROUP BY k")
  }

  test("several keys, and a filter fused below the aggregate") {
    checkAggregate("SELECT k2, k % 10 AS m, sum(id), count(1) FROM a WHERE v > 0 GROUP BY k2, m")
  }

  test("floating point keys group NaN together and -0.0 with 0.0, as Spark does") {
    spark.sql("SELECT * FROM VALUES (double('NaN'), 1), (-0.0, 2), (0.0, 3), (double('NaN'), 4)," +
      " (1.5, 5), (CAST(NULL AS DOUBLE), 6) AS x(f, n)").repartition(3)
      .createOrReplaceTempView("fk")
    checkAggregate("SELECT f, sum(n), count(*) FROM fk GROUP BY f")
    checkAggregate("SELECT d, max(id) FROM a GROUP BY d")
  }

  test("global aggregates, also over an empty input") {
    checkAggregate("SELECT count(*), sum(v), max(id) FROM a")
    checkAggregate("SELECT count(*), sum(v), max(id) FROM a WHERE id < 0")
  }

  test("integer sums wrap without ANSI") {
    // A computed input keeps the partial aggregate on the CPU; the final one runs on the GPU.
    checkAggregate("SELECT k2, sum(id * 46116860184273879) FROM a GROUP BY k2", gpuAggregates = 1)
    checkAggregate("SELECT k2, sum(big) FROM (SELECT k2, id * 46116860184273879 AS big FROM a)" +
      " GROUP BY k2")
  }

  test("unsupported aggregates stay on the CPU with a reason") {
    val df = checkGpu(spark.sql("SELECT k2, avg(v) FROM a GROUP BY k2"), gpuNodeCount = -1)
    assert(aggregateNodes(df) == 0)
    val reasons = nodes(finalPlan(df)).flatMap(_.getTagValue(
      dev.tessera.spark.rewrite.FilterProjectRewriter.CPU_REASON))
    assert(reasons.exists(_.contains("avg")), reasons)
  }
}
