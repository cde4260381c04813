package dev.tessera.spark.exec;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A GPU pipeline's input: some of its child's columns, in a chosen order, as device batches that
 * keep the child's rows, order and partitioning (an upload, or the scan of a cached table's device
 * copy).
 */
abstract class DeviceInputExec extends TesseraDeviceExec {
  private static final long serialVersionUID = 1L;
  private final int[] ordinals;

  /** @param ordinals the child's output columns to read, in this node's output order */
  DeviceInputExec(SparkPlan child, int[] ordinals) {
    super(child);
    this.ordinals = ordinals.clone();
  }

  /**
   * The child's output columns this node reads, in its output order: the node's own array (do
   * not modify it), so that copies of the node compare equal.
   */
  protected int[] ordinals() {
    return ordinals;
  }

  @Override
  public Seq<Attribute> output() {
    List<Attribute> in = CollectionConverters.asJava(child().output());
    List<Attribute> out = new ArrayList<>(ordinals.length);
    for (int o : ordinals) {
      out.add(in.get(o));
    }
    return CollectionConverters.asScala(out).toSeq();
  }

  @Override
  public Partitioning outputPartitioning() {
    return OutputPartitioning.through(child().outputPartitioning(), List.of(),
        CollectionConverters.asJava(output()));
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return child().outputOrdering(); // batches keep the rows' order
  }
}
