package dev.tessera.it

import dev.tessera.it.TestSessions._
import dev.tessera.ssb.cli.KernelReport
import dev.tessera.spark.exec.{DeviceToHostExec, HostToDeviceExec, TesseraFusedExec}
import dev.tessera.spark.rewrite.{GpuRewrite, GpuRules}
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.scalatest.{BeforeAndAfterAll, Suite}
import scala.jdk.CollectionConverters._

/**
 * What every Spark-level suite does: one session with the plugin on the test backend; each query
 * runs with Tessera off (Spark's own result) and on, the results must be equal, and the plan must
 * hold the GPU nodes the test expects.
 */
trait GpuQueryTest extends BeforeAndAfterAll { self: Suite =>
  protected var spark: SparkSession = _

  /** Extra session settings of a suite. */
  protected def sessionSettings: Seq[(String, String)] = Seq.empty

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark = create(getClass.getSimpleName, (Seq(Plugin, "spark.tessera.backend" -> testBackend)
      ++ sessionSettings): _*)
  }

  override def afterAll(): Unit = {
    try stopAll() finally super.afterAll()
  }

  /** The final physical plan, looking inside adaptive execution and its query stages. */
  protected def finalPlan(df: DataFrame): SparkPlan = df.queryExecution.executedPlan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case p => p
  }

  protected def nodes(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case a: AdaptiveSparkPlanExec => nodes(a.executedPlan)
    case q: QueryStageExec => q +: nodes(q.plan)
    case p => p +: p.children.flatMap(nodes)
  }

  /** The table of rules the sessions rewrite with: it says what a Tessera node is. */
  protected val rules: GpuRules = GpuRules.standard()

  /** Every Tessera GPU node of the executed plan: the rules' operators and the transitions. */
  protected def tesseraNodes(df: DataFrame): Seq[SparkPlan] =
    nodes(finalPlan(df)).filter(rules.isGpuNode)

  /** The GPU operators of the executed plan (the nodes the rules produce). */
  protected def gpuOperators(df: DataFrame): Seq[SparkPlan] =
    nodes(finalPlan(df)).filter(rules.isGpuOperator)

  /** The fused filter/projection/probe nodes among the GPU operators. */
  protected def gpuNodes(df: DataFrame): Seq[TesseraFusedExec] =
    gpuOperators(df).collect { case g: TesseraFusedExec => g }

  /** Why Tessera left `node` on the CPU (empty when it did not look at it, or it runs on the GPU). */
  protected def cpuReasonsOn(node: SparkPlan): Seq[String] =
    node.getTagValue(GpuRewrite.CPU_REASONS).toSeq.flatMap(_.asScala)

  /** Spark's rows as strings that tell NaN, -0.0 and 0.0 apart. */
  private def render(rows: Array[Row]): Seq[String] = rows.toSeq.map(_.toString)

  private def withTessera[T](enabled: Boolean)(body: => T): T = {
    val key = "spark.tessera.enabled"
    val before = spark.conf.getOption(key)
    spark.conf.set(key, enabled.toString)
    try body finally before match {
      case Some(v) => spark.conf.set(key, v)
      case None => spark.conf.unset(key)
    }
  }

  /**
   * Runs `query` with Tessera off and on and checks the results are equal (in order when
   * `ordered`), and that `gpuNodeCount` fused GPU filter/project nodes ran (any number when it
   * is negative). Returns the GPU run's DataFrame for further checks.
   */
  protected def checkGpu(query: => DataFrame, gpuNodeCount: Int = 1,
      ordered: Boolean = false): DataFrame = {
    val expected = withTessera(enabled = false) {
      val df = query
      val rows = render(df.collect())
      assert(tesseraNodes(df).isEmpty, s"Tessera nodes with Tessera off:\n${finalPlan(df)}")
      rows
    }
    withTessera(enabled = true) {
      val df = query
      val actual = render(df.collect())
      if (ordered) {
        assert(actual == expected, s"\nGPU plan:\n${finalPlan(df)}")
      } else {
        assert(actual.sorted == expected.sorted, s"\nGPU plan:\n${finalPlan(df)}")
      }
      val found = gpuNodes(df).size
      assert(gpuNodeCount < 0 || found == gpuNodeCount,
        s"expected $gpuNodeCount GPU filter/project nodes, found $found in\n${finalPlan(df)}")
      // Every GPU operator hands its rows to the CPU, or to another GPU node, never dangles.
      val all = nodes(finalPlan(df))
      assert(gpuOperators(df).isEmpty == !all.exists(_.isInstanceOf[DeviceToHostExec]),
        s"GPU operators without a transition to the host, or the reverse:\n${finalPlan(df)}")
      assertKernelsGenerate(df)
      df
    }
  }

  /**
   * Every program of the plan's GPU pipelines gets a generated kernel that the in-jar PTX
   * compiler compiles with no stack, no spills and at most 128 registers, or is left to the
   * interpreter for a reason the generator may give (KernelReport.ProgramKernel.unexpected), on
   * whichever backend the suite runs: generating and compiling need no GPU.
   */
  protected def assertKernelsGenerate(df: DataFrame): Unit = {
    val wrong = kernelProblems(df)
    assert(wrong.isEmpty, s"generated kernels:\n${wrong.mkString("\n")}\nin\n${finalPlan(df)}")
  }

  /** What [[assertKernelsGenerate]] finds wrong with `df`'s plan's kernels, each with its program. */
  protected def kernelProblems(df: DataFrame): Seq[String] =
    KernelReport.kernels(df.queryExecution.executedPlan).asScala.toSeq.flatMap { k =>
      Option(k.unexpected()).map(w => s"$w\n${k.program().disassemble()}")
    }

  /** Both runs fail with the same Spark error condition (ANSI errors). */
  protected def checkSameError(query: => DataFrame): String = {
    def condition(enabled: Boolean): String = withTessera(enabled) {
      val e = failureOf(query.collect())
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst {
        case s: org.apache.spark.SparkThrowable if s.getCondition != null => s.getCondition
      }.getOrElse(s"no Spark error condition in ${messages(e)}")
    }
    val expected = condition(enabled = false)
    assert(condition(enabled = true) == expected)
    expected
  }

  /** Runs `body` with the session setting `kv`, restoring the setting afterwards. */
  protected def withConf[T](kv: (String, String))(body: => T): T = {
    val before = spark.conf.getOption(kv._1)
    spark.conf.set(kv._1, kv._2)
    try body finally before match {
      case Some(v) => spark.conf.set(kv._1, v)
      case None => spark.conf.unset(kv._1)
    }
  }

  /** The GPU transitions are in the plan exactly where the GPU part begins and ends. */
  protected def assertTransitions(df: DataFrame): Unit = {
    val all = nodes(finalPlan(df))
    assert(all.count(_.isInstanceOf[DeviceToHostExec]) == gpuNodes(df).size)
    assert(all.count(_.isInstanceOf[HostToDeviceExec]) == gpuNodes(df).size)
  }

  private def failureOf(body: => Any): Throwable = {
    val raised = try { body; None } catch { case e: Throwable => Some(e) }
    raised.getOrElse(throw new AssertionError("expected an error, none was raised"))
  }
}
