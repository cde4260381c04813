package dev.tessera.it

import org.apache.logging.log4j.Level
import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/**
 * What spark.tessera.explain tells about real plans: every blocker of a node, advice (on the CPU
 * by design) apart from fallback, fusion failures, and which adaptive stage each report is of.
 */
class ExplainReportSuite extends AnyFunSuite with GpuQueryTest {
  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(0, 4000, 1, 4).selectExpr("id % 50 AS k", "CAST(id AS INT) AS i",
      "id * 3 AS v", "CAST(id % 7 AS INT) AS a", "CAST(id % 11 AS INT) AS b",
      "CAST(id % 13 AS INT) AS c", "CAST(id % 17 AS INT) AS d", "CAST(id % 19 AS INT) AS e",
      "IF(id % 5 = 0, NULL, CONCAT('s', id % 9)) AS s").createOrReplaceTempView("t")
    spark.range(0, 50).selectExpr("id AS k", "id * 7 AS name")
      .createOrReplaceTempView("dim")
    spark.range(0, 60).selectExpr("CAST(id % 7 AS INT) AS a", "CAST(id % 11 AS INT) AS b",
      "CAST(id % 13 AS INT) AS c", "CAST(id % 17 AS INT) AS d", "CAST(id % 19 AS INT) AS e",
      "id AS w").createOrReplaceTempView("five")
  }

  /** The explain reports logged while `query` runs with Tessera at `level`. */
  private def reports(level: String)(query: => DataFrame): Seq[String] =
    LogCapture("dev.tessera.spark.ExplainLog") { log =>
      withConf("spark.tessera.explain" -> level)(query.collect())
      log.at(Level.WARN)
    }

  private def lines(reports: Seq[String]): Seq[String] =
    reports.flatMap(_.linesIterator.drop(1)).map(_.trim)

  test("a node with several blockers reports all of them") {
    val query = "SELECT i FROM t WHERE s RLIKE 'a' OR sha2(s, 256) = 'x'"
    withConf("spark.tessera.exec.FilterExec.enabled" -> "false") {
      val df = checkGpu(spark.sql(query), gpuNodeCount = -1)
      val reasons = nodes(finalPlan(df)).flatMap(cpuReasonsOn)
      assert(reasons.exists(_.contains("spark.tessera.exec.FilterExec.enabled")), reasons)
      assert(reasons.exists(_.contains("rlike")), reasons)
      assert(reasons.exists(_.contains("sha2")), reasons)
      val report = lines(reports("NOT_ON_GPU")(spark.sql(query)))
      val filter = report.indexWhere(_.startsWith("!Exec <Filter> cannot run on GPU because"))
      assert(filter >= 0, report)
      assert(report(filter).contains("FilterExec is disabled by") &&
        report(filter).contains("some of its expressions cannot run on the GPU"), report)
      assert(report.slice(filter + 1, filter + 3).map(_.takeWhile(_ != ' ')).sorted ==
        Seq("!Expression", "!Expression"), report)
      assert(report.exists(_.startsWith("!Expression <RLike>")) &&
        report.exists(_.startsWith("!Expression <Sha2>")), report)
    }
  }

  test("advice is not fallback: by-design CPU nodes are @ lines, and NOT_ON_GPU omits them") {
    val query = "SELECT d.name, count(*), sum(t.v), avg(t.i) FROM t JOIN dim d ON t.k = d.k" +
      " WHERE t.i > 10 GROUP BY d.name"
    val all = lines(reports("ALL")(spark.sql(query)))
    assert(all.exists(_.startsWith("@Exec <Project> runs on the CPU by design: it computes")),
      all.mkString("\n"))
    assert(all.exists(_.startsWith("@Exec <Exchange> runs on the CPU by design")),
      all.mkString("\n"))
    assert(all.exists(_.startsWith("*Exec <HashAggregate> will run on GPU")), all.mkString("\n"))
    assert(all.exists(_.startsWith("*Exec <BroadcastHashJoin> will run on GPU")),
      all.mkString("\n"))
    assert(!all.exists(_.startsWith("!")), all.mkString("\n"))
    assert(reports("NOT_ON_GPU")(spark.sql(query)).isEmpty)
  }

  test("a step that runs on the GPU but cannot be fused says so, and why") {
    // Two projections, each small enough for the GPU, fused too large for one program.
    val columns = Seq("a", "b", "c", "d", "e")
    val pairs = for (x <- columns; y <- columns if x < y) yield (x, y)
    val inner = pairs.flatMap { case (x, y) => Seq(s"$x + $y", s"$x - $y", s"$x * $y") }
      .zipWithIndex.map { case (e, n) => s"$e AS c$n" }
    val outer = inner.indices.map(n => s"c$n + c${(n + 1) % inner.size}")
    def query = spark.sql(s"SELECT ${inner.mkString(", ")} FROM t").selectExpr(outer: _*)
    withConf("spark.sql.optimizer.excludedRules" ->
        "org.apache.spark.sql.catalyst.optimizer.CollapseProject") {
      val df = checkGpu(query, gpuNodeCount = 2)
      val report = lines(reports("ALL")(query))
      assert(report.exists(line => line.startsWith("*Exec <Project> will run on GPU, not fused" +
        " with the GPU steps below it (") && line.contains("registers")), report.mkString("\n"))
      assert(gpuNodes(df).exists(_.child.isInstanceOf[dev.tessera.spark.exec.TesseraFusedExec]),
        finalPlan(df))
    }
  }

  test("with generated kernels on, a GPU pipeline's line says how its program runs") {
    withConf("spark.tessera.codegen.enabled" -> "true") {
      val project = lines(reports("ALL")(spark.sql("SELECT a + b AS x, v * 2 AS y FROM t" +
        " WHERE a > 1")))
      assert(project.exists(line => line.startsWith("*Exec <") &&
        line.contains("its program runs as a kernel generated for it")), project.mkString("\n"))
      // A join of five keys: the generated probe compares at most four.
      val fiveKeys = lines(reports("ALL")(spark.sql("SELECT t.v, f.w FROM t JOIN five f" +
        " ON t.a = f.a AND t.b = f.b AND t.c = f.c AND t.d = f.d AND t.e = f.e")))
      assert(fiveKeys.exists(_.contains("its program runs on the interpreter kernel: a join" +
        " table has 5 key columns (the kernel generator probes at most 4)")),
        fiveKeys.mkString("\n"))
      val aggregate = lines(reports("ALL")(spark.sql("SELECT a, count(*) FROM t GROUP BY a")))
      assert(aggregate.exists(_.contains(
        "its program and aggregate update run as a kernel generated for them")),
        aggregate.mkString("\n"))
    }
    // Explicitly off: a run of the suites with codegen on (-Dspark.tessera.codegen.enabled) has
    // it on by default.
    withConf("spark.tessera.codegen.enabled" -> "false") {
      val off = lines(reports("ALL")(spark.sql("SELECT a + b AS x FROM t WHERE a > 1")))
      assert(!off.exists(_.contains("kernel")), off.mkString("\n"))
    }
  }

  test("under adaptive execution each report says which query stage it is of") {
    val headers = reports("ALL")(spark.sql("SELECT k, sum(v) FROM t GROUP BY k"))
      .map(_.linesIterator.next())
    assert(headers.exists(_.contains("for the query stage that ends in ShuffleExchangeExec")),
      headers)
    assert(headers.exists(_.contains("for the final query stage")), headers)
    assert(!headers.exists(_.contains("AdaptiveSparkPlan")), headers)
  }
}
