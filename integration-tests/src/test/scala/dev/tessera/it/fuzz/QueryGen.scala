package dev.tessera.it.fuzz

/** A column of a query's scope: `alias.name`. */
final case class Scoped(alias: String, col: ColSpec) {
  def ref: String = s"$alias.${col.name}"
  def t: FType = col.t
  def family: Family = col.t.family
}

/** A FROM clause: its text, the columns it makes visible, and the aliases to broadcast. */
final case class From(sql: String, scope: Seq[Scoped], broadcast: Seq[String])

/**
 * Random SQL over [[DataGen]]'s tables: filters and projections, broadcast joins of every kind on
 * every key type (one to three key columns; unique, repeated, tiny and empty build sides; chains of
 * joins), EXISTS / IN subqueries (semi and anti joins), UNION ALL, and aggregates over any of them,
 * with count(DISTINCT). One generator per query, seeded by the query's own seed, so that any query
 * can be generated again alone.
 */
final class QueryGen(rng: Rng) {
  import DataGen._

  private val numLits = Seq("0", "1", "-1", "3", "7", "100", "2147483647", "-2147483648",
    "9223372036854775807L", "CAST(-128 AS TINYINT)", "32767S", "2.5", "0.01", "-0.5",
    "CAST(99999.99 AS DECIMAL(7, 2))", "1e10", "-0.0D", "CAST('NaN' AS DOUBLE)",
    "CAST('Infinity' AS DOUBLE)", "CAST('-Infinity' AS FLOAT)", "1.0E308D", "0.0D")
  private val strLits = Seq("''", "' '", "'ü'", "'grüße'", "'日本語'", "'😀'", "'k1'", "'k '",
    "'s1'", "'a'", "'k7'", "'NULL'")
  private val dateLits = Seq("DATE'2000-01-01'", "DATE'1970-01-01'", "DATE'9999-12-31'",
    "DATE'0001-01-01'", "DATE'2020-01-03'", "DATE'2000-02-29'")
  private val tsLits = Seq("TIMESTAMP'1970-01-01 00:00:00'", "TIMESTAMP'2020-09-13 12:26:40'",
    "TIMESTAMP'9999-12-31 23:59:59.999999'", "TIMESTAMP'2000-02-29 12:00:00'")

  private def literal(f: Family): String = f match {
    case Family.Num => rng.pick(numLits)
    case Family.Str => rng.pick(strLits)
    case Family.Date => rng.pick(dateLits)
    case Family.Ts => rng.pick(tsLits)
    case Family.Bool => rng.pick(Seq("true", "false"))
  }

  private def column(f: Family, scope: Seq[Scoped]): Option[String] = {
    val cols = scope.filter(_.family == f)
    if (cols.isEmpty) None else Some(rng.pick(cols).ref)
  }

  private def leaf(f: Family, scope: Seq[Scoped]): String =
    if (rng.chance(0.8)) column(f, scope).getOrElse(literal(f)) else literal(f)

  private def casts: Seq[String] = Seq("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
    "DECIMAL(7, 2)", "DECIMAL(18, 6)", "DECIMAL(10, 0)", "DECIMAL(30, 8)")

