package dev.tessera.ssb.cli;

import dev.tessera.spark.cache.CacheSummary;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.columnar.InMemoryRelation;
import scala.jdk.javaapi.CollectionConverters;

/** Prints what the cached tables a statement reads hold: {@link CacheSummary} per table. */
final class CachedTables {
  private CachedTables() {}

  static void print(Dataset<?> df, PrintStream out) {
    Map<Object, InMemoryRelation> relations = new IdentityHashMap<>();
    collect(df.queryExecution().withCachedData(), relations);
    for (InMemoryRelation relation : relations.values()) {
      CacheSummary summary = CacheSummary.of(relation);
      out.println();
      String name = relation.cacheBuilder().tableName().isDefined()
          ? relation.cacheBuilder().tableName().get() : describe(relation);
      if (summary == null) {
        out.printf("Cached table %s: in Spark's format (not Tessera's GPU-FOR).%n", name);
      } else {
        out.printf("Cached table %s: %,d rows, columns as stored on the device (GPU-FOR,"
            + " GPU-DFOR, dictionary or plain) and uncompressed:%n", name, summary.rows());
        out.print(summary.render());
      }
    }
  }

  /** A cache with no table name (Dataset.cache()): "(a, b, c, ... 17 columns)". */
  private static String describe(InMemoryRelation relation) {
    List<String> names = new ArrayList<>();
    CollectionConverters.asJava(relation.output()).forEach(a -> names.add(a.name()));
    return names.size() <= 3 ? "(" + String.join(", ", names) + ")"
        : "(" + String.join(", ", names.subList(0, 3)) + ", ... " + names.size() + " columns)";
  }

  /** The cached relations under {@code plan}, one per cache (the same cache may appear twice). */
  private static void collect(LogicalPlan plan, Map<Object, InMemoryRelation> into) {
    if (plan instanceof InMemoryRelation relation) {
      into.putIfAbsent(relation.cacheBuilder(), relation);
      return;
    }
    List<LogicalPlan> children = new ArrayList<>(CollectionConverters.asJava(plan.children()));
    children.forEach(child -> collect(child, into));
  }
}
