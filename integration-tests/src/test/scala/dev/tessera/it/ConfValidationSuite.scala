package dev.tessera.it

import dev.tessera.it.TestSessions._
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

  test("spark.tessera.explain set to a bad value on the session fails the next query") {
    withSession("tessera-bad-explain", Plugin, backend) { spark =>
      assert(spark.range(10).filter("id > 3").count() == 6)
      spark.conf.set("spark.tessera.explain", "verbose")
      val error = intercept[Exception](spark.range(10).filter("id > 3").collect())
      assertMentions(error, "spark.tessera.explain", "'verbose'", "NONE, NOT_ON_GPU, ALL")

      spark.conf.set("spark.tessera.explain", "not_on_gpu")
      assert(spark.range(10).filter("id > 3").count() == 6, "a fixed value should work again")
    }
  }
}