  /** An expression of family `f` over `scope`, nested at most `depth` deep. */
  def expr(f: Family, scope: Seq[Scoped], depth: Int): String = {
    if (depth <= 0) return leaf(f, scope)
    def sub(g: Family) = expr(g, scope, depth - 1)
    def conditional(): String = rng.weighted(
      2.0 -> (() => s"CASE WHEN ${sub(Family.Bool)} THEN ${sub(f)} ELSE ${sub(f)} END"),
      1.0 -> (() => s"CASE WHEN ${sub(Family.Bool)} THEN ${sub(f)} WHEN ${sub(Family.Bool)}" +
        s" THEN ${sub(f)} END"),
      1.0 -> (() => s"IF(${sub(Family.Bool)}, ${sub(f)}, ${sub(f)})"),
      1.5 -> (() => s"COALESCE(${sub(f)}, ${sub(f)})"))
    f match {
      case Family.Num => rng.weighted(
        4.0 -> (() => leaf(f, scope)),
        3.0 -> (() => s"(${sub(f)} ${rng.pick(Seq("+", "-", "*", "/", "%"))} ${sub(f)})"),
        0.7 -> (() => s"abs(${sub(f)})"),
        0.7 -> (() => s"(- ${sub(f)})"),
        1.5 -> (() => s"CAST(${sub(f)} AS ${rng.pick(casts)})"),
        0.5 -> (() => s"pmod(${sub(f)}, ${rng.pick(Seq("3", "-7", "0", "2.5"))})"),
        0.5 -> (() => s"${rng.pick(Seq("year", "month", "dayofmonth"))}(${sub(Family.Date)})"),
        0.5 -> (() => s"length(${sub(Family.Str)})"),
        0.3 -> (() => s"CAST(${sub(Family.Bool)} AS INT)"),
        // Likely unsupported on the GPU: here for the fallback's correctness.
        0.3 -> (() => s"greatest(${sub(f)}, ${sub(f)})"),
        0.2 -> (() => s"round(${sub(f)}, 1)"),
        1.5 -> (() => conditional()))
      case Family.Bool => rng.weighted(
        5.0 -> (() => comparison(scope, depth)),
        1.0 -> (() => s"${sub(rng.pick(families))} IS ${if (rng.chance(0.5)) "" else "NOT "}NULL"),
        1.5 -> (() => inList(scope, depth)),
        1.0 -> (() => s"NOT (${sub(f)})"),
        2.0 -> (() => s"(${sub(f)} AND ${sub(f)})"),
        2.0 -> (() => s"(${sub(f)} OR ${sub(f)})"),
        1.0 -> (() => leaf(f, scope)),
        1.0 -> (() => stringPredicate(scope, depth)),
        0.5 -> (() => { val g = rng.pick(Seq(Family.Num, Family.Date, Family.Str))
          s"(${sub(g)} BETWEEN ${leaf(g, Nil)} AND ${leaf(g, Nil)})" }),
        0.3 -> (() => s"isnan(${sub(Family.Num)})"),
        0.5 -> (() => conditional()))
      case Family.Str => rng.weighted(
        5.0 -> (() => leaf(f, scope)),
        0.4 -> (() => s"substr(${sub(f)}, 1, 2)"),
        0.4 -> (() => s"concat(${sub(f)}, ${sub(f)})"),
        0.3 -> (() => s"upper(${sub(f)})"),
        0.3 -> (() => s"CAST(${sub(Family.Num)} AS STRING)"),
        1.5 -> (() => conditional()))
      case Family.Date => rng.weighted(
        5.0 -> (() => leaf(f, scope)),
        0.5 -> (() => s"date_add(${sub(f)}, ${rng.pick(Seq("1", "-30", "1000"))})"),
        0.3 -> (() => s"CAST(${sub(Family.Ts)} AS DATE)"),
        1.0 -> (() => conditional()))
      case Family.Ts => rng.weighted(
        5.0 -> (() => leaf(f, scope)),
        0.3 -> (() => s"CAST(${sub(Family.Date)} AS TIMESTAMP)"),
        1.0 -> (() => conditional()))
    }
  }

  private val families: Seq[Family] =
    Seq(Family.Num, Family.Num, Family.Num, Family.Str, Family.Date, Family.Ts, Family.Bool)

  private def comparison(scope: Seq[Scoped], depth: Int): String = {
    val f = rng.pick(families)
    val op = rng.pick(Seq("=", "<>", "<", "<=", ">", ">=", "<=>"))
    val right = if (rng.chance(0.5)) literal(f) else expr(f, scope, depth - 1)
    s"(${expr(f, scope, depth - 1)} $op $right)"
  }

  private def inList(scope: Seq[Scoped], depth: Int): String = {
    val f = rng.pick(Seq(Family.Num, Family.Num, Family.Str, Family.Date))
    val items = (0 until rng.between(1, 5)).map(_ => literal(f)) ++
      (if (rng.chance(0.2)) Seq(s"NULL") else Nil)
    s"(${expr(f, scope, depth - 1)} ${if (rng.chance(0.2)) "NOT " else ""}IN (${items.mkString(", ")}))"
  }

