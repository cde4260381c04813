package dev.tessera.it

import dev.tessera.it.TestSessions._
import dev.tessera.spark.TesseraRuntime
import dev.tessera.gpu.codec.Encoding
import dev.tessera.spark.cache.{CacheSummary, CachedColumnKey, TesseraCachedBatchSerializer}
import dev.tessera.spark.exec.{HostToDeviceExec, TesseraCacheScanExec}
import java.nio.file.Files
import org.apache.spark.sql.DataFrame
import dev.tessera.spark.rewrite.GpuRules
import org.apache.spark.sql.execution.columnar.{InMemoryRelation, InMemoryTableScanExec}
import scala.jdk.CollectionConverters._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Tables cached in Tessera's GPU-FOR format (TesseraCachedBatchSerializer): the plugin alone makes
 * it Spark's cache serializer; queries over a cached table give the rows Spark computes from the
 * uncached data, on the CPU (decoded on the host) and on the GPU (the device copy, decoded by the
 * kernels as they load it); the device store evicts and uploads again, and unpersist releases.
 */
class CacheSuite extends AnyFunSuite with GpuQueryTest {
  override protected def sessionSettings: Seq[(String, String)] =
    Seq("spark.tessera.cache.batchRows" -> "1000", "spark.sql.ansi.enabled" -> "false")

  /** Rows with what real data has: repeated keys, nulls, NaN, -0.0, boundaries, empty strings. */
  private def source(spark: org.apache.spark.sql.SparkSession): DataFrame = spark.range(0, 5000, 1, 3)
    .selectExpr(
      "id AS k",
      "CASE WHEN id % 13 = 0 THEN NULL ELSE CAST(id % 97 AS INT) END AS i",
      "CASE WHEN id = 7 THEN 9223372036854775807 WHEN id = 8 THEN -9223372036854775808" +
        " WHEN id % 11 = 0 THEN NULL ELSE id * 1000003 - 77 END AS l",
      "CASE WHEN id % 17 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 19 = 0 THEN -0.0" +
        " WHEN id % 23 = 0 THEN NULL ELSE id / 7.0 END AS d",
      "CASE WHEN id % 5 = 0 THEN '' WHEN id % 29 = 0 THEN NULL" +
        " ELSE concat('s', CAST(id % 41 AS STRING)) END AS s",
      "CAST(id % 1000 AS DECIMAL(9,2)) AS dec",
      "date_add(DATE'2020-01-01', CAST(id % 400 AS INT)) AS dt",
      "CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id % 2 = 0 AS BOOLEAN) END AS b",
      "CAST(2147483647 - id AS INT) AS big")

  private val queries = Seq(
    "SELECT k, i, l, d, s FROM t WHERE i > 50 AND s <> ''",
    "SELECT k + l AS x, dec * 2 AS y, dt FROM t WHERE d > 100 OR d IS NULL",
    "SELECT s, count(*), sum(i), min(l), max(big) FROM t GROUP BY s",
    "SELECT i, count(*), sum(dec), avg(i) FROM t WHERE dt >= DATE'2020-06-01' GROUP BY i",
    "SELECT k, b, big FROM t WHERE k BETWEEN 1000 AND 3999 AND (b OR b IS NULL)",
    "SELECT /*+ BROADCAST(u) */ t.k, u.name, t.l FROM t JOIN u ON t.i = u.id WHERE t.k % 3 = 1")

  private def registerTables(cache: Boolean): Unit = {
    val t = source(spark)
    val u = spark.range(0, 60).selectExpr("CAST(id AS INT) AS id", "concat('n', id) AS name")
    if (cache) {
      t.cache().count()
      u.cache().count()
    }
    t.createOrReplaceTempView("t")
    u.createOrReplaceTempView("u")
  }

  private def expectedRows(sql: String): Seq[String] = {
    spark.catalog.clearCache()
    withConf("spark.tessera.enabled" -> "false") {
      registerTables(cache = false)
      spark.sql(sql).collect().toSeq.map(_.toString).sorted
    }
  }

  private def cacheScans(df: DataFrame): Seq[TesseraCacheScanExec] =
    nodes(finalPlan(df)).collect { case s: TesseraCacheScanExec => s }

