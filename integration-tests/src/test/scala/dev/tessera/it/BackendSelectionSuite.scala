package dev.tessera.it

import dev.tessera.gpu.BackendKind
import dev.tessera.gpu.cuda.CudaAvailability
import dev.tessera.it.TestSessions._
import dev.tessera.spark.TesseraRuntime
import dev.tessera.spark.rewrite.TesseraColumnarRule.Outcome
import org.apache.logging.log4j.Level
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * spark.tessera.backend: cuda without a CUDA device warns once and leaves every query to Spark's
 * CPU operators (never switching to host-reference by itself); host-reference is used only when
 * named, and the log says so.
 */
class BackendSelectionSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val NoDeviceWarning = "Tessera: no usable CUDA device ("
  private val NoDeviceAdvice = "); all queries run on Spark's CPU operators." +
    " Set spark.tessera.backend=host-reference only for testing."

  override def beforeAll(): Unit = stopAll()
  override def afterAll(): Unit = stopAll()

  for ((how, activation) <- Seq("spark.plugins" -> Plugin, "spark.sql.extensions" -> Extensions)) {
    test(s"backend=cuda ($how): one warning without a GPU, and Spark's results") {
      LogCapture("dev.tessera") { log =>
        withSession(s"tessera-cuda-$how", activation, "spark.tessera.backend" -> "cuda") { spark =>
          val rule = tesseraRules(spark).head
          for (_ <- 1 to 3) {
            assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
          }
          val warnings = log.at(Level.WARN).filter(_.startsWith(NoDeviceWarning))
          if (CudaAvailability.get().isAvailable) {
            assert(warnings.isEmpty)
            assert(TesseraRuntime.backend().kind() == BackendKind.CUDA)
            assert(rule.lastOutcome() == Outcome.REWRITTEN)
          } else {
            assert(warnings.size == 1, s"expected one warning, got:\n${warnings.mkString("\n")}")
            assert(warnings.head.endsWith(NoDeviceAdvice), warnings.head)
            assert(!TesseraRuntime.isUsable)
            assert(rule.lastOutcome() == Outcome.RUNTIME_NOT_USABLE)
          }
        }
      }
    }
  }

  test("backend=host-reference: the host reference backend, said so once at INFO") {
    LogCapture("dev.tessera") { log =>
      withSession("tessera-host-reference", Plugin,
          "spark.tessera.backend" -> "host-reference") { spark =>
        assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
        assert(TesseraRuntime.isUsable)
        assert(TesseraRuntime.backend().kind() == BackendKind.HOST_REFERENCE)
        assert(tesseraRules(spark).head.lastOutcome() == Outcome.REWRITTEN)
        val infos = log.at(Level.INFO).filter(_.contains("using the host reference backend"))
        assert(infos.size == 1, infos)
        assert(infos.head.contains("not a GPU"))
        assert(!log.at(Level.WARN).exists(_.startsWith(NoDeviceWarning)))
      }
    }
  }
}
