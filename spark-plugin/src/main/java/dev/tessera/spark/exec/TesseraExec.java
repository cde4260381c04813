package dev.tessera.spark.exec;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;

/**
 * The Java side of a Scala case class for a Tessera exec node: its SQL metrics, and its
 * constructor arguments as Product members (what TreeNode uses and what makes two nodes equal).
 */
public abstract class TesseraExec extends SparkPlan {
  private static final long serialVersionUID = 1L;
  private transient Map<String, SQLMetric> metrics;

  /** The names ({@link ExecMetrics} constants) of the SQL metrics this node reports. */
  protected abstract String[] metricNames();

  /** Every constructor argument, in order, children included. */
  protected abstract List<Object> members();

  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    return ExecMetrics.toScala(metricMap());
  }

  /** This node's metrics by name, created once on the driver and shipped with the tasks. */
  protected synchronized Map<String, SQLMetric> metricMap() {
    if (metrics == null) {
      metrics = createMetrics();
    }
    return metrics;
  }

  /** Creates the metrics: those {@link #metricNames()} names; a node may add its own. */
  protected Map<String, SQLMetric> createMetrics() {
    return ExecMetrics.create(sparkContext(), metricNames());
  }

  @Override
  public int productArity() {
    return members().size();
  }

  @Override
  public Object productElement(int n) {
    List<Object> members = members();
    if (n < 0 || n >= members.size()) {
      throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    return members.get(n);
  }

  @Override
  public boolean canEqual(Object that) {
    return that != null && that.getClass() == getClass();
  }

  @Override
  public boolean equals(Object o) {
    return o != null && o.getClass() == getClass()
        && java.util.Arrays.deepEquals(members().toArray(), ((TesseraExec) o).members().toArray());
  }

  @Override
  public int hashCode() {
    return getClass().hashCode() * 31 + children().hashCode();
  }
}
