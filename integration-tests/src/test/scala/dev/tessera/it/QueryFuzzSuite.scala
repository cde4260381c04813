package dev.tessera.it

import dev.tessera.it.TestSessions.messages
import dev.tessera.it.fuzz.{DataGen, QueryGen, Rng}
import dev.tessera.spark.exec.{HostToDeviceExec, TesseraPipelineExec}
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.AnalysisException
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.util.control.NonFatal

/**
 * A randomized differential suite: seeded random tables of every type with weighted special values
 * (fuzz/DataGen.scala) and random queries over them (fuzz/QueryGen.scala): filters, projections,
 * broadcast joins of every kind and key type, EXISTS/IN subqueries, UNION ALL and aggregates. Each
 * query runs with Tessera off and on; the results must be equal (as multisets, NaN and -0.0 told
 * apart, doubles exactly), or both runs must fail with the same Spark error condition. A fifth of the
 * queries run with ANSI on; adaptive execution is on for even query numbers, off for odd ones.
 * Every program of Tessera's GPU pipelines must also generate a kernel that compiles clean, or be
 * left to the interpreter for a reason the generator gives (GpuQueryTest.kernelProblems): random
 * plans are where the generator meets shapes no hand-written test has.
 *
 * A seed divisible by 3 reads its tables from Parquet files written for it (DataGen.register),
 * so that the queries also run over Spark's Parquet reader and its dictionary-encoded columns.
 *
 * CI runs a fixed set of seeds. A longer run, or one seed:
 * {{{
 *   ./mvnw -B -q -pl integration-tests -am verify -Dnotebooks.skip=true -Dtest=NONE \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Dsuites='dev.tessera.it.QueryFuzzSuite' \
 *     -Dtessera.fuzz.seed=42 -Dtessera.fuzz.queries=2000
 * }}}
 * (`-Dtessera.fuzz.seed=42,43` runs several seeds; `-Dtessera.fuzz.verbose=1` prints every query
 * with its time, and the generated queries Spark rejects.)
 * A failure prints its seed and query number; `-Dtessera.fuzz.seed=S -Dtessera.fuzz.query=I` runs
 * that query alone (on the same data), and the SQL it prints runs in any session over the same views.
 */
