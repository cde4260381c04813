package dev.tessera.it

/**
 * Queries a new user ran that Tessera got wrong or failed: each is checked against Spark, with
 * AQE on and off.
 */
class JoinRegressionSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false")

  private def check(query: String): Unit = {
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        checkGpu(spark.sql(query), gpuNodeCount = -1)
      }
    }
  }

  private val twoSides =
    """(SELECT * FROM VALUES ('one', 1), ('two', 2), ('three', 3) AS t(k, v1)) a
      |NATURAL JOIN (SELECT * FROM VALUES ('one', 1), ('two', 22), ('one', 5) AS t(k, v2)) b"""
      .stripMargin

  test("a string key repeated on the broadcast side matches once per build row") {
    check(s"SELECT * FROM $twoSides")
    check("SELECT * FROM (SELECT * FROM VALUES ('one', 1), ('two', 2) AS t(k, v1)) a" +
      " JOIN (SELECT * FROM VALUES ('one', 1), ('two', 22), ('one', 5) AS t(k, v2)) b USING (k)")
    check("SELECT * FROM (SELECT * FROM VALUES ('one', 1), ('two', 2), (NULL, 4) AS t(k, v1)) a" +
      " LEFT JOIN (SELECT * FROM VALUES ('one', 1), ('two', 22), ('one', 5) AS t(k, v2)) b" +
      " ON a.k = b.k")
  }

  test("a composite key repeated on the broadcast side matches once per build row") {
    check("SELECT * FROM (SELECT * FROM VALUES (1, 'a', 1), (2, 'b', 2) AS t(k1, k2, v1)) a" +
      " JOIN (SELECT * FROM VALUES (1, 'a', 10), (1, 'a', 11), (2, 'b', 12), (2, 'c', 13)" +
      " AS t(k1, k2, v2)) b USING (k1, k2)")
  }

  test("a correlated IN over a join with a count(DISTINCT) above it") {
    check(
      """WITH a AS (SELECT * FROM VALUES ('x', 1, 10L), ('y', 2, 20L), ('x', 3, 30L), ('z', 4, 40L)
        |           AS a(k, b, d)),
        |     c AS (SELECT * FROM VALUES ('x', 0, 1), ('x', 5, 2), ('y', 1, 3) AS c(k, b2, e)),
        |     s AS (SELECT * FROM VALUES ('x', 10L), ('y', 21L) AS s(k2, d2))
        |SELECT count(DISTINCT a.k), a.b, c.k, c.b2, c.e
        |FROM a LEFT JOIN c ON a.k = c.k
        |WHERE a.k IN (SELECT k2 FROM s WHERE a.d = s.d2) AND a.b > c.b2
        |GROUP BY a.k, a.b, c.k, c.b2, c.e""".stripMargin)
  }

  test("a union of equally hash-partitioned GPU children keeps the partitioning it reports") {
    // Found by QueryFuzzSuite (seed 205, query 127). Each child's semi join (sort-merge) leaves
    // its rows hash-partitioned by k, so Spark aggregates the union without a shuffle: the union
    // combines partition i of each child, which it does only while every child (a GPU node here)
    // reports that partitioning; else it concatenates them and a key's rows land in several.
    spark.range(0, 3000, 1, 3).selectExpr("CAST(id % 97 AS INT) AS k", "CAST(id AS DOUBLE) AS v")
      .createOrReplaceTempView("u1")
    spark.range(0, 2000, 1, 2).selectExpr("CAST(id % 89 AS INT) AS k", "id * 3.0 AS v")
      .createOrReplaceTempView("u2")
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      withConf("spark.sql.adaptive.enabled" -> "false") {
        checkGpu(spark.sql("SELECT k, max(v) FROM (" +
          " SELECT k, v FROM u1 WHERE k IN (SELECT k FROM u2)" +
          " UNION ALL SELECT k, v FROM u2 WHERE k IN (SELECT k FROM u1)) GROUP BY k"),
          gpuNodeCount = -1)
      }
    }
  }

  /** Stream rows whose key k + 1 overflows in row 7, and a build side of `buildRows` rows. */
  private def overflowingKeys(buildRows: Int): Unit = {
    spark.range(0, 100, 1, 2)
      .selectExpr("CASE WHEN id = 7 THEN 9223372036854775807L ELSE id END AS k", "id AS v")
      .createOrReplaceTempView("stream_side")
    // A filter the optimizer cannot evaluate: the build side is empty only when it runs.
    spark.range(0, 10).where(s"id < $buildRows").selectExpr("id AS k", "id * 10 AS w")
      .createOrReplaceTempView("build_side")
  }

  test("an empty build side never evaluates the keys of an inner, semi or anti join") {
    // Found by QueryFuzzSuite (seed 201, query 197). Spark's HashJoin short-circuits an
    // EmptyHashedRelation: an inner or semi join outputs nothing and an anti join every row,
    // without computing a stream key, so a key that would overflow raises nothing.
    overflowingKeys(buildRows = 0)
    withConf("spark.sql.ansi.enabled" -> "true") {
      for (aqe <- Seq("true", "false")) {
        withConf("spark.sql.adaptive.enabled" -> aqe) {
          for (query <- Seq(
              "SELECT s.v, b.w FROM stream_side s JOIN build_side b ON s.k + 1 = b.k",
              "SELECT v FROM stream_side s WHERE s.k + 1 IN (SELECT k FROM build_side)",
              "SELECT v FROM stream_side s" +
                " WHERE NOT EXISTS (SELECT 1 FROM build_side b WHERE b.k = s.k + 1)")) {
            val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
            // Without AQE the join runs on the GPU (AQE may drop a join with an empty side).
            assert(aqe == "true" || gpuNodes(df).nonEmpty, s"no GPU node in\n${finalPlan(df)}")
          }
        }
      }
    }
  }

  test("a left outer join raises its keys' errors even when no build column is used") {
    for (buildRows <- Seq(0, 5)) {
      overflowingKeys(buildRows)
      withConf("spark.sql.ansi.enabled" -> "true") {
        withConf("spark.sql.adaptive.enabled" -> "false") {
          val query = "SELECT s.v FROM stream_side s LEFT JOIN build_side b ON s.k + 1 = b.k"
          assert(checkSameError(spark.sql(query)) == "ARITHMETIC_OVERFLOW")
          withConf("spark.tessera.enabled" -> "true") {
            assert(gpuNodes(spark.sql(query)).nonEmpty, "the join should run on the GPU")
          }
        }
      }
    }
  }

  test("an ANSI error after a semi join over a broadcast chosen at run time is Spark's") {
    // Found by QueryFuzzSuite (seed 305, query 60), on its tables. Under AQE the semi join
    // becomes a broadcast join over the finished shuffle; the CPU replay that finds Spark's
    // error passed the semi join's rows on under the join's output attributes instead of the
    // stream rows' own, so the cast after it read the wrong column and failed with an internal
    // error (IllegalStateException) instead of Spark's CAST_OVERFLOW.
    dev.tessera.it.fuzz.DataGen.register(spark, 305)
    withConf("spark.sql.ansi.enabled" -> "true") {
      withConf("spark.sql.adaptive.enabled" -> "true") {
        assert(checkSameError(spark.sql("SELECT fa.dt AS c0, fa.i AS c1, fa.k_ts AS c3," +
          " CAST(CAST(fa.l AS SMALLINT) AS INT) AS c4 FROM fact fa WHERE EXISTS (SELECT 1" +
          " FROM dim_t sq WHERE sq.k_s = fa.k_s AND (sq.ts >= TIMESTAMP'9999-12-31" +
          " 23:59:59.999999'))")) == "CAST_OVERFLOW")
      }
    }
  }
}
