package dev.tessera.spark.exec;

import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.DeviceColumn;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Device batches in and out of Spark's ColumnarBatch, as GPU nodes pass them to each other. */
final class DeviceBatches {
  private DeviceBatches() {}

  /** Wraps {@code batch} (taking ownership) as a Spark batch with {@code attributes}' types. */
  static ColumnarBatch wrap(ColumnBatch<DeviceColumn> batch, List<Attribute> attributes) {
    ColumnVector[] vectors = new ColumnVector[batch.columns().size()];
    for (int i = 0; i < vectors.length; i++) {
      vectors[i] = new DeviceColumnVector(attributes.get(i).dataType(), batch.column(i));
    }
    return new ColumnarBatch(vectors, batch.rowCount());
  }

  /** The device columns of a batch a GPU node produced; the Spark batch still owns them. */
  static ColumnBatch<DeviceColumn> view(ColumnarBatch batch) {
    List<DeviceColumn> columns = new ArrayList<>(batch.numCols());
    for (int i = 0; i < batch.numCols(); i++) {
      if (!(batch.column(i) instanceof DeviceColumnVector d)) {
        throw new IllegalStateException("Tessera bug: a GPU node got a batch that is not on the"
            + " device (" + batch.column(i).getClass().getName() + ")");
      }
      columns.add(d.column());
    }
    return new ColumnBatch<>(columns, batch.numRows());
  }

  /** The bytes of a batch's columns (values, validity, offsets): what a kernel reading it reads. */
  static long bytes(ColumnBatch<DeviceColumn> batch) {
    long total = 0;
    for (DeviceColumn c : batch.columns()) {
      total += c.dataBytes() + (c.validity() == null ? 0 : c.validity().size())
          + (c.offsets() == null ? 0 : c.offsets().size());
    }
    return total;
  }
}