  test("the plugin alone makes Tessera's format the cache serializer") {
    assert(spark.sparkContext.getConf.get("spark.sql.cache.serializer") ==
      classOf[TesseraCachedBatchSerializer].getName)
    val df = spark.range(10).toDF("x")
    df.cache()
    val relation = df.queryExecution.withCachedData.collectFirst { case r: InMemoryRelation => r }
    assert(relation.exists(_.cacheBuilder.serializer.isInstanceOf[TesseraCachedBatchSerializer]))
    df.unpersist(blocking = true)
  }

  test("queries over a cached table equal Spark's over the uncached data, CPU and GPU") {
    for (sql <- queries) {
      val expected = expectedRows(sql)
      registerTables(cache = true)
      val df = checkGpu(spark.sql(sql), gpuNodeCount = -1)
      assert(df.collect().toSeq.map(_.toString).sorted == expected, sql)
      assert(cacheScans(df).nonEmpty, s"no GPU cache scan in\n${finalPlan(df)}")
      val uploadsOfCache = nodes(finalPlan(df)).collect { case u: HostToDeviceExec => u }
        .filter(u => TesseraCacheScanExec.tesseraCacheScan(u.child) != null)
      assert(uploadsOfCache.isEmpty, s"an upload of the cached table in\n${finalPlan(df)}")
      spark.catalog.clearCache()
    }
  }

  test("a cache built from Parquet gives the same rows") {
    val dir = Files.createTempDirectory("tessera-cache").resolve("t").toString
    source(spark).write.parquet(dir)
    val sql = "SELECT s, count(*), sum(l), min(d) FROM p WHERE k % 2 = 0 GROUP BY s"
    val expected = withConf("spark.tessera.enabled" -> "false") {
      spark.read.parquet(dir).createOrReplaceTempView("p")
      spark.sql(sql).collect().toSeq.map(_.toString).sorted
    }
    val p = spark.read.parquet(dir)
    p.cache().count()
    p.createOrReplaceTempView("p")
    val df = checkGpu(spark.sql(sql), gpuNodeCount = -1)
    assert(df.collect().toSeq.map(_.toString).sorted == expected)
    assert(cacheScans(df).nonEmpty)
    p.unpersist(blocking = true)
  }

  test("batch pruning skips cached batches the statistics rule out") {
    val t = spark.range(0, 20000, 1, 1).selectExpr("id AS k", "id % 10 AS v")
    t.cache().count()
    t.createOrReplaceTempView("sorted")
    val df = checkGpu(spark.sql("SELECT k, v FROM sorted WHERE k < 1500"), gpuNodeCount = -1)
    val batches = cacheScans(df).flatMap(_.metrics.get("numOutputBatches")).map(_.value).sum
    assert(batches == 2, s"read $batches of 20 batches")
    t.unpersist(blocking = true)
  }

  test("a table with a type Tessera does not store is cached by Spark's serializer") {
    val t = spark.range(0, 100).selectExpr("id AS k", "array(id, id + 1) AS a")
    t.cache().count()
    t.createOrReplaceTempView("arrays")
    val df = checkGpu(spark.sql("SELECT k FROM arrays WHERE k % 3 = 0"), gpuNodeCount = 1)
    assert(cacheScans(df).isEmpty)
    assert(CacheSummary.of(t) == null)
    val scan = nodes(finalPlan(df)).collectFirst { case s: InMemoryTableScanExec => s }.get
    assert(GpuRules.standard().byDesign(scan).contains("cached in Spark's format"))
    t.unpersist(blocking = true)
  }

