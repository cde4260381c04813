package dev.tessera.it.fuzz

import java.math.{BigDecimal => JBigDecimal}
import java.sql.{Date, Timestamp}
import java.time.{Instant, LocalDate}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

/** A seeded source of choices: every random decision of the fuzzer goes through one of these. */
final class Rng(seed: Long) {
  // java.util.Random's first values of nearby seeds are alike: mix the seed first (SplitMix64).
  private val r = new java.util.Random({
    var z = seed + 0x9E3779B97F4A7C15L
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL
    z ^ (z >>> 31)
  })
  def int(n: Int): Int = r.nextInt(n)
  def between(lo: Int, hi: Int): Int = lo + r.nextInt(hi - lo + 1)
  def long(): Long = r.nextLong()
  def double(): Double = r.nextDouble()
  def chance(p: Double): Boolean = r.nextDouble() < p
  def pick[T](xs: Seq[T]): T = xs(r.nextInt(xs.size))
  /** One of `choices`, each as likely as its weight; the thunk runs only for the one picked. */
  def weighted[T](choices: (Double, () => T)*): T = {
    var x = r.nextDouble() * choices.map(_._1).sum
    choices.find { case (w, _) => x -= w; x < 0 }.getOrElse(choices.last)._2()
  }
  def shuffle[T](xs: Seq[T]): Seq[T] = {
    val a = scala.collection.mutable.ArrayBuffer.from(xs)
    for (i <- a.indices.reverse) { val j = r.nextInt(i + 1); val t = a(i); a(i) = a(j); a(j) = t }
    a.toSeq
  }
}

/** The column types the fuzzer knows, grouped into the families its expressions combine. */
sealed abstract class FType(val sql: String, val spark: DataType) {
  def family: Family
}
sealed trait Family
object Family {
  case object Bool extends Family
  case object Num extends Family
  case object Date extends Family
  case object Ts extends Family
  case object Str extends Family
}
object FType {
  case object Bool extends FType("BOOLEAN", BooleanType) { def family: Family = Family.Bool }
  case object Byte extends FType("TINYINT", ByteType) { def family: Family = Family.Num }
  case object Short extends FType("SMALLINT", ShortType) { def family: Family = Family.Num }
  case object Int extends FType("INT", IntegerType) { def family: Family = Family.Num }
  case object Long extends FType("BIGINT", LongType) { def family: Family = Family.Num }
  case object Float extends FType("FLOAT", FloatType) { def family: Family = Family.Num }
  case object Double extends FType("DOUBLE", DoubleType) { def family: Family = Family.Num }
  final case class Dec(p: scala.Int, s: scala.Int)
      extends FType(s"DECIMAL($p, $s)", DecimalType(p, s)) {
    def family: Family = Family.Num
    def max: JBigDecimal = new JBigDecimal(java.math.BigInteger.TEN.pow(p).subtract(
      java.math.BigInteger.ONE), s)
  }
  case object DateT extends FType("DATE", DateType) { def family: Family = Family.Date }
  case object Ts extends FType("TIMESTAMP", TimestampType) { def family: Family = Family.Ts }
  case object Str extends FType("STRING", StringType) { def family: Family = Family.Str }

  val integral: Seq[FType] = Seq(Byte, Short, Int, Long)
  val numeric: Seq[FType] = integral ++ Seq(Float, Double, Dec(7, 2), Dec(18, 6))
  val all: Seq[FType] = Seq(Bool, Byte, Short, Int, Long, Float, Double, Dec(7, 2), Dec(12, 3),
    Dec(18, 6), Dec(30, 8), DateT, Ts, Str)
}

final case class ColSpec(name: String, t: FType, key: Boolean)

/** How a table draws its key columns. */
sealed trait KeyMode
object KeyMode {
  /** Keys from the whole domain and past it (no match), independent per column now and then. */
  case object Fact extends KeyMode
  /** Every key column unique (one row per domain index), and one row of NULL keys. */
  case object Unique extends KeyMode
  /** Keys drawn with replacement from half the domain: most keys repeat. */
  case object Repeated extends KeyMode
  /** A handful of rows over three keys (the special ones) and NULLs. */
  case object Tiny extends KeyMode
}

