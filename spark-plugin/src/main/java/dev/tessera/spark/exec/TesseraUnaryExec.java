package dev.tessera.spark.exec;

import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.UnaryExecNode;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * The Java side of a Scala case class with one child: what TreeNode needs (children, Product
 * members) for a Tessera exec node. Subclasses hold their other constructor arguments and list
 * them, after the child, in {@link #productElement}.
 */
public abstract class TesseraUnaryExec extends SparkPlan implements UnaryExecNode {
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

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return child;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object that) {
    return that != null && that.getClass() == getClass();
  }

  @Override
  public boolean equals(Object o) {
    return o != null && o.getClass() == getClass() && child.equals(((TesseraUnaryExec) o).child);
  }

  @Override
  public int hashCode() {
    return getClass().hashCode() * 31 + child.hashCode();
  }
}
