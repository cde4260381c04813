package dev.tessera.it

import java.nio.file.{Files, Path}
import java.util.Comparator

import scala.jdk.CollectionConverters._

import dev.tessera.spark.exec.TesseraHashAggregateExec
import dev.tessera.ssb.{SsbGenerator, SsbQueries, SsbTables}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, BroadcastNestedLoopJoinExec,
  ShuffledHashJoinExec, SortMergeJoinExec}

/**
 * The 13 SSB queries over SF 0.01 data, with the plugin against Spark's own results: each must
 * aggregate on the GPU and leave no join on the CPU.
 */
class SsbQueriesSuite extends org.scalatest.funsuite.AnyFunSuite with GpuQueryTest {
  private var dataDir: Path = _

  /** The flights whose ORDER BY is not a total order: revenue descending may tie. */
  private val partlyOrdered = Set("3.1", "3.2", "3.3", "3.4")

  /**
   * Empty at SF 0.01: two cities of the United Kingdom among 20 suppliers are rarely any
   * supplier's. Adaptive execution then replaces the whole plan by an empty relation, leaving no
   * plan to check, so these run with it off (the results are still compared).
   */
  private val emptyAtThisScale = Set("3.3", "3.4")

  override def beforeAll(): Unit = {
    super.beforeAll()
    dataDir = Files.createTempDirectory("ssb-suite")
    withConf("spark.tessera.enabled" -> "false") {
      SsbGenerator.generate(spark, 0.01, 1L, dataDir)
    }
    SsbTables.register(spark, dataDir, false)
  }

  override def afterAll(): Unit = {
    try super.afterAll()
    finally if (dataDir != null) {
      Files.walk(dataDir).sorted(Comparator.reverseOrder()).forEach(p => Files.delete(p))
    }
  }

  private def cpuJoins(df: DataFrame) = nodes(finalPlan(df)).filter {
    case _: BroadcastHashJoinExec | _: ShuffledHashJoinExec | _: SortMergeJoinExec
         | _: BroadcastNestedLoopJoinExec => true
    case _ => false
  }

  private def cpuReasons(df: DataFrame): Seq[String] =
    nodes(finalPlan(df)).flatMap(cpuReasonsOn)

  for (query <- SsbQueries.all().asScala) {
    test(s"SSB Q${query.name}") {
      val adaptive = (!emptyAtThisScale(query.name)).toString
      val df = withConf("spark.sql.adaptive.enabled" -> adaptive) {
        checkGpu(spark.sql(query.sql), gpuNodeCount = -1, ordered = !partlyOrdered(query.name))
      }
      val plan = finalPlan(df)
      assert(nodes(plan).exists(_.isInstanceOf[TesseraHashAggregateExec]),
        s"no GPU aggregate; CPU because ${cpuReasons(df)}\n$plan")
      assert(cpuJoins(df).isEmpty,
        s"joins left on the CPU: ${cpuJoins(df).map(_.nodeName)}; CPU because ${cpuReasons(df)}" +
          s"\n$plan")
    }
  }

  test("explain of the 13 SSB queries: no line for a wrapper, by-design nodes only as advice") {
    val wrappers = Seq("AdaptiveSparkPlan", "ShuffleQueryStage", "BroadcastQueryStage",
      "AQEShuffleRead", "WholeStageCodegen", "InputAdapter", "ReusedExchange")
    // What Tessera has no GPU version of yet in these plans: the ORDER BY of the results.
    val cpuOperators = Set("Sort", "TakeOrderedAndProject")
    def explained(query: String, level: String, adaptive: String): Seq[String] =
      LogCapture("dev.tessera.spark.ExplainLog") { log =>
        withConf("spark.sql.adaptive.enabled" -> adaptive) {
          withConf("spark.tessera.explain" -> level)(spark.sql(query).collect())
        }
        log.at(org.apache.logging.log4j.Level.WARN).flatMap(_.linesIterator.drop(1)).map(_.trim)
      }
    for (query <- SsbQueries.all().asScala) {
      val adaptive = (!emptyAtThisScale(query.name)).toString
      val all = explained(query.sql, "ALL", adaptive)
      assert(all.exists(_.startsWith("*Exec <HashAggregate>")), s"Q${query.name}: $all")
      assert(!all.exists(line => wrappers.exists(w => line.contains(s"Exec <$w"))),
        s"Q${query.name}: ${all.mkString("\n")}")
      assert(all.filter(_.startsWith("!")).forall(l => cpuOperators(nodeOf(l))),
        s"Q${query.name}: ${all.mkString("\n")}")
      val notOnGpu = explained(query.sql, "NOT_ON_GPU", adaptive)
      assert(notOnGpu.forall(l => l.startsWith("!") && cpuOperators(nodeOf(l))),
        s"Q${query.name}: ${notOnGpu.mkString("\n")}")
    }
  }

  /** The node a report line is about: "!Exec <Sort> cannot ..." is about Sort. */
  private def nodeOf(line: String): String = line.dropWhile(_ != '<').drop(1).takeWhile(_ != '>')
}
