package dev.tessera.spark.exec;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.SparkPlan;

/**
 * A Tessera exec node whose output is device batches (columns in device memory, read by the GPU
 * node above it or copied back by {@link DeviceToHostExec}): it is columnar only, and asking it
 * for rows is a planning bug.
 */
public abstract class TesseraDeviceExec extends TesseraUnaryExec {
  protected TesseraDeviceExec(SparkPlan child) {
    super(child);
  }

  @Override
  public boolean supportsColumnar() {
    return true;
  }

  @Override
  public RDD<InternalRow> doExecute() {
    throw new IllegalStateException(nodeName() + " produces device batches only");
  }
}
