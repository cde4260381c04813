package dev.tessera.spark.rewrite;

import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraCacheScanExec;
import dev.tessera.spark.exec.TesseraPipelineExec;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.RowToColumnarExec;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The one transition pass (spark-rapids' {@code GpuTransitionOverrides}): after Spark has put its
 * row/columnar transitions around the GPU nodes (they are columnar), this turns those at the GPU's
 * edges into Tessera's:
 * <ul>
 *   <li>Spark's ColumnarToRowExec over a GPU node becomes a {@link DeviceToHostExec};
 *   <li>the input of a GPU node that reads an upload gets a {@link HostToDeviceExec} of the
 *       columns its program reads, over Spark's columnar batches (a scan's, or Spark's own
 *       RowToColumnarExec over a row-based child); over another GPU node whose batches it cannot
 *       read as they are, the batches go through the host;
 *   <li>a GPU node's broadcast build sides are read as rows, so the RowToColumnarExec Spark put
 *       over them goes.
 * </ul>
 * A GPU node over a GPU node is left as is: the batches stay on the device.
 */
final class Transitions {
  private Transitions() {}

  /**
   * @param settings the session's settings, for an upload's (read only if there is an upload)
   */
  static SparkPlan insert(SparkPlan node, Supplier<TesseraConf> settings) {
    List<SparkPlan> children = CollectionConverters.asJava(node.children());
    List<SparkPlan> inserted = new ArrayList<>(children.size());
    boolean changed = false;
    for (int i = 0; i < children.size(); i++) {
      SparkPlan child = insert(children.get(i), settings);
      if (node instanceof TesseraPipelineExec gpu) {
        child = i == 0 ? deviceInput(gpu, child, settings) : buildSide(child);
      }
      changed |= child != children.get(i);
      inserted.add(child);
    }
    SparkPlan current =
        changed ? node.withNewChildren(CollectionConverters.asScala(inserted).toSeq()) : node;
    if (current instanceof ColumnarToRowExec c && c.child() instanceof TesseraPipelineExec) {
      return new DeviceToHostExec(c.child());
    }
    return current;
  }

  private static SparkPlan deviceInput(TesseraPipelineExec gpu, SparkPlan input,
      Supplier<TesseraConf> settings) {
    if (gpu.readsDeviceBatches() || input instanceof HostToDeviceExec
        || input instanceof TesseraCacheScanExec) {
      return input;
    }
    if (TesseraCacheScanExec.tesseraCacheScan(input) != null) {
      // A table cached in Tessera's format: read its device copy, no upload.
      return new TesseraCacheScanExec(input, gpu.uploadOrdinals());
    }
    SparkPlan host = input instanceof TesseraPipelineExec
        ? new RowToColumnarExec(new DeviceToHostExec(input)) : input;
    TesseraConf conf = settings.get();
    return new HostToDeviceExec(host, gpu.uploadOrdinals(), conf.batchSizeBytes(),
        conf.get(TesseraConf.UPLOAD_DICTIONARY_IDS));
  }

  private static SparkPlan buildSide(SparkPlan build) {
    return build instanceof RowToColumnarExec r ? r.child() : build;
  }
}
