package dev.tessera.spark.exec;

import java.util.List;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.LeafExecNode;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * In the Spark plan a {@link CpuFallbackExec} keeps, an exchange or query stage it shares with the
 * GPU plan: a leaf that executes that very node, so that the two plans read one shuffle or
 * broadcast, and preparing the Spark plan (transitions, code generation) never copies it.
 *
 * <p>Spark's rules after the rewrite (transitions, code generation) copy an exchange whose
 * subtree they change, so the node is found again, when the plan executes, by its
 * {@link #KEY} tag, which copies keep.
 */
public final class SharedInputExec extends TesseraExec implements LeafExecNode {
  private static final long serialVersionUID = 1L;
  /** On a shared exchange or query stage (and the copies Spark makes of it): its identity. */
  public static final TreeNodeTag<Object> KEY = new TreeNodeTag<>("tessera.sharedInput");
  private final SparkPlan input;

  /** Reads {@code input}, tagging it with a {@link #KEY} if it has none. */
  public SharedInputExec(SparkPlan input) {
    this.input = input;
    if (input.getTagValue(KEY).isEmpty()) {
      input.setTagValue(KEY, new Object());
    }
  }

  public SparkPlan input() {
    return input;
  }

  /** The identity of the node this reads. */
  public Object key() {
    return input.getTagValue(KEY).get();
  }

  @Override
  public Seq<Attribute> output() {
    return input.output();
  }

  @Override
  public boolean supportsColumnar() {
    return input.supportsColumnar();
  }

  @Override
  public Partitioning outputPartitioning() {
    return input.outputPartitioning();
  }

  @Override
  public Seq<SortOrder> outputOrdering() {
    return input.outputOrdering();
  }

  @Override
  protected String[] metricNames() {
    return new String[0];
  }

  @Override
  protected List<Object> members() {
    return List.of(input);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    return input.execute();
  }

  @Override
  public RDD<ColumnarBatch> doExecuteColumnar() {
    return input.executeColumnar();
  }

  @Override
  public <T> Broadcast<T> doExecuteBroadcast() {
    return input.<T>executeBroadcast();
  }

  @Override
  public Seq<SparkPlan> children() {
    return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
    return this;
  }

  @Override
  public String simpleString(int maxFields) {
    return "SharedInputExec " + input.nodeName();
  }
}
