package dev.tessera.spark.exec;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.UnaryExecNode;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * A Tessera exec node with one child. Subclasses list their other constructor arguments, in
 * constructor order after the child, in {@link #arguments()}.
 */
public abstract class TesseraUnaryExec extends TesseraExec implements UnaryExecNode {
  private static final long serialVersionUID = 1L;
  private final SparkPlan child;

  protected TesseraUnaryExec(SparkPlan child) {
    this.child = child;
  }

  @Override
  public SparkPlan child() {
    return child;
  }

  @Override
  public Seq<SparkPlan> children() {
    return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty().$colon$colon(child);
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
    return withNewChildInternal(newChildren.apply(0));
  }

  /** The constructor arguments after the child, in order (what makes two nodes equal). */
  protected List<Object> arguments() {
    return List.of();
  }

  @Override
  protected final List<Object> members() {
    List<Object> members = new ArrayList<>();
    members.add(child);
    members.addAll(arguments());
    return members;
  }
}