  private def stringPredicate(scope: Seq[Scoped], depth: Int): String = {
    val s = expr(Family.Str, scope, depth - 1)
    rng.weighted(
      2.0 -> (() => s"($s LIKE '${rng.pick(Seq("k%", "%ü", "%a%", "s_", "", "%", "k 5%"))}')"),
      1.0 -> (() => s"startswith($s, ${rng.pick(strLits)})"),
      1.0 -> (() => s"endswith($s, ${rng.pick(strLits)})"),
      1.0 -> (() => s"contains($s, ${rng.pick(strLits)})"))
  }

  def predicate(scope: Seq[Scoped]): String = expr(Family.Bool, scope, rng.between(1, 3))

  // ---- FROM clauses ----

  private def scopeOf(alias: String, cols: Seq[ColSpec] = columns): Seq[Scoped] =
    cols.map(Scoped(alias, _))

  private val buildTables = Seq("dim_u", "dim_r", "dim_t", "dim_e")

  /** A build side: a dimension (unique, repeated, tiny or empty keys) or a filtered table. */
  private def buildRelation(alias: String): String = rng.weighted(
    3.0 -> (() => s"dim_u $alias"),
    3.0 -> (() => s"dim_r $alias"),
    1.5 -> (() => s"dim_t $alias"),
    0.7 -> (() => s"dim_e $alias"),
    1.0 -> (() => s"(SELECT * FROM fact x WHERE ${predicate(scopeOf("x"))}) $alias"),
    1.0 -> (() => s"(SELECT * FROM ${rng.pick(buildTables)} x WHERE ${predicate(scopeOf("x"))})" +
      s" $alias"))

  /** A key column `left` has: mostly GPU-supported key types, now and then TIMESTAMP or DOUBLE. */
  private def keyColumn(left: Seq[Scoped]): ColSpec = {
    val present = keyColumns.filter(k => left.exists(_.col.name == k.name))
    val (odd, usual) = present.partition(c => c.name == "k_ts" || c.name == "k_d")
    if (odd.nonEmpty && (usual.isEmpty || rng.chance(0.07))) rng.pick(odd) else rng.pick(usual)
  }

  /** `l.k = r.k` for one to three key columns, now and then of different types or computed. */
  private def joinKeys(left: Seq[Scoped], right: String): String = {
    val n = rng.weighted(0.7 -> (() => 1), 0.25 -> (() => 2), 0.05 -> (() => 3))
    val keys = (0 until n).map(_ => keyColumn(left)).distinct
    keys.map { k =>
      val l = rng.pick(left.filter(_.col.name == k.name)).ref
      rng.weighted(
        0.85 -> (() => s"$l = $right.${k.name}"),
        0.05 -> (() => { val other = rng.pick(keyColumns.filter(c =>
          c.t.family == k.t.family && c.name != "k_d"))
          s"$l = $right.${other.name}" }),
        0.04 -> (() => if (k.t.family == Family.Num) s"$l + 1 = $right.${k.name}"
          else s"$l = $right.${k.name}"),
        0.06 -> (() => left.filter(c => !c.col.key && c.family != Family.Bool) match {
          case Seq() => s"$l = $right.${k.name}"
          case vs => val v = rng.pick(vs); s"${v.ref} = $right.${v.col.name}"
        }))
    }.mkString(" AND ")
  }

  /** The relation queries start from: a table, or a UNION ALL of two or three. */
  private def base(alias: String): (String, Seq[Scoped]) = rng.weighted(
    6.0 -> (() => ("fact " + alias, scopeOf(alias))),
    1.0 -> (() => (rng.pick(Seq("dim_r", "dim_u", "dim_t", "dim_e")) + " " + alias, scopeOf(alias))),
    1.5 -> (() => {
      val cols = (rng.pick(keyColumns.take(8)) +: rng.shuffle(columns).take(rng.between(2, 6)))
        .distinct
      val branches = (0 until rng.between(2, 3)).map { _ =>
        val t = rng.pick(Seq("fact", "fact", "dim_r", "dim_u", "dim_t", "dim_e"))
        val where = if (rng.chance(0.7)) s" WHERE ${predicate(scopeOf("x"))}" else ""
        s"SELECT ${cols.map("x." + _.name).mkString(", ")} FROM $t x$where"
      }
      val union = if (rng.chance(0.85)) " UNION ALL " else " UNION "
      (s"(${branches.mkString(union)}) $alias", scopeOf(alias, cols))
    }))

