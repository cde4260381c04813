package dev.tessera.it

import dev.tessera.gpu.cuda.CudaAvailability
import dev.tessera.it.TestSessions._
import dev.tessera.spark.exec.{CpuFallbackExec, DeviceToHostExec, TesseraHashAggregateExec}
import dev.tessera.spark.plugin.{ExecutorDeviceState, TesseraDriverPlugin}
import dev.tessera.spark.rewrite.TesseraColumnarRule.Outcome
import java.lang.management.ManagementFactory
import java.nio.file.{Files, Path}
import java.util.Comparator
import java.util.concurrent.atomic.AtomicReference
import org.apache.logging.log4j.Level
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskStart}
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.functions.{broadcast, col, count, sum, udf}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.concurrent.{Await, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

/**
 * Tessera on a standalone cluster: Spark's `local-cluster` master starts a Master and two Workers
 * (in this JVM) bound to 127.0.0.1, and the Workers launch two executor JVMs from this JVM's class
 * path, that is from the project's own jars and classes. The executors report their device
 * runtime to the driver, which plans by those reports, and each GPU segment keeps Spark's plan for
 * tasks that find no usable runtime.
 *
 * Local-cluster needs Spark's test mode in this JVM (spark.testing: the Workers take the executors'
 * class path from it, and their Spark home from spark.test.home), and SPARK_LOCAL_IP=127.0.0.1 in
 * the environment (set by the Maven build) so that nothing binds beyond the loopback interface.
 */
class LocalClusterSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val Master = "local-cluster[2,1,1024]"
  private val Executors = 2
  private val ExplainReport = "Tessera plan (spark.tessera.explain="
  private var sparkHome: Path = _
  private val savedProps = Seq("spark.testing", "spark.test.home").map(k => k -> sys.props.get(k))

  override def beforeAll(): Unit = {
    stopAll()
    sparkHome = Files.createTempDirectory("tessera-spark-home")
    // The Workers' launcher wants a Scala build directory (or SPARK_SCALA_VERSION) and a jars
    // directory there; the executors' class path is this JVM's (Spark's test mode).
    Files.createDirectories(sparkHome.resolve("launcher/target/scala-2.13"))
    Files.createDirectories(sparkHome.resolve("jars"))
    sys.props("spark.testing") = "1"
    sys.props("spark.test.home") = sparkHome.toString
  }

  override def afterAll(): Unit = {
    try stopAll()
    finally {
      savedProps.foreach {
        case (k, Some(v)) => sys.props(k) = v
        case (k, None) => sys.props -= k
      }
      if (sparkHome != null) {
        Files.walk(sparkHome).sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
      }
    }
  }

  /** The JVM flags of this JVM that Spark and Tessera need in the executors too. */
  private def executorJavaOptions: String =
    ManagementFactory.getRuntimeMXBean.getInputArguments.asScala.filter { a =>
      a.startsWith("--add-opens") || a.startsWith("--enable-native-access") ||
        a.startsWith("-Djdk.reflect") || a.startsWith("-Dio.netty") ||
        a == "-XX:+IgnoreUnrecognizedVMOptions"
    }.mkString(" ")

  private def withCluster[T](appName: String, settings: (String, String)*)
      (body: SparkSession => T): T = {
    assume(sys.env.get("SPARK_LOCAL_IP").contains("127.0.0.1"),
      "SPARK_LOCAL_IP=127.0.0.1 must be set (the Maven build sets it), so that the cluster binds" +
        " to the loopback interface only")
    stopAll()
    val builder = SparkSession.builder()
      .master(Master)
      .appName(appName)
      .config("spark.ui.enabled", "false")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1")
      .config("spark.executor.memory", "1g")
      .config("spark.executor.extraJavaOptions", executorJavaOptions)
      .config("spark.sql.shuffle.partitions", "4")
      .config(Plugin._1, Plugin._2)
    settings.foreach { case (k, v) => builder.config(k, v) }
    val spark = builder.getOrCreate()
    try body(spark)
    finally stopAll()
  }

  private def deviceStates: Seq[ExecutorDeviceState] =
    Option(TesseraDriverPlugin.executorDevices()).map(_.states().asScala.toSeq).getOrElse(Nil)

  /** Waits until `n` live executors have reported their device runtime. */
  private def awaitReports(n: Int): Seq[ExecutorDeviceState] = {
    val deadline = System.nanoTime() + 90.seconds.toNanos
    while (deviceStates.size != n && System.nanoTime() < deadline) Thread.sleep(100)
    val states = deviceStates
    assert(states.size == n, s"expected $n executors to report, got $states")
    states
  }

  private def withTessera[T](spark: SparkSession, enabled: Boolean)(body: => T): T = {
    spark.conf.set("spark.tessera.enabled", enabled.toString)
    try body finally spark.conf.unset("spark.tessera.enabled")
  }

  private def rows(df: DataFrame): Seq[String] = df.collect().toSeq.map(_.toString).sorted

  /** A fact table of `rows` rows in `partitions` partitions. */
  private def fact(spark: SparkSession, rows: Long, partitions: Int): DataFrame =
    spark.range(0, rows, 1, partitions).selectExpr("id % 50 AS k", "id AS v", "id % 7 AS m")

  /** A small dimension table, local rows (so that its broadcast needs no job of its own). */
  private def dim(spark: SparkSession): DataFrame = {
    import spark.implicits._
    Seq.tabulate(50)(i => (i.toLong, i % 5L)).toDF("k", "g")
  }

  /** A filter, a broadcast join and an aggregate. */
  private def starQuery(spark: SparkSession, facts: DataFrame): DataFrame =
    facts.filter("m <> 3").join(broadcast(dim(spark)), "k")
      .groupBy("g").agg(sum("v").as("total"), count("*").as("n"))

  private def nodes(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case a: AdaptiveSparkPlanExec => nodes(a.executedPlan)
    case q: QueryStageExec => q +: nodes(q.plan)
    case p => p +: p.children.flatMap(nodes)
  }

  private def finalNodes(df: DataFrame): Seq[SparkPlan] = nodes(df.queryExecution.executedPlan)

  test("backend=cuda on executors without a GPU: Spark's results on the CPU, one warning") {
    assume(!CudaAvailability.get().isAvailable, "this machine has a CUDA device")
    LogCapture("dev.tessera") { log =>
      withCluster("tessera-cluster-no-gpu") { spark =>
        // The first query is planned while the executors are still starting (GPU nodes, each
        // keeping Spark's plan) or after they reported (Spark's plan): Spark's result either way.
        val first = rows(starQuery(spark, fact(spark, 100000, 4)))
        val expected = withTessera(spark, enabled = false)(rows(starQuery(spark, fact(spark,
          100000, 4))))
        assert(first == expected)

        val states = awaitReports(Executors)
        assert(states.forall(s => !s.usable && s.backend == "cuda"), states)
        assert(states.forall(_.reason.startsWith("no usable CUDA device")), states)

        // A driver that believes its executors have GPUs (as it may for an executor that joins
        // later): GPU plans, whose tasks find no runtime and run the Spark plans they kept.
        val devices = TesseraDriverPlugin.executorDevices()
        states.foreach(s => devices.record(new ExecutorDeviceState(s.executorId, s.host, "cuda",
          true, null)))
        try {
          val gpuPlanned = starQuery(spark, fact(spark, 100000, 4))
          assert(rows(gpuPlanned) == expected)
          val planned = finalNodes(gpuPlanned)
          assert(planned.exists(_.isInstanceOf[TesseraHashAggregateExec]),
            s"no GPU aggregate in\n${gpuPlanned.queryExecution.executedPlan}")
          assert(planned.exists(_.isInstanceOf[CpuFallbackExec]))
          // Without adaptive execution too (one plan with its exchanges).
          withoutAdaptive(spark) {
            val join = fact(spark, 20000, 4).filter("m <> 3").join(broadcast(dim(spark)), "k")
              .selectExpr("g", "v * 2 AS w")
            val fallbacks = nodes(join.queryExecution.executedPlan)
              .collect { case f: CpuFallbackExec => f }
            assert(fallbacks.nonEmpty, s"no per-task fallback in\n${join.queryExecution.executedPlan}")
            assert(fallbacks.forall(f => nodes(f.child).exists(_.isInstanceOf[DeviceToHostExec])))
            assert(rows(join) == withTessera(spark, enabled = false)(rows(join)))
            assert(rows(starQuery(spark, fact(spark, 100000, 4))) == expected)
          }
        } finally states.foreach(devices.record)

        // Planned now that both have reported: all on the CPU, and explain says why.
        val rule = tesseraRules(spark).head
        val df = starQuery(spark, fact(spark, 100000, 4))
        assert(rows(df) == expected)
        assert(rule.lastOutcome() == Outcome.RUNTIME_NOT_USABLE)
        assert(!finalNodes(df).exists(_.getClass.getName.startsWith("dev.tessera")),
          s"Tessera nodes in\n${df.queryExecution.executedPlan}")
        spark.conf.set("spark.tessera.explain", "not_on_gpu")
        try starQuery(spark, fact(spark, 1000, 2)).collect()
        finally spark.conf.unset("spark.tessera.explain")
        val explained = log.at(Level.WARN).filter(_.startsWith(ExplainReport))
        assert(explained.exists(_.contains("has no usable GPU: no usable CUDA device")),
          explained.mkString("\n"))
      }
      val warnings = log.at(Level.WARN).filterNot(_.startsWith(ExplainReport))
      assert(warnings.size == 1, s"expected one warning, got:\n${warnings.mkString("\n")}")
      // The host is 127.0.0.1, or localhost once a local-mode session in this JVM set Spark's
      // host name (both the loopback interface).
      assert(warnings.head.matches("Tessera: executor \\d+ \\((127\\.0\\.0\\.1|localhost)\\) has no usable" +
        " GPU: no usable CUDA device .*; its tasks run Spark's CPU operators.*"), warnings.head)
    }
  }

  test("backend=host-reference: Spark's results, also when an executor is killed mid-query") {
    withCluster("tessera-cluster-host-reference", "spark.tessera.backend" -> "host-reference") {
        spark =>
      val states = awaitReports(Executors)
      assert(states.forall(s => s.usable && s.reason == null), states)

      val expected = withTessera(spark, enabled = false)(rows(starQuery(spark,
        fact(spark, 100000, 4))))
      val df = starQuery(spark, fact(spark, 100000, 4))
      assert(rows(df) == expected)
      val planned = finalNodes(df)
      assert(planned.exists(_.isInstanceOf[TesseraHashAggregateExec]),
        s"no GPU aggregate in\n${df.queryExecution.executedPlan}")
      assert(planned.exists(_.isInstanceOf[CpuFallbackExec]),
        s"no per-task fallback in\n${df.queryExecution.executedPlan}")

      // Sixteen tasks of about half a second over two single-core executors; one executor is
      // killed once it runs one of them. Its running task and its map outputs are lost, and
      // Spark reruns them on the other.
      val slow = udf { (v: Long) => if (v % 2500 == 0) Thread.sleep(100); true }
      val slowFacts = fact(spark, 200000, 16).filter(slow(col("v")))
      val expectedSlow = withTessera(spark, enabled = false)(rows(starQuery(spark,
        fact(spark, 200000, 16))))
      val sc = spark.sparkContext
      val victim = new AtomicReference[String]()
      sc.addSparkListener(new SparkListener {
        override def onTaskStart(start: SparkListenerTaskStart): Unit = {
          if (victim.compareAndSet(null, start.taskInfo.executorId)) {
            val id = start.taskInfo.executorId
            new Thread(() => { Thread.sleep(300); sc.killExecutor(id) }, "kill-executor").start()
          }
        }
      })
      val running = Future(rows(starQuery(spark, slowFacts)))(scala.concurrent.ExecutionContext.global)
      val actual = Await.result(running, 90.seconds)
      assert(victim.get != null)
      assert(actual == expectedSlow)
      val deadline = System.nanoTime() + 30.seconds.toNanos
      while (deviceStates.size != 1 && System.nanoTime() < deadline) Thread.sleep(100)
      assert(deviceStates.map(_.executorId) == Seq("0", "1").filterNot(_ == victim.get),
        "the killed executor's report was not dropped")

      // With one executor left, still GPU plans and Spark's results.
      val after = starQuery(spark, fact(spark, 50000, 4))
      assert(rows(after) == withTessera(spark, enabled = false)(rows(starQuery(spark,
        fact(spark, 50000, 4)))))
      assert(finalNodes(after).exists(_.isInstanceOf[TesseraHashAggregateExec]))
    }
  }

  private def withoutAdaptive[T](spark: SparkSession)(body: => T): T = {
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try body finally spark.conf.unset("spark.sql.adaptive.enabled")
  }
}
