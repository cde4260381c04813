package dev.tessera.it

import dev.tessera.it.TestSessions._
import dev.tessera.spark.TesseraRuntime
import dev.tessera.spark.exec.{HostToDeviceExec, TesseraFusedExec, TesseraHashAggregateExec}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.scalatest.concurrent.Eventually._
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Seconds, Span}

/**
 * Memory pressure (DESIGN.md §2): with small device or pinned caps, aggregations with many
 * groups, joins with large broadcast sides and filters producing long strings still give Spark's
 * results; the fallbacks are counted in the nodes' metrics. The caps are read once per runtime,
 * so each configuration gets a session of its own (and so a runtime of its own).
 */
class MemoryPressureSuite extends AnyFunSuite with GpuQueryTest {
  private val KiB = 1024L
  private val MiB = 1024L * 1024L

  /**
   * Runs `body` in a fresh session (and runtime) with the extra settings `conf`. Both of local
   * mode's tasks are admitted to the GPU at once unless `conf` says otherwise (the automatic
   * limit of spark.tessera.concurrentGpuTasks would admit one under these small caps), so the
   * tasks compete for memory.
   */
  private def withCaps(conf: (String, String)*)(body: => Unit): Unit = {
    spark = create(getClass.getSimpleName, (Seq(Plugin, "spark.tessera.backend" -> testBackend,
      "spark.sql.ansi.enabled" -> "false", "spark.tessera.concurrentGpuTasks" -> "2") ++ conf): _*)
    spark.range(0, 80000, 1, 2).selectExpr("id AS k", "id % 7 AS v").createOrReplaceTempView("many")
    spark.range(0, 15000, 1, 2).selectExpr("id * 3 AS dk", "id % 11 AS dv")
      .createOrReplaceTempView("dim")
    spark.range(0, 50000, 1, 2).selectExpr("id % 20000 * 3 AS fk", "id AS fv")
      .createOrReplaceTempView("fact")
    body
    // Every task gave its memory back: what is left is the device store's (idle join tables).
    val backend = TesseraRuntime.backend()
    val store = TesseraRuntime.deviceStore().stats()
    assert(backend.deviceMemory().bytesInUse() == 0 || store.entries() > 0,
      s"device memory leaked: ${backend.deviceMemory().bytesInUse()} bytes in use; $store")
  }

  private def metric(df: DataFrame, name: String): Long =
    nodes(finalPlan(df)).flatMap(_.metrics.get(name)).map(_.value).sum

  private def manyGroups(): DataFrame = checkGpu(
    spark.sql("SELECT k, count(*), sum(v) FROM many GROUP BY k"), gpuNodeCount = -1)

  private def bigBroadcast(): DataFrame = checkGpu(
    spark.sql("SELECT /*+ BROADCAST(dim) */ fk, fv, dv FROM fact JOIN dim ON fk = dk" +
      " WHERE fv % 3 = 0"), gpuNodeCount = -1)

  private def bigBroadcastAggregate(): DataFrame = checkGpu(
    spark.sql("SELECT /*+ BROADCAST(dim) */ dv, count(*), sum(fv) FROM fact JOIN dim" +
      " ON fk = dk GROUP BY dv"), gpuNodeCount = -1)

  private def longStrings(): DataFrame = checkGpu(
    spark.sql("SELECT k, concat(repeat('x', 1000), CAST(k AS STRING)) AS s FROM many" +
      " WHERE k % 5 = 0 AND k < 30000"), gpuNodeCount = -1)

  private def all(): Unit = {
    manyGroups()
    bigBroadcast()
    bigBroadcastAggregate()
    longStrings()
  }

  test("device cap 1 MiB") {
    withCaps("spark.tessera.memory.deviceCapBytes" -> MiB.toString) {
      all()
      // A task's 40,000 groups do not fit at once: the aggregation split its batch or emitted
      // its groups early (which one depends on what the other task holds at the time).
      val df = manyGroups()
      assert(metric(df, "memorySplits") + metric(df, "tableFlushes") > 0)
    }
  }

  test("device cap 64 KiB") {
    withCaps("spark.tessera.memory.deviceCapBytes" -> (64 * KiB).toString) {
      all()
      // The strings do not fit in one output: the filter ran its batches in parts.
      assert(metric(longStrings(), "memorySplits") > 0)
    }
  }