class QueryFuzzSuite extends AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] = Seq(
    "spark.sql.ansi.enabled" -> "false",
    "spark.sql.session.timeZone" -> "UTC",
    // The Parquet seeds' tables: timestamps as INT64 and no calendar rebasing, so that Spark's
    // reader hands dates and timestamps over dictionary-encoded too; small reader batches, so
    // that one staged batch is built from many.
    "spark.sql.parquet.outputTimestampType" -> "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite" -> "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead" -> "CORRECTED",
    "spark.sql.parquet.columnarReaderBatchSize" -> "256")

  private def prop(name: String): Option[String] =
    sys.props.get(name).map(_.trim).filter(v => v.nonEmpty && v != "null" && !v.startsWith("$"))

  /** The CI seeds, and how many queries each runs (about 3 minutes on 2 cores in all, some 2 s a query). */
  private val CiSeeds = Seq(1L, 2L, 3L)
  private val CiQueriesPerSeed = 27

  private val seeds: Seq[Long] = prop("tessera.fuzz.seed")
    .map(_.split(",").toSeq.map(_.trim.toLong)).getOrElse(CiSeeds)
  private val queriesPerSeed: Int = prop("tessera.fuzz.queries").map(_.toInt)
    .getOrElse(CiQueriesPerSeed)
  private val onlyQuery: Option[Int] = prop("tessera.fuzz.query").map(_.toInt)

  /** What one run of a query gave. */
  private sealed trait Outcome
  /** `kernelProblems`: what is wrong with the generated kernels of Tessera's plan (none off). */
  private final case class Rows(rows: Seq[String], gpu: Boolean, gpuJoin: Boolean,
      dictionaryColumns: Long, kernelProblems: Seq[String]) extends Outcome
  private final case class Failed(condition: String, message: String) extends Outcome

  private def querySeed(seed: Long, index: Int): Long = seed * 1000003L + index

  /** The deepest Spark error condition in `e`'s causes, else its root cause's class. */
  private def conditionOf(e: Throwable): String = {
    val chain = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).take(30).toSeq
    chain.collect {
      case s: org.apache.spark.SparkThrowable if s.getCondition != null => s.getCondition
    }.lastOption.getOrElse(s"no Spark error condition: ${chain.last.getClass.getName}")
  }

  private def run(sql: String, tessera: Boolean): Outcome =
    withConf("spark.tessera.enabled" -> tessera.toString) {
      try {
        val df = spark.sql(sql)
        val rows = df.collect().toSeq.map(_.toString)
        val tesseraNodes = nodes(finalPlan(df))
          .filter(_.getClass.getName.startsWith("dev.tessera.spark.exec.Tessera"))
        Rows(rows, tesseraNodes.nonEmpty, tesseraNodes.exists {
          case p: TesseraPipelineExec => !p.probes().isEmpty
          case _ => false
        }, nodes(finalPlan(df)).collect {
          case h: HostToDeviceExec => h.metrics()("dictionaryColumnsDecoded").value
        }.sum, if (tessera) kernelProblems(df) else Seq.empty)
      } catch {
        case NonFatal(e) => Failed(conditionOf(e), messages(e).take(1500))
      }
    }

  /** The rows only one side has (multiset difference), at most `n`. */
  private def onlyIn(a: Seq[String], b: Seq[String], n: Int): Seq[String] = {
    val counts = mutable.Map[String, Int]().withDefaultValue(0)
    b.foreach(r => counts(r) += 1)
    a.filter { r => if (counts(r) > 0) { counts(r) -= 1; false } else true }.take(n)
  }

  /** Whether the rows differ only in floating point values within a relative 1e-9. */
  private def onlyFloatBits(expected: Seq[String], actual: Seq[String]): Boolean = {
    val e = onlyIn(expected, actual, Int.MaxValue).sorted
    val a = onlyIn(actual, expected, Int.MaxValue).sorted
    def close(x: String, y: String): Boolean = x == y || ((x.toDoubleOption, y.toDoubleOption) match {
      case (Some(p), Some(q)) => math.abs(p - q) <= 1e-9 * math.max(math.abs(p), math.abs(q))
      case _ => false
    })
    e.size == a.size && e.nonEmpty && e.zip(a).forall { case (x, y) =>
      val (xs, ys) = (x.split(",", -1), y.split(",", -1))
      xs.length == ys.length && xs.zip(ys).forall { case (p, q) =>
        close(p.stripPrefix("[").stripSuffix("]"), q.stripPrefix("[").stripSuffix("]"))
      }
    }
  }

  private def describe(o: Outcome): String = o match {
    case Rows(rows, _, _, _, _) => s"${rows.size} rows"
    case Failed(c, m) => s"error $c: ${m.linesIterator.take(3).mkString(" | ")}"
  }

  test("random queries: Tessera's results and errors are Spark's") {
    val failures = mutable.ArrayBuffer[String]()
    var total, onGpu, withGpuJoin, withDictionaryIds, ansiCount, bothFailed, invalid = 0
    val started = System.nanoTime()
    val parquetDir = java.nio.file.Files.createTempDirectory("tessera-fuzz")
    for (seed <- seeds) {
      // A seed divisible by 3 reads its tables from Parquet files (Spark's Parquet reader, its
      // dictionaries), the others from memory.
      DataGen.register(spark, seed, if (seed % 3 == 0) Some(parquetDir) else None)
      for (index <- onlyQuery.map(Seq(_)).getOrElse(0 until queriesPerSeed)) {
        val qs = querySeed(seed, index)
        val sql = new QueryGen(new Rng(qs)).query()
        val ansi = new Rng(~qs).chance(0.2)
        val aqe = index % 2 == 0
        withConf("spark.sql.ansi.enabled" -> ansi.toString) {
          withConf("spark.sql.adaptive.enabled" -> aqe.toString) {
            val parsed = try { spark.sql(sql); None } catch {
              case e @ (_: AnalysisException | _: ParseException) => Some(e)
            }
            parsed match {
              case Some(e) =>
                invalid += 1
                if (prop("tessera.fuzz.verbose").isDefined) {
                  println(s"[fuzz] invalid seed=$seed query=$index: ${e.getClass.getSimpleName}" +
                    s" ${e.getMessage.take(300)}\n  $sql")
                }
              case None =>
                total += 1
                if (ansi) ansiCount += 1
                val t0 = System.nanoTime()
                val expected = run(sql, tessera = false)
                val t1 = System.nanoTime()
                val actual = run(sql, tessera = true)
                if (prop("tessera.fuzz.verbose").isDefined) {
                  println(f"[fuzz] query $index: Spark ${(t1 - t0) / 1e6}%.0f ms, Tessera" +
                    f" ${(System.nanoTime() - t1) / 1e6}%.0f ms, ${describe(expected)}; $sql")
                }
                actual match {
                  case r: Rows if r.gpu =>
                    onGpu += 1
                    if (r.gpuJoin) withGpuJoin += 1
                    if (r.dictionaryColumns > 0) withDictionaryIds += 1
                  case _ =>
                }
                val problem: Option[String] = (expected, actual) match {
                  case (_, Rows(_, _, _, _, kernels)) if kernels.nonEmpty =>
                    Some(s"generated kernels:\n  ${kernels.mkString("\n  ")}")
                  case (Rows(e, _, _, _, _), Rows(a, _, _, _, _)) =>
                    val floatBits = e.sorted != a.sorted && onlyFloatBits(e, a)
                    // Spark's own double sums (avg of longs, sums of doubles) depend on the order
                    // its shuffle delivers partial results in, which changes from run to run:
                    // where only such bits differ and Spark's own result changes too (in up to
                    // four more runs), there is no one exact result to match. (Seed 103, query
                    // 42: Spark's rows differed from its first run's in 2 of 6 runs.)
                    def sparkVaries = (0 until 4).exists { _ =>
                      run(sql, tessera = false) match {
                        case Rows(again, _, _, _, _) => again.sorted != e.sorted
                        case _ => false
                      }
                    }
                    if (e.sorted == a.sorted || floatBits && sparkVaries) None else {
                      val tag = if (floatBits) " [differs only in floating point last bits]"
                        else ""
                      Some(s"results differ$tag: Spark ${e.size} rows, Tessera ${a.size} rows\n" +
                        s"  only Spark's:   ${onlyIn(e, a, 8).mkString("\n                  ")}\n" +
                        s"  only Tessera's: ${onlyIn(a, e, 8).mkString("\n                  ")}")
                    }
                  case (Failed(c1, _), Failed(c2, _)) =>
                    bothFailed += 1
                    if (c1 == c2) None else {
                      // Which task fails first may decide the error: run each side twice more.
                      def conditions(tessera: Boolean, first: String) = Set(first) ++
                        (0 until 2).map(_ => run(sql, tessera)).collect { case Failed(c, _) => c }
                      val (cpu, gpu) = (conditions(false, c1), conditions(true, c2))
                      if ((cpu intersect gpu).nonEmpty) None
                      else Some(s"different errors: Spark $cpu, Tessera $gpu\n" +
                        s"  Spark:   ${describe(expected)}\n  Tessera: ${describe(actual)}")
                    }
                  case _ =>
                    Some(s"one side failed\n  Spark:   ${describe(expected)}\n" +
                      s"  Tessera: ${describe(actual)}")
                }
                problem.foreach { p =>
                  val report = s"seed=$seed query=$index ansi=$ansi aqe=$aqe\n  SQL: $sql\n  $p"
                  println(s"[fuzz] FAILURE $report")
                  if (prop("tessera.fuzz.verbose").isDefined) {
                    withConf("spark.tessera.enabled" -> "true") {
                      println(s"[fuzz] Tessera's plan:\n${spark.sql(sql).queryExecution.executedPlan}")
                    }
                  }
                  failures += report
                }
            }
          }
        }
        if ((index + 1) % 50 == 0) {
          println(f"[fuzz] seed $seed: ${index + 1} queries, ${failures.size} failures so far," +
            f" ${(System.nanoTime() - started) / 1e9}%.0f s")
        }
      }
    }
    val seconds = (System.nanoTime() - started) / 1e9
    println(f"[fuzz] summary: $total queries ($ansiCount with ANSI), $onGpu on the GPU" +
      f" ($withGpuJoin with a GPU join, $withDictionaryIds uploading Parquet dictionary ids)," +
      f" ${failures.size} failures, $bothFailed failed on both" +
      f" sides alike or not, $invalid generated queries invalid (skipped); seeds" +
      f" ${seeds.mkString(",")}, $seconds%.0f s")
    assert(failures.isEmpty, s"${failures.size} of $total queries differ:\n\n" +
      failures.mkString("\n\n"))
    if (seeds.exists(_ % 3 == 0) && onlyQuery.isEmpty && queriesPerSeed >= CiQueriesPerSeed) {
      assert(withDictionaryIds > 0, "no query of a Parquet seed uploaded dictionary ids")
    }
  }
}