  def from(): From = {
    val (baseSql, baseScope) = base("fa")
    val joins = rng.weighted(0.3 -> (() => 0), 0.45 -> (() => 1), 0.17 -> (() => 2),
      0.08 -> (() => 3))
    var sql = baseSql
    var scope = baseScope
    val hinted = Seq.newBuilder[String]
    for (j <- 1 to joins) {
      val alias = s"d$j"
      val rel = buildRelation(alias)
      val kind = rng.weighted(3.5 -> (() => "JOIN"), 2.5 -> (() => "LEFT JOIN"),
        1.0 -> (() => "RIGHT JOIN"), 1.2 -> (() => "LEFT SEMI JOIN"),
        1.2 -> (() => "LEFT ANTI JOIN"), 0.3 -> (() => "FULL JOIN"))
      var on = joinKeys(scope, alias)
      if (rng.chance(0.2)) {
        // A condition besides the keys, over both sides.
        on += s" AND ${comparison(scope ++ scopeOf(alias), 2)}"
      }
      if (kind == "RIGHT JOIN" && j == 1) {
        // The build side on the left of a right outer join.
        sql = s"$rel RIGHT JOIN $sql ON $on"
      } else {
        sql = s"$sql ${if (kind == "RIGHT JOIN") "LEFT JOIN" else kind} $rel ON $on"
      }
      if (!kind.contains("SEMI") && !kind.contains("ANTI")) scope = scope ++ scopeOf(alias)
      if (rng.chance(0.9)) hinted += alias
    }
    From(sql, scope, hinted.result())
  }

  // ---- WHERE ----

  /** [NOT] EXISTS or [NOT] IN over a table, correlated now and then. */
  private def subqueryPredicate(scope: Seq[Scoped]): String = {
    val outer = rng.pick(scope.filter(_.col.key) match { case Seq() => scope case ks => ks })
    val table = rng.pick(Seq("dim_u", "dim_r", "dim_r", "dim_t", "dim_e", "fact"))
    val inner = scopeOf("sq")
    val conditions = Seq.newBuilder[String]
    if (rng.chance(0.3)) {
      val o = rng.pick(scope)
      val op = if (rng.chance(0.6)) "=" else rng.pick(Seq("<", ">=", "<>"))
      conditions += s"sq.${o.col.name} $op ${o.ref}"
    }
    if (rng.chance(0.5)) conditions += predicate(inner)
    def where(extra: Seq[String]) = (extra ++ conditions.result()) match {
      case Seq() => ""
      case cs => cs.mkString(" WHERE ", " AND ", "")
    }
    rng.weighted(
      1.0 -> (() => s"EXISTS (SELECT 1 FROM $table sq${where(Seq(s"sq.${outer.col.name} = ${outer.ref}"))})"),
      1.0 -> (() => s"NOT EXISTS (SELECT 1 FROM $table sq${where(Seq(s"sq.${outer.col.name} = ${outer.ref}"))})"),
      1.2 -> (() => s"${outer.ref} IN (SELECT sq.${outer.col.name} FROM $table sq${where(Nil)})"),
      0.4 -> (() => s"${outer.ref} NOT IN (SELECT sq.${outer.col.name} FROM $table sq${where(Nil)})"))
  }

  private def where(scope: Seq[Scoped]): String = {
    val parts = (0 until rng.weighted(0.25 -> (() => 0), 0.55 -> (() => 1), 0.2 -> (() => 2)))
      .map(_ => predicate(scope)) ++
      (if (rng.chance(0.25)) Seq(subqueryPredicate(scope)) else Nil)
    if (parts.isEmpty) "" else parts.mkString(" WHERE ", " AND ", "")
  }

  // ---- SELECT ----

