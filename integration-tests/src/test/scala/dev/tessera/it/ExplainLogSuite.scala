package dev.tessera.it

import dev.tessera.it.TestSessions._
import dev.tessera.spark.{ExplainLevel, ExplainLog}
import dev.tessera.spark.ExplainLog.Node
import org.apache.logging.log4j.Level
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/** The spark.tessera.explain report: its tree format, and the report of a disabled session. */
class ExplainLogSuite extends AnyFunSuite with BeforeAndAfterAll {
  override def beforeAll(): Unit = stopAll()
  override def afterAll(): Unit = stopAll()

  private val plan = Seq(
    Node.onGpu(0, "Exec <ProjectExec>"),
    Node.onGpu(1, "Expression <Add> (a#0 + 1)"),
    Node.notOnGpu(1, "Exec <FilterExec>", "spark.tessera.exec.FilterExec.enabled is false"),
    Node.notOnGpu(2, "Expression <Year> year(d#1)", "TimestampNTZ is not supported",
      "spark.tessera.expression.Year.enabled is false")).asJava

  test("ALL logs one WARN message: an indented tree, * on the GPU, ! on the CPU with reasons") {
    LogCapture("dev.tessera.spark.ExplainLog") { log =>
      ExplainLog.log(plan, ExplainLevel.ALL)
      assert(log.at(Level.WARN) == Seq(
        """Tessera plan (spark.tessera.explain=ALL):
          |*Exec <ProjectExec> will run on GPU
          |  *Expression <Add> (a#0 + 1) will run on GPU
          |  !Exec <FilterExec> cannot run on GPU because spark.tessera.exec.FilterExec.enabled is false
          |    !Expression <Year> year(d#1) cannot run on GPU because TimestampNTZ is not supported; spark.tessera.expression.Year.enabled is false"""
          .stripMargin))
    }
  }

  test("NOT_ON_GPU logs only what stays on the CPU; NONE logs nothing") {
    LogCapture("dev.tessera.spark.ExplainLog") { log =>
      ExplainLog.log(plan, ExplainLevel.NOT_ON_GPU)
      ExplainLog.log(plan, ExplainLevel.NONE)
      val reports = log.at(Level.WARN)
      assert(reports.size == 1)
      assert(reports.head.linesIterator.toSeq.tail.forall(_.trim.startsWith("!")), reports.head)
    }
  }

  test("a session with spark.tessera.enabled=false says so when explain asks") {
    LogCapture("dev.tessera.spark.ExplainLog") { log =>
      withSession("tessera-explain-disabled", Extensions,
          "spark.tessera.backend" -> "host-reference", "spark.tessera.enabled" -> "false",
          "spark.tessera.explain" -> "not_on_gpu") { spark =>
        assert(spark.range(10).filter("id > 3").count() == 6)
      }
      assert(log.at(Level.WARN).exists(
        _.contains("cannot run on GPU because spark.tessera.enabled is false")), log.at(Level.WARN))
    }
  }
}