final case class TableSpec(name: String, rows: Int, partitions: Int, mode: KeyMode)

/**
 * Seeded random tables. Every table has the same columns: key columns (k_*) whose values come
 * from a small shared domain, so that joins match and keys repeat, and value columns of every type
 * with weighted special values (NULL, MIN/MAX, 0, -0.0, NaN, Infinity, a decimal's largest value,
 * empty and multi-byte strings).
 */
object DataGen {
  import FType._

  val keyColumns: Seq[ColSpec] = Seq(
    ColSpec("k_y", Byte, key = true), ColSpec("k_h", Short, key = true),
    ColSpec("k_i", Int, key = true), ColSpec("k_l", Long, key = true),
    ColSpec("k_dt", DateT, key = true), ColSpec("k_dc", Dec(7, 2), key = true),
    ColSpec("k_dl", Dec(18, 6), key = true), ColSpec("k_s", Str, key = true),
    // Not supported as GPU join keys: these check that such joins stay correct on the CPU.
    ColSpec("k_ts", Ts, key = true), ColSpec("k_d", Double, key = true))

  val valueColumns: Seq[ColSpec] = Seq(
    ColSpec("bo", Bool, key = false), ColSpec("y", Byte, key = false),
    ColSpec("h", Short, key = false), ColSpec("i", Int, key = false),
    ColSpec("l", Long, key = false), ColSpec("f", Float, key = false),
    ColSpec("d", Double, key = false), ColSpec("dc", Dec(7, 2), key = false),
    ColSpec("dm", Dec(12, 3), key = false), ColSpec("dl", Dec(18, 6), key = false),
    ColSpec("dw", Dec(30, 8), key = false), ColSpec("dt", DateT, key = false),
    ColSpec("ts", Ts, key = false), ColSpec("s", Str, key = false))

  val idColumn: ColSpec = ColSpec("id", Long, key = false)
  val columns: Seq[ColSpec] = idColumn +: (keyColumns ++ valueColumns)

  val schema: StructType = StructType(columns.map(c => StructField(c.name, c.t.spark)))

  /** The size of the key domain the dimensions share with the fact table. */
  val Domain = 60

  val tables: Seq[TableSpec] = Seq(
    TableSpec("fact", 3000, 4, KeyMode.Fact),
    TableSpec("dim_u", 51, 2, KeyMode.Unique),
    TableSpec("dim_r", 200, 2, KeyMode.Repeated),
    TableSpec("dim_t", 8, 1, KeyMode.Tiny),
    TableSpec("dim_e", 0, 1, KeyMode.Fact))

  def spec(name: String): TableSpec = tables.find(_.name == name).get

  private def date(s: String): Date = Date.valueOf(LocalDate.parse(s))
  private def ts(s: String): Timestamp = Timestamp.from(Instant.parse(s))
  private val epoch = LocalDate.of(1970, 1, 1)

  /**
   * Key `i` of the domain, as a value of `t`: injective for i < 200, the first few the type's
   * special values (MIN, MAX, 0; empty and multi-byte strings; NaN, -0.0, 0.0).
   */
  def keyValue(t: FType, i: Int): Any = {
    val v: Long = if (i % 2 == 0) i else -i // 3, 4, 5 ... as -3, 4, -5 ...
    t match {
      case Byte => i match { case 0 => scala.Byte.MinValue case 1 => scala.Byte.MaxValue
        case 2 => 0.toByte case _ => v.toByte }
      case Short => i match { case 0 => scala.Short.MinValue case 1 => scala.Short.MaxValue
        case 2 => 0.toShort case _ => (v * 150).toShort }
      case Int => i match { case 0 => scala.Int.MinValue case 1 => scala.Int.MaxValue
        case 2 => 0 case _ => (v * 1000003).toInt }
      case Long => i match { case 0 => scala.Long.MinValue case 1 => scala.Long.MaxValue
        case 2 => 0L case _ => v * 1000000007L * 1000 }
      case d: Dec => i match { case 0 => d.max.negate() case 1 => d.max
        case 2 => JBigDecimal.ZERO.setScale(d.s)
        case _ => JBigDecimal.valueOf(v * 125 + 1, 2).setScale(d.s) }
      case DateT => i match { case 0 => date("0001-01-01") case 1 => date("9999-12-31")
        case 2 => date("1970-01-01") case _ => Date.valueOf(LocalDate.of(2000, 1, 1).plusDays(v * 37)) }
      case Ts => i match { case 0 => ts("0001-01-01T00:00:00Z")
        case 1 => ts("9999-12-31T23:59:59.999999Z") case 2 => ts("1970-01-01T00:00:00Z")
        case _ => Timestamp.from(Instant.ofEpochSecond(946684800L + v * 3600007L, (i % 7) * 1000L)) }
      case Str => i match { case 0 => "" case 1 => "ü" case 2 => "日本語" case 3 => "😀"
        case 4 => "k " case _ => "k" + i }
      case Double => i match { case 0 => scala.Double.NaN case 1 => -0.0 case 2 => 0.0
        case 3 => scala.Double.PositiveInfinity case _ => v * 0.5 }
      case other => throw new IllegalArgumentException(s"no key domain for $other")
    }
  }

