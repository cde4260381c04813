package dev.tessera.it

import dev.tessera.spark.exec.TesseraHashAggregateExec
import org.apache.spark.sql.DataFrame

/**
 * Sums whose Spark outcome depends on the order of the rows: an ANSI long sum raises when a
 * running sum overflows (even if the total comes back), and avg of longs adds doubles, rounding
 * each time. The GPU's exact sums must give Spark's outcome: its own where it can show no order
 * matters, Spark's order replayed where it cannot.
 */
class OrderDependentSumSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  private val Max = Long.MaxValue
  private val Min = Long.MinValue

  private def gpuAggregates(df: DataFrame): Int =
    nodes(finalPlan(df)).count(_.isInstanceOf[TesseraHashAggregateExec])

  /** Spark's and Tessera's results are equal, and both aggregates ran on the GPU. */
  private def check(query: String): Unit = {
    val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
    assert(gpuAggregates(df) == 2, s"\n${finalPlan(df)}")
  }

  // One partition for VALUES: Spark's running sums are then the prefixes of its rows.
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.leafNodeDefaultParallelism" -> "1")

  /** The rows in this order, each once in every group 0 until `groups`. */
  private def values(rows: Seq[Long], groups: Int = 1): String =
    rows.flatMap(v => (0 until groups).map(g => s"($g, ${v}L)"))
      .mkString("(SELECT * FROM VALUES ", ", ", " AS t(g, v))")

  private def ansiError(query: String): String =
    withConf("spark.sql.ansi.enabled" -> "true")(checkSameError(spark.sql(query)))

  test("ANSI sum: a running sum that overflows raises, though the total fits") {
    for (rows <- Seq(Seq(Max, 1L, -2L), Seq(Min, -1L, 5L), Seq(1L, Max, -Max))) {
      assert(ansiError(s"SELECT sum(v) FROM ${values(rows)}") == "ARITHMETIC_OVERFLOW", rows)
      assert(ansiError(s"SELECT g, sum(v) FROM ${values(rows, groups = 2)} GROUP BY g")
        == "ARITHMETIC_OVERFLOW", rows)
    }
  }

  test("ANSI sum: values near the limits whose running sums never overflow") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      for (rows <- Seq(Seq(Max, -1L, 1L), Seq(Min, 1L, -1L), Seq(Max, Min, Max), Seq(1L, Max - 1,
          -5L))) {
        check(s"SELECT sum(v), count(*) FROM ${values(rows)}")
        check(s"SELECT g, sum(v) FROM ${values(rows, groups = 2)} GROUP BY g")
      }
    }
  }

  test("ANSI sum: the total overflows; Spark's message, with its try_add hint") {
    val query = s"SELECT sum(v) FROM ${values(Seq(Max, Max))}"
    assert(ansiError(query) == "ARITHMETIC_OVERFLOW")
    withConf("spark.sql.ansi.enabled" -> "true") {
      val e = intercept[Exception](spark.sql(query).collect())
      val message = TestSessions.messages(e)
      assert(message.contains("try_add") && !message.contains("try_sum"), message)
    }
  }

  test("ANSI sums of ints are shown exact by the row count, without helper sums") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      check("SELECT id % 3 AS g, sum(CAST(id AS INT) * 1000), sum(CAST(id % 30000 AS SMALLINT))" +
        " FROM range(0, 100000, 1, 2) GROUP BY g")
    }
  }

  test("avg of longs adds doubles in Spark's order") {
    for (ansi <- Seq("false", "true")) {
      withConf("spark.sql.ansi.enabled" -> ansi) {
        // Values near the limits: each double addition rounds.
        check(s"SELECT avg(v) FROM ${values(Seq(Max, Min, Max, 3L, Min, Max, -7L))}")
        check(s"SELECT g, avg(v) FROM ${values(Seq(Max, Min, Max, 3L, Min, Max, -7L, Max), 3)}" +
          " GROUP BY g")
        check(s"SELECT avg(v) FROM ${values(Seq(Max, Max, Max, 1L, Min, Min, Min, Min))}")
        // Sums past 2^53: Spark's result is 1.00000000000282752E17, not the exact mean.
        check("SELECT avg(CAST(1e17 AS BIGINT) + 3 * id) FROM range(0, 200000, 1, 1)")
        check("SELECT id % 4 AS g, avg(CAST(1e17 AS BIGINT) + 3 * id) FROM range(0, 200000, 1, 1)" +
          " GROUP BY g")
        // Small values need no replay, and mix with groups that do.
        check("SELECT id % 2 AS g, avg(CASE WHEN id % 2 = 0 THEN id ELSE 4611686018427387904 + id" +
          " END) FROM range(0, 50000, 1, 2) GROUP BY g")
      }
    }
  }
}
