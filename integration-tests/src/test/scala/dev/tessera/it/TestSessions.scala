package dev.tessera.it

import dev.tessera.spark.TesseraRuntime
import dev.tessera.spark.rewrite.TesseraColumnarRule
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}

/**
 * Local sessions for suites that need their own static settings (spark.plugins,
 * spark.sql.extensions): each one starts after whatever an earlier suite left is stopped, so one
 * suite's SparkContext and extensions never leak into the next.
 */
object TestSessions {
  /** The backend the suites run on: host-reference in CI, cuda on a GPU host. */
  val testBackend: String = sys.props.getOrElse("tessera.test.backend", "host-reference")

  val Plugin: (String, String) = "spark.plugins" -> "dev.tessera.TesseraPlugin"
  val Extensions: (String, String) = "spark.sql.extensions" -> "dev.tessera.TesseraExtensions"

  /** Stops the active and default sessions (and so their SparkContext), if any. */
  def stopAll(): Unit = {
    SparkSession.getActiveSession.foreach(_.stop())
    SparkSession.getDefaultSession.foreach(_.stop())
    SparkSession.clearActiveSession()
    SparkSession.clearDefaultSession()
    // Hygiene only: tests that care check that stopping the session closed the runtime.
    TesseraRuntime.close()
  }

  /** A fresh local[2] session with `settings`, after stopping any earlier one. */
  def create(appName: String, settings: (String, String)*): SparkSession = {
    stopAll()
    val builder = SparkSession.builder()
      .master("local[2]")
      .appName(appName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
    settings.foreach { case (key, value) => builder.config(key, value) }
    builder.getOrCreate()
  }

  /** Runs `body` in a fresh session and stops the session afterwards, whatever happens. */
  def withSession[T](appName: String, settings: (String, String)*)(body: SparkSession => T): T = {
    val spark = create(appName, settings: _*)
    try body(spark)
    finally {
      spark.stop()
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }
  }

  /** The Tessera rules injected into `spark`'s session state. */
  def tesseraRules(spark: SparkSession): Seq[TesseraColumnarRule] =
    spark.asInstanceOf[ClassicSession].sessionState.columnarRules.collect {
      case rule: TesseraColumnarRule => rule
    }

  /** `t` and its causes: Spark may wrap an error thrown while planning. */
  def messages(t: Throwable): String =
    Iterator.iterate(t)(_.getCause).takeWhile(_ != null).take(20).map(_.getMessage).mkString("\n")

  /** A filter and a projection, then an aggregate (a shuffle, so adaptive execution plans it). */
  def sumOfDoubledMultiplesOfThree(spark: SparkSession): (Long, Long) = {
    val rows = spark.range(0, 1000).filter("id % 3 = 0").selectExpr("id * 2 AS x").collect()
    val viaRows = rows.map(_.getLong(0)).sum
    val viaAggregate = spark.sql("SELECT sum(id * 2) FROM range(1000) WHERE id % 3 = 0")
      .collect().head.getLong(0)
    (viaRows, viaAggregate)
  }

  /** Spark's answer to [[sumOfDoubledMultiplesOfThree]]: 2 * 3 * (0 + 1 + ... + 333). */
  val ExpectedSum: Long = 2L * 3L * (333L * 334L / 2L)
}