  private def projection(scope: Seq[Scoped]): String = rng.weighted(
    0.1 -> (() => "*"),
    0.9 -> (() => (0 until rng.between(1, 5)).map(i =>
      s"${expr(rng.pick(families), scope, rng.between(0, 2))} AS c$i").mkString(", ")))

  private def aggregate(scope: Seq[Scoped], distinctOnly: Boolean): (String, String) = {
    val keys = (0 until rng.weighted(0.2 -> (() => 0), 0.35 -> (() => 1), 0.25 -> (() => 2),
      0.15 -> (() => 3), 0.05 -> (() => 5))).map { _ =>
      rng.weighted(
        3.0 -> (() => rng.pick(scope.filter(_.col.key) match { case Seq() => scope case k => k }).ref),
        1.5 -> (() => rng.pick(scope).ref),
        1.0 -> (() => expr(rng.pick(families), scope, 1) match {
          // An integer literal in GROUP BY is a column's ordinal.
          case lit if lit.matches("-?[0-9]+[LSY]?") => rng.pick(scope).ref
          case e => e
        }))
    }
    val keyCols = keys.filter(k => scope.exists(_.ref == k))
    def arg(f: Family) = if (rng.chance(0.7)) column(f, scope).getOrElse(literal(f))
      else expr(f, scope, 1)
    val aggs = if (distinctOnly) Nil else (0 until rng.between(1, 4)).map { _ =>
      rng.weighted(
        1.5 -> (() => "count(*)"),
        1.0 -> (() => s"count(${arg(rng.pick(families))})"),
        0.8 -> (() => s"count(DISTINCT ${if (keyCols.nonEmpty && rng.chance(0.4)) rng.pick(keyCols)
          else arg(rng.pick(families))})"),
        2.0 -> (() => s"sum(${arg(Family.Num)})"),
        1.2 -> (() => s"avg(${arg(Family.Num)})"),
        1.5 -> (() => s"min(${arg(rng.pick(families))})"),
        1.5 -> (() => s"max(${arg(rng.pick(families))})"))
    }
    val shownKeys = if (distinctOnly || rng.chance(0.8)) keys else keys.filter(_ => rng.chance(0.5))
    val select = (shownKeys ++ aggs).zipWithIndex.map { case (e, i) => s"$e AS c$i" }
    val selectList = if (select.isEmpty) "count(*) AS c0" else select.mkString(", ")
    val groupBy = if (keys.isEmpty) "" else keys.mkString(" GROUP BY ", ", ", "")
    val having = if (keys.nonEmpty && !distinctOnly && rng.chance(0.15)) {
      rng.pick(Seq("count(*) > 1", s"min(${arg(Family.Num)}) IS NOT NULL",
        s"sum(${arg(Family.Num)}) > 0"))
    } else ""
    (selectList, groupBy + (if (having.isEmpty) "" else s" HAVING $having"))
  }

  /** One query. */
  def query(): String = {
    val from = this.from()
    val whereSql = where(from.scope)
    val hint = if (from.broadcast.isEmpty) "" else
      from.broadcast.map(a => s"BROADCAST($a)").mkString("/*+ ", ", ", " */ ")
    val body = rng.weighted(
      0.45 -> (() => s"SELECT $hint${projection(from.scope)} FROM ${from.sql}$whereSql"),
      0.45 -> (() => { val (sel, group) = aggregate(from.scope, distinctOnly = false)
        s"SELECT $hint$sel FROM ${from.sql}$whereSql$group" }),
      0.1 -> (() => { val (sel, group) = aggregate(from.scope, distinctOnly = true)
        s"SELECT ${hint}DISTINCT $sel FROM ${from.sql}$whereSql" }))
    if (rng.chance(0.06) && !from.sql.contains(" JOIN ")) {
      // The same select over another table, UNION ALL: the tables share their columns.
      val other = rng.pick(Seq("fact", "dim_r", "dim_u", "dim_t", "dim_e"))
      val second = body.replaceFirst(" FROM (fact|dim_[urte]) fa", s" FROM $other fa")
      s"$body UNION ALL $second"
    } else body
  }
}