  test("device cap 64 KiB: Parquet dictionary ids sent in halves with their dictionaries") {
    withCaps("spark.tessera.memory.deviceCapBytes" -> (64 * KiB).toString,
      "spark.tessera.upload.dictionaryIds.enabled" -> "true") {
      val dir = java.nio.file.Files.createTempDirectory("tessera-dictionary-pressure").toString
      spark.range(0, 80000, 1, 2).selectExpr("CAST(id % 37 AS INT) AS a",
        "IF(id % 9 = 4, NULL, id % 101 * 1000000007) AS b", "CAST(id % 13 AS DOUBLE) / 4 AS c")
        .write.mode("overwrite").parquet(dir)
      val df = checkGpu(spark.read.parquet(dir).filter("a % 2 = 0").selectExpr("a", "b", "c * 3"))
      assert(metric(df, "dictionaryColumnsDecoded") > 0)
      assert(metric(df, "memorySplits") > 0)
    }
  }

  test("device cap 16 MiB with 256 KiB batches") {
    withCaps("spark.tessera.memory.deviceCapBytes" -> (16 * MiB).toString,
      "spark.tessera.batchSizeBytes" -> (256 * KiB).toString)(all())
  }

  test("device cap 1 KiB: an aggregation that cannot run even in parts runs Spark's plan") {
    // Not even a few rows fit the table: before its first output row, the task runs Spark's
    // plan for that GPU segment instead (CpuFallbackRDD). (A step that already output rows and
    // then finds that a single row cannot fit fails, naming the setting.)
    // One task at a time: two tasks each holding part of so small a pool wait on each other
    // and may fail instead (the pool is found full after output began).
    withCaps("spark.tessera.memory.deviceCapBytes" -> KiB.toString,
        "spark.tessera.concurrentGpuTasks" -> "1") {
      assert(metric(manyGroups(), "cpuFallbackTasks") > 0)
    }
  }

  test("device cap 4 KiB with two tasks at once: the aggregation gives Spark's result") {
    // Each task falls back, splits, or waits for the other to free the pool (a task whose first
    // rows already went out can only wait); none fails.
    withCaps("spark.tessera.memory.deviceCapBytes" -> (4 * KiB).toString) {
      manyGroups()
    }
  }

  test("pinned cap 1 MiB") {
    withCaps("spark.tessera.memory.pinnedCapBytes" -> MiB.toString)(all())
  }

  test("a device store cap below one join table: each table goes when its tasks are done") {
    withCaps("spark.tessera.cache.deviceBytes" -> KiB.toString) {
      bigBroadcast()
      bigBroadcastAggregate()
      val stats = TesseraRuntime.deviceStore().stats()
      assert(stats.misses() > 0 && stats.evictions() == stats.misses() && stats.entries() == 0,
        stats.toString)
    }
  }

  test("the tasks of a broadcast share one join table, which stays idle in the store") {
    withCaps() {
      bigBroadcast()
      val stats = TesseraRuntime.deviceStore().stats()
      assert(stats.entries() == 1 && stats.misses() == 1 && stats.hits() > 0 &&
        stats.evictions() == 0, stats.toString)
    }
  }

  test("16 tasks at once with 2 admitted to the GPU: results equal, a failed task's place freed") {
    withCaps("spark.master" -> "local[16]", "spark.tessera.concurrentGpuTasks" -> "2") {
      val semaphore = TesseraRuntime.semaphore()
      assert(semaphore.limit() == 2)
      spark.range(0, 800000, 1, 16).selectExpr("id % 5000 AS k", "id AS v")
        .createOrReplaceTempView("wide")
      val df = checkGpu(spark.sql("SELECT k, v * 3 FROM wide WHERE v % 7 <> 0"))
      assert(df.rdd.getNumPartitions >= 16)
      checkGpu(spark.sql("SELECT k, count(*), sum(v) FROM wide GROUP BY k"), gpuNodeCount = -1)
      // A GPU task that fails (ANSI overflow, raised by the kernel) gives its place back too.
      withConf("spark.sql.ansi.enabled" -> "true") {
        assert(checkSameError(spark.sql("SELECT CAST(v * 5000 AS INT) FROM wide WHERE v > 3")) ==
          "CAST_OVERFLOW")
      }
      assert(semaphore.mostHolders() >= 1 && semaphore.mostHolders() <= 2, semaphore.toString)
      // Each task gives its place back as it ends; the failed stage's other tasks end as they
      // are killed, which may be after the query has failed.
      eventually(timeout(Span(30, Seconds))) {
        assert(semaphore.holders() == 0, semaphore.toString)
      }
    }
  }
}