  test("the cache summary and the scan's per-column metrics report what the batches hold") {
    val t = source(spark)
    t.cache().count()
    t.createOrReplaceTempView("t")
    val summary = CacheSummary.of(t)
    val byName = summary.columns().asScala.map(c => c.name() -> c).toMap
    assert(summary.rows() == 5000 && byName("k").batches() == 6, summary.render())
    // k is sorted within each batch: deltas of 1 pack in almost nothing.
    assert(byName("k").batches(Encoding.DFOR) == 6 && byName("k").bitsPerRow() < 4,
      summary.render())
    assert(byName("d").batches(Encoding.PLAIN) == 6 && byName("d").storedBytes() ==
      byName("d").plainBytes(), summary.render())
    assert(byName("s").dictionaryBatches() == 6, summary.render())
    assert(summary.storedBytes() == summary.columns().asScala.map(_.storedBytes()).sum)
    assert(summary.storedBytes() < summary.plainBytes(), summary.render())
    assert(summary.render().linesIterator.exists(_.trim.startsWith("s ")), summary.render())

    val df = checkGpu(spark.sql("SELECT k, s FROM t WHERE i > 50"), gpuNodeCount = -1)
    df.collect()
    val scan = cacheScans(df).head
    val inPlan = nodes(finalPlan(df)).collectFirst { case s: InMemoryTableScanExec => s }.get
    assert(GpuRules.standard().byDesign(inPlan).contains("cached in Tessera's format"))
    val m = scan.metrics
    val names = scan.output.map(_.name)
    val stored = names.indices.map(i => m(s"cachedColumn${i}Stored").value)
    val plain = names.indices.map(i => m(s"cachedColumn${i}Plain").value)
    assert(stored.sum == m("cacheEncodedBytes").value && plain.sum == m("cachePlainBytes").value)
    for ((name, i) <- names.zipWithIndex) {
      assert(stored(i) == byName(name).storedBytes() && plain(i) == byName(name).plainBytes(),
        s"$name: ${stored(i)} / ${plain(i)} read\n${summary.render()}")
    }
    t.unpersist(blocking = true)
  }

  test("unpersist releases the device copies; the pool is empty at the end") {
    val t = source(spark)
    t.cache().count()
    t.createOrReplaceTempView("t")
    checkGpu(spark.sql(queries.head), gpuNodeCount = -1)
    val store = TesseraRuntime.deviceStore()
    assert(store.stats().bytes() > 0)
    t.unpersist(blocking = true)
    // The block managers dropped the blocks; the next cache scan (or this) releases the copies.
    CachedColumnKey.releaseUnpersisted(store)
    assert(store.removeIf(_.isInstanceOf[CachedColumnKey]) == 0, "device copies outlived the cache")
    store.evictIdle()
    assert(TesseraRuntime.backend().deviceMemory().bytesInUse() == 0, "device memory leaked")
  }

  test("two sessions caching the same data read their own copies") {
    val other = spark.newSession()
    val a = source(spark).where("k % 2 = 0")
    val b = source(other).where("k % 2 = 0")
    a.cache().count()
    b.cache().count()
    a.createOrReplaceTempView("a")
    b.createOrReplaceTempView("b")
    val sql = "SELECT s, count(*), sum(i) FROM %s GROUP BY s"
    val fromA = checkGpu(spark.sql(sql.format("a")), gpuNodeCount = -1).collect().map(_.toString)
    val fromB = other.sql(sql.format("b")).collect().map(_.toString)
    assert(fromA.sorted.toSeq == fromB.sorted.toSeq)
    a.unpersist(blocking = true)
    b.unpersist(blocking = true)
  }

  test("a tiny device store evicts and uploads again; results stay equal") {
    val sql = "SELECT s, count(*), sum(l) FROM t GROUP BY s"
    val expected = expectedRows(sql)
    spark = create(getClass.getSimpleName, Seq(Plugin, "spark.tessera.backend" -> testBackend,
      "spark.tessera.cache.batchRows" -> "1000", "spark.tessera.cache.deviceBytes" -> "16k",
      "spark.sql.ansi.enabled" -> "false"): _*)
    registerTables(cache = true)
    for (_ <- 1 to 2) {
      val df = checkGpu(spark.sql(sql), gpuNodeCount = -1)
      assert(df.collect().toSeq.map(_.toString).sorted == expected)
    }
    val stats = TesseraRuntime.deviceStore().stats()
    assert(stats.evictions() > 0, stats.toString)
    assert(stats.bytes() <= 16 * 1024 || stats.entries() <= 2, stats.toString)
    spark.catalog.clearCache()
  }
}