  private val stringSpecials = Seq("", " ", "ü", "grüße", "日本語", "😀", "NULL", "%", "a_b",
    "k1", "x" * 40, "A", "a")
  private val alphabet = "abcAB xü日😀".codePoints().toArray

  private def randomString(rng: Rng): String = {
    val sb = new java.lang.StringBuilder
    for (_ <- 0 until rng.int(8)) sb.appendCodePoint(alphabet(rng.int(alphabet.length)))
    sb.toString
  }

  private def randomDecimal(d: Dec, rng: Rng, digits: Int): JBigDecimal = {
    val n = math.min(digits, d.p)
    val bound = java.math.BigInteger.TEN.pow(n)
    val unscaled = new java.math.BigInteger(64, new java.util.Random(rng.long())).mod(bound)
    val x = new JBigDecimal(unscaled, d.s)
    if (rng.chance(0.5)) x.negate() else x
  }

  /** A value of `t`: NULL, a special value, one of a few small values (repeats), or random. */
  def value(t: FType, rng: Rng): Any = {
    if (rng.chance(0.08)) return null
    val kind = rng.double()
    val special = kind < 0.15
    val small = kind < 0.55
    t match {
      case Bool => rng.chance(0.5)
      case Byte => if (special) rng.pick(Seq(scala.Byte.MinValue, scala.Byte.MaxValue, 0.toByte,
          -1.toByte)) else if (small) (rng.int(11) - 5).toByte else rng.int(256).toByte
      case Short => if (special) rng.pick(Seq(scala.Short.MinValue, scala.Short.MaxValue, 0.toShort))
        else if (small) (rng.int(11) - 5).toShort else rng.int(65536).toShort
      case Int => if (special) rng.pick(Seq(scala.Int.MinValue, scala.Int.MaxValue, 0, -1, 1))
        else if (small) rng.int(11) - 5 else rng.int(2000001) - 1000000
      case Long => if (special) rng.pick(Seq(scala.Long.MinValue, scala.Long.MaxValue, 0L, -1L))
        else if (small) (rng.int(11) - 5).toLong else rng.long() >> rng.int(40)
      case Float => if (special) rng.pick(Seq(scala.Float.NaN, -0.0f, 0.0f,
          scala.Float.PositiveInfinity, scala.Float.NegativeInfinity, scala.Float.MaxValue,
          -scala.Float.MaxValue, scala.Float.MinPositiveValue))
        else if (small) (rng.int(11) - 5) / 2.0f else (rng.double() * 2e6 - 1e6).toFloat
      case Double => if (special) rng.pick(Seq(scala.Double.NaN, -0.0, 0.0,
          scala.Double.PositiveInfinity, scala.Double.NegativeInfinity, scala.Double.MaxValue,
          -scala.Double.MaxValue, scala.Double.MinPositiveValue))
        else if (small) (rng.int(11) - 5) / 4.0 else rng.double() * 2e9 - 1e9
      case d: Dec => if (special) rng.pick(Seq(d.max, d.max.negate(), JBigDecimal.ZERO.setScale(d.s),
          JBigDecimal.ONE.movePointLeft(d.s), JBigDecimal.ONE.movePointLeft(d.s).negate()))
        else if (small) JBigDecimal.valueOf(rng.int(11) - 5, 1).setScale(d.s)
        else randomDecimal(d, rng, if (rng.chance(0.5)) d.p else 6)
      case DateT => if (special) date(rng.pick(Seq("0001-01-01", "9999-12-31", "1970-01-01",
          "1969-12-31", "2000-02-29", "1582-10-15", "1900-03-01")))
        else if (small) Date.valueOf(LocalDate.of(2020, 1, 1).plusDays(rng.int(5)))
        else Date.valueOf(epoch.plusDays(rng.int(40000) - 10000))
      case Ts => if (special) ts(rng.pick(Seq("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z",
          "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999999Z", "2000-02-29T12:00:00Z")))
        else if (small) Timestamp.from(Instant.ofEpochSecond(1600000000L + rng.int(4) * 3600))
        else Timestamp.from(Instant.ofEpochSecond(rng.long() % 4000000000L, rng.int(1000000) * 1000L))
      case Str => if (special) rng.pick(stringSpecials)
        else if (small) "s" + rng.int(6) else randomString(rng)
    }
  }

