package dev.tessera.it

import dev.tessera.spark.exec.{HostToDeviceExec, TesseraHashAggregateExec, TesseraPipelineExec}
import dev.tessera.spark.expr.JoinProbe
import org.apache.spark.sql.DataFrame
import scala.jdk.CollectionConverters._

/** Broadcast hash joins on the GPU against Spark's own results, with AQE on and off. */
class HashJoinSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.sql.ansi.enabled" -> "false")

  override def beforeAll(): Unit = {
    super.beforeAll()
    // The fact table: keys with NULLs and values past every dimension's keys (no match).
    spark.range(0, 30000, 1, 3).selectExpr(
      "id",
      "CASE WHEN id % 17 = 0 THEN NULL ELSE CAST(id % 120 AS INT) END AS k",
      "CAST(id % 60 AS BIGINT) * 1000000007 AS kl",
      "date_add(DATE'2021-01-01', CAST(id % 90 AS INT)) AS dt",
      "CAST(id % 70 / 4.0 AS DECIMAL(10, 2)) AS dec",
      "CASE WHEN id % 19 = 0 THEN NULL ELSE concat('s', CAST(id % 80 AS STRING)) END AS s",
      "CAST(id % 7 AS SMALLINT) AS k2",
      "CAST(id * 7 % 1000 AS INT) AS v").createOrReplaceTempView("fact")
    // Unique keys 0..99 (one NULL key row), a category and a name.
    spark.range(0, 101).selectExpr(
      "CASE WHEN id = 100 THEN NULL ELSE CAST(id AS INT) END AS k",
      "CAST(id % 5 AS INT) AS cat",
      "concat('name', CAST(id AS STRING)) AS name",
      "CAST(id AS BIGINT) * 1000000007 AS kl",
      "date_add(DATE'2021-01-01', CAST(id AS INT)) AS dt",
      "CAST(id / 4.0 AS DECIMAL(10, 2)) AS dec",
      "concat('s', CAST(id AS STRING)) AS s",
      "CAST(id % 7 AS SMALLINT) AS k2").createOrReplaceTempView("dim")
    // Repeated keys: each key 0..39 three times, with NULL payloads now and then.
    spark.range(0, 120).selectExpr(
      "CAST(id % 40 AS INT) AS k",
      "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id AS INT) END AS p",
      "concat('d', CAST(id AS STRING)) AS s").createOrReplaceTempView("dup")
    spark.range(0, 0).selectExpr("CAST(id AS INT) AS k", "CAST(id AS INT) AS cat")
      .createOrReplaceTempView("nothing")
  }

  /** The joins that ran on the GPU: the probes of every GPU pipeline. */
  private def joins(df: DataFrame): Seq[JoinProbe] =
    pipelines(df).flatMap(_.probes.asScala)

  private def pipelines(df: DataFrame): Seq[TesseraPipelineExec] =
    nodes(finalPlan(df)).collect { case p: TesseraPipelineExec => p }

  /** The one fused aggregate of `df`'s plan that probes three tables (`context` names the run). */
  private def threeProbeAggregate(df: DataFrame, context: String): TesseraHashAggregateExec = {
    val fused = pipelines(df).collect {
      case a: TesseraHashAggregateExec if a.probes.size == 3 => a
    }
    assert(fused.size == 1, s"$context:\n${finalPlan(df)}")
    fused.head
  }

  private def cpuReasons(df: DataFrame): Seq[String] =
    nodes(finalPlan(df)).flatMap(cpuReasonsOn)

  /** Checks the result against Spark with AQE on and off, and that `gpuJoins` joins ran on the GPU. */
  private def checkJoin(query: String, gpuJoins: Int = 1): Unit = {
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
        assert(joins(df).size == gpuJoins,
          s"AQE $aqe: CPU because ${cpuReasons(df)}\n${finalPlan(df)}")
      }
    }
  }

  test("inner join on a unique int key, NULL keys on both sides") {
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, f.v, d.name, d.cat FROM fact f" +
      " JOIN dim d ON f.k = d.k")
  }

  test("inner join with repeated build keys expands 1:N") {
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.p, d.s FROM fact f JOIN dup d ON f.k = d.k")
  }

  test("left outer join, unique and repeated keys") {
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, f.k, d.name FROM fact f" +
      " LEFT JOIN dim d ON f.k = d.k")
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.p, d.s FROM fact f LEFT JOIN dup d ON f.k = d.k")
  }

  test("right outer join with the build side on the left") {
    checkJoin("SELECT /*+ BROADCAST(d) */ d.s, f.id FROM dup d RIGHT JOIN fact f ON d.k = f.k")
  }

  test("left semi and left anti joins") {
    checkJoin("SELECT /*+ BROADCAST(d) */ * FROM fact f LEFT SEMI JOIN dup d ON f.k = d.k")
    checkJoin("SELECT /*+ BROADCAST(d) */ * FROM fact f LEFT ANTI JOIN dup d ON f.k = d.k")
    checkJoin("SELECT /*+ BROADCAST(d) */ id FROM fact f WHERE EXISTS" +
      " (SELECT 1 FROM dim d WHERE d.k = f.k)")
  }

  test("long, date, decimal and string keys, and multi-column keys") {
    for (key <- Seq("kl", "dt", "dec", "s")) {
      checkJoin(s"SELECT /*+ BROADCAST(d) */ f.id, d.name FROM fact f JOIN dim d ON f.$key = d.$key")
    }
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.name FROM fact f" +
      " JOIN dim d ON f.s = d.s AND f.k2 = d.k2")
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.name FROM fact f" +
      " LEFT JOIN dim d ON f.k = d.k AND f.dt = d.dt")
  }

  test("an empty build side and an empty probe side") {
    withConf("spark.sql.adaptive.enabled" -> "false") {
      val df = checkGpu(spark.sql("SELECT /*+ BROADCAST(n) */ f.id, n.cat FROM fact f" +
        " LEFT JOIN nothing n ON f.k = n.k"), gpuNodeCount = -1)
      assert(joins(df).size == 1, s"\n${finalPlan(df)}")
    }
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.name FROM (SELECT * FROM fact WHERE v < 0) f" +
      " JOIN dim d ON f.k = d.k")
  }

  test("a filter and projection above a join fuse with its probe") {
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val df = checkGpu(spark.sql("SELECT /*+ BROADCAST(d) */ f.id * 2 AS x, d.s FROM fact f" +
          " JOIN dup d ON f.k = d.k AND f.v > d.p WHERE f.id % 3 = 0"), gpuNodeCount = -1)
        val withProbe = gpuNodes(df).filter(_.probes.size == 1)
        assert(withProbe.size == 1, s"AQE $aqe:\n${finalPlan(df)}")
        val node = withProbe.head
        assert( node.steps.asScala.exists(_.isFilter) &&
          node.child.isInstanceOf[HostToDeviceExec], s"AQE $aqe:\n${finalPlan(df)}")
      }
    }
  }

  test("an inner join with a condition besides the keys runs on the GPU") {
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.name FROM fact f" +
      " JOIN dim d ON f.k = d.k AND f.v > d.cat * 100")
    checkJoin("SELECT /*+ BROADCAST(d) */ f.id, d.s FROM fact f" +
      " JOIN dup d ON f.k = d.k AND f.v > d.p")
  }

  test("a star join of three dimensions and a group-by is one fused pipeline") {
    val query = "SELECT /*+ BROADCAST(a), BROADCAST(b), BROADCAST(c) */ a.cat, b.s," +
      " count(*), sum(f.v) FROM fact f JOIN dim a ON f.k = a.k JOIN dim b ON f.kl = b.kl" +
      " JOIN dim c ON f.dt = c.dt WHERE c.cat < 4 GROUP BY a.cat, b.s"
    checkJoin(query, gpuJoins = 3)
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
        // Filter -> probe -> probe -> probe -> project -> partial aggregate: one node (one
        // kernel per fact batch) over the fact table's upload.
        val fused = pipelines(df).collect {
          case a: TesseraHashAggregateExec if a.probes.size == 3 => a
        }
        assert(fused.size == 1 && fused.head.child.isInstanceOf[HostToDeviceExec],
          s"AQE $aqe:\n${finalPlan(df)}")
        // The time its tasks spent getting the three tables (on a thread of their own).
        assert(fused.head.metrics()("joinTablesTime").value > 0, s"AQE $aqe")
      }
    }
  }

  test("a star join's program probes its filtered dimension before the whole tables") {
    // a and b are whole tables (keys without NULLs, so no filter); c is filtered. The program
    // probes c first, then a and b; the plan's steps (explain, the CPU replay) keep Spark's
    // order a, b, c.
    val query = "SELECT /*+ BROADCAST(a), BROADCAST(b), BROADCAST(c) */ a.cat, b.s, c.cat," +
      " count(*), sum(f.v) FROM fact f JOIN dim a ON f.kl = a.kl JOIN dim b ON f.dt = b.dt" +
      " JOIN dim c ON f.k = c.k WHERE c.cat < 2 GROUP BY a.cat, b.s, c.cat"
    for (aqe <- Seq("true", "false")) {
      withConf("spark.sql.adaptive.enabled" -> aqe) {
        val fused = threeProbeAggregate(checkGpu(spark.sql(query), gpuNodeCount = -1), s"AQE $aqe")
        val probes = fused.probes.asScala
        assert(probes.map(_.wholeBuildTable) == Seq(true, true, false), s"AQE $aqe: $probes")
        val programOrder = fused.pipeline.fused.tables.asScala
          .map(t => probes.find(_.table == t).get)
        assert(programOrder == Seq(probes(2), probes(0), probes(1)), s"AQE $aqe")
      }
    }
  }

  test("the program probes the build side that keeps the fewest of its table's rows first") {
    // Three filtered build sides of one table (101 rows): a keeps 40 rows, b 10, c 15. With AQE,
    // the broadcasts' rows over the table's (a cached table's count, or the rows a Parquet scan
    // read) give each probe its share, and the program probes b, c, a; without AQE nothing has
    // counted them, and it keeps Spark's order a, b, c.
    val query = "SELECT /*+ BROADCAST(a), BROADCAST(b), BROADCAST(c) */ a.cat, b.s, c.name," +
      " count(*), sum(f.v) FROM fact f JOIN d3 a ON f.k = a.k JOIN d3 b ON f.kl = b.kl" +
      " JOIN d3 c ON f.dt = c.dt WHERE a.cat < 2 AND b.k < 10 AND c.k < 15" +
      " GROUP BY a.cat, b.s, c.name"
    def check(form: String): Unit = {
      for ((aqe, expected) <- Seq("true" -> Seq(1, 2, 0), "false" -> Seq(0, 1, 2))) {
        withConf("spark.sql.adaptive.enabled" -> aqe) {
          val fused = threeProbeAggregate(checkGpu(spark.sql(query), gpuNodeCount = -1),
            s"$form, AQE $aqe")
          val probes = fused.probes.asScala
          val programOrder = fused.pipeline.fused.tables.asScala
            .map(t => probes.indexWhere(_.table == t))
          assert(programOrder == expected, s"$form, AQE $aqe: $probes, shares " +
            probes.map(_.keptShare))
        }
      }
    }
    val dim = spark.table("dim")
    dim.cache().count()
    try {
      dim.createOrReplaceTempView("d3")
      check("cached")
    } finally {
      dim.unpersist(blocking = true)
    }
    val dir = java.nio.file.Files.createTempDirectory("hash-join-suite")
    try {
      // One file, one row group: a scan that skips row groups by their statistics (b.k < 10 of
      // two files) counts fewer rows, which makes that table's share look larger.
      spark.table("dim").coalesce(1).write.mode("overwrite").parquet(dir.toString)
      spark.read.parquet(dir.toString).createOrReplaceTempView("d3")
      check("Parquet")
    } finally {
      org.apache.commons.io.FileUtils.deleteDirectory(dir.toFile)
    }
  }

  test("a fused chain whose build keys repeat runs staged, with the 1:N expansion") {
    // dup repeats each key three times: the fused program would find one build row only.
    checkJoin("SELECT /*+ BROADCAST(a), BROADCAST(d) */ a.cat, d.s, count(*), sum(f.v)" +
      " FROM fact f JOIN dim a ON f.k = a.k JOIN dup d ON f.k = d.k WHERE d.p > 5" +
      " GROUP BY a.cat, d.s", gpuJoins = 2)
    checkJoin("SELECT /*+ BROADCAST(d), BROADCAST(a) */ f.id, d.p, a.name FROM fact f" +
      " LEFT JOIN dup d ON f.k = d.k JOIN dim a ON f.k2 = a.k WHERE a.cat <> 1", gpuJoins = 2)
    checkJoin("SELECT /*+ BROADCAST(d), BROADCAST(e) */ f.id, d.p, e.p FROM fact f" +
      " JOIN dup d ON f.k = d.k JOIN dup e ON f.k2 = e.k", gpuJoins = 2)
  }

  test("ANSI errors after a probe are Spark's own, replayed through the join on the CPU") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      assert(checkSameError(spark.sql("SELECT /*+ BROADCAST(d) */ sum(f.v * 2147483 * d.p)" +
        " FROM fact f JOIN dup d ON f.k = d.k")) == "ARITHMETIC_OVERFLOW")
      assert(checkSameError(spark.sql("SELECT /*+ BROADCAST(d) */ f.id, d.cat * 2147483647" +
        " FROM fact f JOIN dim d ON f.k = d.k WHERE d.name <> 'x'")) == "ARITHMETIC_OVERFLOW")
      // The join's own condition overflows where the keys match.
      assert(checkSameError(spark.sql("SELECT /*+ BROADCAST(d) */ f.id FROM fact f JOIN dim d" +
        " ON f.k = d.k AND f.v * 2147483 * d.cat > 0")) == "ARITHMETIC_OVERFLOW")
      // No error where the join drops the rows that would overflow (no match for k >= 100).
      checkJoin("SELECT /*+ BROADCAST(d) */ f.id, (f.k - 99) * 2147483647 FROM fact f" +
        " JOIN dim d ON f.k = d.k WHERE f.k > 98")
    }
  }

  test("what stays on the CPU says why") {
    withConf("spark.sql.adaptive.enabled" -> "false") {
      val notIn = checkGpu(spark.sql("SELECT id FROM fact WHERE k NOT IN (SELECT k FROM dup)"),
        gpuNodeCount = -1)
      assert(cpuReasons(notIn).exists(_.contains("null-aware anti join")), cpuReasons(notIn))
      val outerCondition = checkGpu(spark.sql("SELECT /*+ BROADCAST(d) */ f.id, d.s FROM fact f" +
        " LEFT JOIN dup d ON f.k = d.k AND f.v > d.p"), gpuNodeCount = -1)
      assert(cpuReasons(outerCondition).exists(_.contains("inner joins only")),
        cpuReasons(outerCondition))
      val doubles = checkGpu(spark.sql("SELECT /*+ BROADCAST(d) */ f.id FROM fact f JOIN dim d" +
        " ON CAST(f.v AS DOUBLE) = CAST(d.k AS DOUBLE)"), gpuNodeCount = -1)
      assert(cpuReasons(doubles).exists(_.contains("join keys of type")), cpuReasons(doubles))
    }
  }
}
