package dev.tessera.spark.exec;

import dev.tessera.spark.expr.PipelineStep;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.catalyst.plans.physical.SinglePartition$;
import org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The output partitioning of a GPU node whose rows stay in their input partitions (an upload,
 * filters, projections, probes, an aggregation per partition), as Spark's own operators report
 * it: the input's hash partitioning carried through the steps' attributes and aliases, or unknown
 * where a step drops a partitioning column. Operators above read it when they run: a Union of
 * equally hash-partitioned children combines partition i of each child only if every child
 * reports that partitioning, and concatenates their partitions otherwise (which would leave a
 * key's rows in several partitions of an aggregate planned without a shuffle).
 */
final class OutputPartitioning {
  private OutputPartitioning() {}

  /** {@code input}'s partitioning through {@code steps}, given the node's {@code output}. */
  static Partitioning through(Partitioning input, List<PipelineStep> steps,
      List<Attribute> output) {
    if (input == SinglePartition$.MODULE$) {
      return input;
    }
    if (!(input instanceof HashPartitioning hash)) {
      boolean kept = !(input instanceof Expression e) || covered(e, output);
      return kept ? input : new UnknownPartitioning(input.numPartitions());
    }
    List<Expression> mapped = new ArrayList<>();
    for (Expression e : CollectionConverters.asJava(hash.expressions())) {
      Expression m = e;
      for (PipelineStep step : steps) {
        m = m == null ? null : through(m, step);
      }
      if (m == null || !covered(m, output)) {
        return new UnknownPartitioning(input.numPartitions());
      }
      mapped.add(m);
    }
    Seq<Expression> expressions = CollectionConverters.asScala(mapped).toList();
    return new HashPartitioning(expressions, hash.numPartitions());
  }

  /** {@code e} as the step outputs it, or null when the step does not output it. */
  private static Expression through(Expression e, PipelineStep step) {
    if (step.isFilter()) {
      return e;
    }
    if (step.isProbe()) {
      return covered(e, step.probe().output()) ? e : null;
    }
    for (NamedExpression n : step.projectList()) {
      Expression projected = n instanceof Alias a ? a.child() : (Expression) n;
      if (projected.semanticEquals(e)) {
        return n.toAttribute();
      }
    }
    return null;
  }

  /** Whether every attribute {@code e} references is among {@code attributes}. */
  private static boolean covered(Expression e, List<Attribute> attributes) {
    for (Attribute r : CollectionConverters.asJava(e.references().toSeq())) {
      if (attributes.stream().noneMatch(a -> a.exprId().equals(r.exprId()))) {
        return false;
      }
    }
    return true;
  }
}
