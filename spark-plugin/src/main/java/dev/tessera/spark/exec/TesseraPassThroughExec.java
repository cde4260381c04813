package dev.tessera.spark.exec;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.Seq;

/**
 * A Tessera node whose rows are its child's, in the child's order and partitions (a transition,
 * or a choice between two plans of the same rows): its output, partitioning and ordering are the
 * child's.
 */
public abstract class TesseraPassThroughExec extends TesseraUnaryExec {
  private static final long serialVersionUID = 1L;

  protected TesseraPassThroughExec(SparkPlan child) {
    super(child);
  }

  @Override
  public Seq<Attribute> output() {
    return child().output();
  }

  @Override
  public Partitioning outputPartitioning() {
    return child().outputPartitioning();
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return child().outputOrdering();
  }
}