  /** The rows of `spec`, drawn from `rng`. */
  def rows(spec: TableSpec, rng: Rng): Seq[Row] = {
    val uniqueOrder = rng.shuffle(0 until Domain)
    (0 until spec.rows).map { r =>
      val base: Option[Int] = spec.mode match {
        case KeyMode.Fact => Some(rng.int(Domain + 10))
        case KeyMode.Unique => if (r == spec.rows - 1) None else Some(uniqueOrder(r))
        case KeyMode.Repeated => Some(rng.int(Domain / 2))
        case KeyMode.Tiny => if (rng.chance(0.2)) None else Some(rng.int(3))
      }
      val keys = keyColumns.map { c =>
        val idx: Option[Int] = spec.mode match {
          case KeyMode.Fact => if (rng.chance(0.07)) None
            else if (rng.chance(0.6)) base else Some(rng.int(Domain + 10))
          case KeyMode.Unique | KeyMode.Tiny => base
          case KeyMode.Repeated => if (rng.chance(0.05)) None
            else if (rng.chance(0.8)) base else Some(rng.int(Domain))
        }
        idx.map(keyValue(c.t, _)).orNull
      }
      val values = valueColumns.map(c => value(c.t, rng))
      Row.fromSeq((r.toLong +: keys) ++ values)
    }
  }

  /** Registers every table of `seed` as a temporary view. */
  def register(spark: SparkSession, seed: Long): Unit = register(spark, seed, None)

  /**
   * Registers the seed's tables as views: in memory, or, with `parquetDir`, written to Parquet
   * there and read back, so that Spark's Parquet reader hands the columns over (dictionary-encoded
   * where Parquet kept a dictionary). Every other table is written with a 256-byte dictionary
   * page limit, so its columns switch from dictionary to plain pages part way through a chunk, and
   * every table in row groups of 16 KiB. Dates and timestamps are written without rebasing
   * (the caller's session reads them back the same way: see QueryFuzzSuite).
   */
  def register(spark: SparkSession, seed: Long, parquetDir: Option[java.nio.file.Path]): Unit = {
    for ((spec, n) <- tables.zipWithIndex) {
      val data = rows(spec, new Rng(seed * 7919 + n))
      val df = spark.createDataFrame(spark.sparkContext.parallelize(data, spec.partitions), schema)
      parquetDir match {
        case None => df.createOrReplaceTempView(spec.name)
        case Some(dir) =>
          val path = dir.resolve(s"${spec.name}-$seed").toString
          df.write.mode("overwrite").option("parquet.block.size", "16384")
            .option("parquet.dictionary.page.size", if (n % 2 == 0) "256" else "1048576")
            .parquet(path)
          spark.read.parquet(path).createOrReplaceTempView(spec.name)
      }
    }
  }
}
