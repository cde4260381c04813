package dev.tessera.spark.exec;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.UnaryExecNode;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * The Java side of a Scala case class with one child: what TreeNode needs (children, Product
 * members, equality) for a Tessera exec node. Subclasses list their other constructor arguments,
 * in constructor order after the child, in {@link #arguments()}.
 */
public abstract class TesseraUnaryExec extends SparkPlan implements UnaryExecNode {
  private static final long serialVersionUID = 1L;
  private final SparkPlan child;
  private transient Map<String, SQLMetric> metrics;

  protected TesseraUnaryExec(SparkPlan child) {
    this.child = child;
  }

  /** The names ({@link ExecMetrics} constants) of the SQL metrics this node reports. */
  protected abstract String[] metricNames();

  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    return ExecMetrics.toScala(metricMap());
  }

  /** This node's metrics by name, created once on the driver and shipped with the tasks. */
  protected synchronized Map<String, SQLMetric> metricMap() {
    if (metrics == null) {
      metrics = ExecMetrics.create(sparkContext(), metricNames());
    }
    return metrics;
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
  public int productArity() {
    return 1 + arguments().size();
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return child;
    }
    List<Object> arguments = arguments();
    if (n < 1 || n > arguments.size()) {
      throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    return arguments.get(n - 1);
  }

  @Override
  public boolean canEqual(Object that) {
    return that != null && that.getClass() == getClass();
  }

  @Override
  public boolean equals(Object o) {
    return o != null && o.getClass() == getClass() && child.equals(((TesseraUnaryExec) o).child)
        && deepEquals(arguments(), ((TesseraUnaryExec) o).arguments());
  }

  @Override
  public int hashCode() {
    return getClass().hashCode() * 31 + child.hashCode();
  }

  private static boolean deepEquals(List<Object> a, List<Object> b) {
    return java.util.Arrays.deepEquals(a.toArray(), b.toArray());
  }
}
