package dev.tessera.spark.exec;

import java.io.Serializable;
import java.util.Iterator;
import java.util.function.Supplier;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A node's per-partition function over its input, which may read that partition a second time in
 * the same task (as Spark's CartesianRDD does): for the rare check that needs the task's rows
 * again in Spark's order ({@link OrderChecks}). The second read recomputes the input (a shuffle
 * read, a scan), so nothing is kept for it in the common case.
 */
final class RereadableInputRDD extends RDD<ColumnarBatch> {
  private static final long serialVersionUID = 1L;
  private static final ClassTag<ColumnarBatch> TAG = ClassTag$.MODULE$.apply(ColumnarBatch.class);

  /** What a task computes from its input batches, with a way to read them again. */
  interface TaskFunction extends Serializable {
    Iterator<ColumnarBatch> apply(Iterator<ColumnarBatch> input,
        Supplier<Iterator<ColumnarBatch>> again);
  }

  private final TaskFunction function;

  RereadableInputRDD(RDD<ColumnarBatch> input, TaskFunction function) {
    super(input, TAG);
    this.function = function;
  }

  @Override
  public Partition[] getPartitions() {
    return firstParent(TAG).partitions();
  }

  @Override
  public scala.collection.Iterator<ColumnarBatch> compute(Partition split, TaskContext context) {
    RDD<ColumnarBatch> input = firstParent(TAG);
    Supplier<Iterator<ColumnarBatch>> read =
        () -> CollectionConverters.asJava(input.iterator(split, context));
    return CollectionConverters.asScala(function.apply(read.get(), read));
  }
}
