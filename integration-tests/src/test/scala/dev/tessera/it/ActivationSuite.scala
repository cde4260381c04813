package dev.tessera.it

import dev.tessera.gpu.cuda.CudaAvailability
import dev.tessera.it.TestSessions._
import dev.tessera.spark.TesseraRuntime
import dev.tessera.spark.rewrite.TesseraColumnarRule.Outcome
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * The two ways to turn Tessera on: spark.plugins alone (the driver plugin adds the session
 * extension, the executor plugin opens the runtime) and spark.sql.extensions alone (the
 * extension opens the runtime in the driver JVM on the first query, in local mode).
 */
class ActivationSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val backend = "spark.tessera.backend" -> testBackend

  /** With the test backend, the runtime is usable unless it is cuda on a machine without one. */
  private val expectedOutcome =
    if (testBackend == "host-reference" || CudaAvailability.get().isAvailable) Outcome.REWRITTEN
    else Outcome.RUNTIME_NOT_USABLE

  override def beforeAll(): Unit = stopAll()
  override def afterAll(): Unit = stopAll()

  test("spark.plugins alone installs TesseraExtensions, and its rule runs on every query") {
    withSession("tessera-plugin-only", Plugin, backend) { spark =>
      val extensions = spark.conf.get("spark.sql.extensions").split(",").map(_.trim).toSeq
      assert(extensions.count(_ == "dev.tessera.TesseraExtensions") == 1, extensions)
      val rules = tesseraRules(spark)
      assert(rules.size == 1, "the Tessera columnar rule is not in the session")
      assert(TesseraRuntime.isOpen, "the executor plugin did not open the runtime")

      assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
      assert(rules.head.plansSeen() > 0, "the rule never ran")
      assert(rules.head.lastOutcome() == expectedOutcome)
    }
    assert(!TesseraRuntime.isOpen, "the executor plugin did not close the runtime at shutdown")
  }

  test("spark.plugins with TesseraExtensions already in spark.sql.extensions: injected once") {
    withSession("tessera-plugin-and-extension", Plugin, backend,
        "spark.sql.extensions" -> "dev.tessera.TesseraExtensions") { spark =>
      assert(spark.conf.get("spark.sql.extensions") == "dev.tessera.TesseraExtensions")
      assert(tesseraRules(spark).size == 1)
      assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
    }
  }

  test("spark.sql.extensions alone: the runtime opens on the first query, closes with the app") {
    withSession("tessera-extension-only", Extensions, backend) { spark =>
      val rules = tesseraRules(spark)
      assert(rules.size == 1)
      assert(!TesseraRuntime.isOpen, "nothing should open the runtime before a query")

      assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
      assert(TesseraRuntime.isOpen, "the first query did not open the runtime")
      assert(rules.head.lastOutcome() == expectedOutcome)
    }
    assert(!TesseraRuntime.isOpen, "stopping the SparkContext did not close the runtime")
  }

  test("spark.tessera.enabled=false, set at run time, leaves plans alone") {
    withSession("tessera-disabled", Extensions, backend) { spark =>
      val rule = tesseraRules(spark).head
      spark.conf.set("spark.tessera.enabled", "false")
      assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
      assert(rule.lastOutcome() == Outcome.DISABLED)
      assert(!TesseraRuntime.isOpen, "a disabled session should not open the runtime")

      spark.conf.set("spark.tessera.enabled", "true")
      assert(sumOfDoubledMultiplesOfThree(spark) == ((ExpectedSum, ExpectedSum)))
      assert(rule.lastOutcome() == expectedOutcome)
    }
  }
}
