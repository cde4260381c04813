package dev.tessera.it

import dev.tessera.it.TestSessions._
import org.apache.logging.log4j.Level
import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** Bad spark.tessera.* settings fail fast, with a message naming the key and what is accepted. */
class ConfValidationSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val backend = "spark.tessera.backend" -> "host-reference"

  override def beforeAll(): Unit = stopAll()
  override def afterAll(): Unit = stopAll()

  private def assertMentions(error: Throwable, parts: String*): Unit = {
    val text = messages(error)
    parts.foreach(part => assert(text.contains(part), s"'$part' is missing from:\n$text"))
  }

  test("with spark.plugins, an unknown key fails at startup and the closest key is suggested") {
    val error = intercept[Exception] {
      withSession("tessera-typo-plugin", Plugin, backend, "spark.tessera.explian" -> "ALL")(_ => ())
    }
    assertMentions(error, "spark.tessera.explian", "'ALL'", "did you mean spark.tessera.explain?")
  }

  test("with spark.plugins, a bad value fails at startup and the accepted values are listed") {
    val error = intercept[Exception] {
      withSession("tessera-bad-backend", Plugin, "spark.tessera.backend" -> "gpu")(_ => ())
    }
    assertMentions(error, "spark.tessera.backend", "'gpu'", "cuda, host-reference")
  }

  test("with spark.sql.extensions, an unknown key fails the first query") {
    withSession("tessera-typo-extension", Extensions, backend,
        "spark.tessera.exec.FiltreExec.enabled" -> "false") { spark =>
      val error = intercept[Exception](spark.range(10).filter("id > 3").collect())
      assertMentions(error, "spark.tessera.exec.FiltreExec.enabled",
        "did you mean spark.tessera.exec.FilterExec.enabled?")
    }
  }

  test("with spark.sql.extensions, a bad value fails the session's first use, naming the key") {
    // The session's SQLConf checks the application's settings as it copies them in.
    val error = intercept[Exception] {
      withSession("tessera-bad-value-extension", Extensions, backend,
          "spark.tessera.explain" -> "verbose") { spark =>
        spark.range(10).filter("id > 3").collect()
      }
    }
    assertMentions(error, "spark.tessera.explain", "'verbose'", "NONE, NOT_ON_GPU, ALL")
  }

  // ---- settings changed on a running session (SET in SQL, spark.conf.set, RESET) ----

  private val explainKey = "spark.tessera.explain"

  /** The session still plans and runs queries, with Spark's answer. */
  private def assertQueriesWork(spark: SparkSession): Unit =
    assert(sumOfDoubledMultiplesOfThree(spark) == (ExpectedSum, ExpectedSum))

  test("SET with a bad value is refused, the value is not stored, and the session keeps working") {
    withSession("tessera-set-bad-value", Plugin, backend) { spark =>
      spark.sql(s"SET $explainKey=not_on_gpu").collect()
      val error = intercept[Exception](spark.sql(s"SET $explainKey=bad").collect())
      assertMentions(error, explainKey, "'bad'", "NONE, NOT_ON_GPU, ALL")
      assert(spark.conf.getOption(explainKey) == Some("not_on_gpu"), "the bad value was stored")
      assertQueriesWork(spark)
      spark.sql(s"RESET $explainKey").collect()
      spark.sql("RESET").collect()
      assertQueriesWork(spark)
    }
  }

  test("spark.conf.set with a bad value is refused and the value is not stored") {
    withSession("tessera-conf-set-bad-value", Plugin, backend) { spark =>
      val before = spark.conf.getOption(explainKey)
      val error = intercept[Exception](spark.conf.set(explainKey, "verbose"))
      assertMentions(error, explainKey, "'verbose'", "NONE, NOT_ON_GPU, ALL")
      assert(spark.conf.getOption(explainKey) == before, "the bad value was stored")
      val capError = intercept[Exception](
        spark.conf.set("spark.tessera.batchSizeBytes", "0"))
      assertMentions(capError, "spark.tessera.batchSizeBytes", "greater than 0")
      assertQueriesWork(spark)
    }
  }

  test("SET of an unknown spark.tessera key is refused, names the closest key, stores nothing") {
    withSession("tessera-set-unknown-key", Plugin, backend) { spark =>
      val error = intercept[Exception](spark.sql("SET spark.tessera.explian=ALL").collect())
      assertMentions(error, "spark.tessera.explian", "did you mean spark.tessera.explain?")
      assert(spark.conf.getOption("spark.tessera.explian").isEmpty, "the unknown key was stored")
      assertQueriesWork(spark)
      spark.sql("RESET").collect()
      assertQueriesWork(spark)
    }
  }

  test("an unknown key set with spark.conf.set fails queries, naming it, but RESET still works") {
    withSession("tessera-conf-set-unknown-key", Plugin, backend) { spark =>
      // spark.conf.set has no hook for keys Spark does not know, so this one is stored.
      spark.conf.set("spark.tessera.exec.FiltreExec.enabled", "false")
      val error = intercept[Exception](spark.range(10).filter("id > 3").collect())
      assertMentions(error, "spark.tessera.exec.FiltreExec.enabled",
        "did you mean spark.tessera.exec.FilterExec.enabled?")
      // The commands that show and fix settings still run.
      spark.sql("SET").collect()
      spark.sql(s"SET $explainKey=all").collect()
      spark.sql("RESET spark.tessera.exec.FiltreExec.enabled").collect()
      assertQueriesWork(spark)

      spark.conf.set("spark.tessera.exec.FiltreExec.enabled", "false")
      spark.sql("RESET").collect()
      assert(spark.conf.getOption("spark.tessera.exec.FiltreExec.enabled").isEmpty)
      assertQueriesWork(spark)
    }
  }

  test("a valid SET is stored and takes effect; RESET of the key and RESET all undo it") {
    withSession("tessera-set-valid", Plugin, backend) { spark =>
      spark.sql("SET spark.tessera.exec.FilterExec.enabled=false").collect()
      assert(spark.conf.get("spark.tessera.exec.FilterExec.enabled") == "false")
      LogCapture("dev.tessera.spark.ExplainLog") { log =>
        spark.sql(s"SET $explainKey=not_on_gpu").collect()
        assertQueriesWork(spark)
        assert(log.at(Level.WARN).exists(
          _.contains("FilterExec is disabled by spark.tessera.exec.FilterExec.enabled")),
          log.at(Level.WARN))
      }
      spark.sql(s"RESET $explainKey").collect()
      assert(!spark.conf.getOption(explainKey).exists(_.equalsIgnoreCase("not_on_gpu")))
      spark.sql("RESET").collect()
      assert(!spark.conf.getOption("spark.tessera.exec.FilterExec.enabled").contains("false"))
      assertQueriesWork(spark)
    }
  }

  test("changing a setting read once per JVM on a running session logs a warning naming it") {
    withSession("tessera-read-once", Plugin, backend) { spark =>
      assertQueriesWork(spark)
      LogCapture("dev.tessera") { log =>
        spark.sql("SET spark.tessera.backend=cuda").collect()
        spark.conf.set("spark.tessera.memory.deviceCapBytes", "3g")
        assertQueriesWork(spark)
        assertQueriesWork(spark)
        val warnings = log.at(Level.WARN).filter(_.contains("read once per JVM"))
        assert(warnings.count(_.contains("spark.tessera.backend")) == 1, warnings)
        assert(warnings.exists(w => w.contains("spark.tessera.backend=cuda") &&
          w.contains("host-reference")), warnings)
        assert(warnings.count(_.contains("spark.tessera.memory.deviceCapBytes")) == 1, warnings)
      }
      // The runtime in force is still the host reference one, so queries still run on it.
      assertQueriesWork(spark)
    }
  }
}
