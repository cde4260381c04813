package dev.tessera.it

import dev.tessera.gpu.{BackendKind, Backends, RuntimeOptions}
import dev.tessera.gpu.column.{ColumnTransfer, ColumnType, HostColumnBuilder}
import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * The device runtime works inside Spark's executor tasks, next to Spark's own Arrow, Netty and
 * Scala: each task opens the backend under test, stages its partition's values, round-trips them
 * through device memory and checks the pools are empty afterwards.
 */
class ExecutorRuntimeSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var spark: SparkSession = _

  private val backend: BackendKind =
    BackendKind.fromConfigValue("tessera.test.backend",
      sys.props.getOrElse("tessera.test.backend", "host-reference"))

  override def beforeAll(): Unit = {
    spark = SparkSession.builder()
      .master("local[2]")
      .appName("tessera-executor-runtime")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .getOrCreate()
  }

  override def afterAll(): Unit = {
    if (spark != null) spark.stop()
  }

  test(s"every task round-trips its partition through ${backend.configValue} device memory") {
    val kind = backend
    val results = spark.sparkContext.parallelize(1L to 200000L, 4).mapPartitions { values =>
      val input = values.toArray
      val rt = Backends.open(kind, RuntimeOptions.defaults().withDeviceMemoryCap(256L << 20))
      try {
        val stream = rt.newStream()
        try {
          val builder = new HostColumnBuilder(ColumnType.LONG, input.length, rt.stagingAllocator())
          input.foreach(v => if (v % 97 == 0) builder.appendNull() else builder.appendLong(v * 3))
          val host = builder.build()
          val device = ColumnTransfer.toDeviceAsync(host, rt.deviceMemory(), stream)
          val back = ColumnTransfer.toHost(device, rt.stagingAllocator(), stream)
          val same = input.indices.forall { i =>
            if (input(i) % 97 == 0) back.isNull(i) else !back.isNull(i) && back.getLong(i) == input(i) * 3
          }
          Seq(host, device, back).foreach(_.close())
          val inUse = rt.deviceMemory().bytesInUse() + rt.pinnedMemory().bytesInUse()
          Iterator((input.length, same, inUse))
        } finally stream.close()
      } finally rt.close()
    }.collect()

    assert(results.map(_._1).sum == 200000)
    assert(results.forall(_._2), "a partition came back different")
    assert(results.forall(_._3 == 0L), "a pool was not empty after the task")
  }
}
