package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.spark.expr.FilterProjectStep;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.package$;
import org.apache.spark.sql.catalyst.expressions.Predicate;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Raises the error Spark itself would raise for a batch in which the GPU found an ANSI error: the
 * batch's rows go through the original filters and projections with Spark's own evaluation until
 * Spark throws. Errors are rare, so this costs nothing in the common case and gives the user
 * Spark's exact error class and message.
 */
final class SparkReplay {
  private SparkReplay() {}

  /**
   * Spark's error for a device batch (still owned by the caller) in which a GPU program over
   * {@code input} reported {@code gpuError}: the batch is copied to the host and replayed.
   */
  static RuntimeException raiseForDeviceBatch(ColumnarBatch deviceBatch, List<Attribute> input,
      List<FilterProjectStep> steps, RowErrorException gpuError, Backend backend,
      GpuStream stream) {
    try (ColumnBatch<HostColumn> batch = ColumnTransfer.toHost(DeviceBatches.view(deviceBatch),
        backend.stagingAllocator(), stream)) {
      ColumnVector[] vectors = new ColumnVector[batch.columns().size()];
      for (int i = 0; i < vectors.length; i++) {
        vectors[i] = HostColumnVector.view(input.get(i).dataType(), batch.column(i));
      }
      return raise(new ColumnarBatch(vectors, batch.rowCount()), input, steps, gpuError);
    }
  }

  /** Throws Spark's error for {@code batch} (rows over {@code input}); never returns normally. */
  static RuntimeException raise(ColumnarBatch batch, List<Attribute> input,
      List<FilterProjectStep> steps, RowErrorException gpuError) {
    List<Attribute> schema = input;
    List<Object> evaluators = new ArrayList<>();
    for (FilterProjectStep step : steps) {
      if (step.isFilter()) {
        BasePredicate p = Predicate.create(step.condition(), CollectionConverters.asScala(schema).toSeq());
        p.initialize(0);
        evaluators.add(p);
      } else {
        List<Expression> exprs = step.projectList().stream().map(e -> (Expression) e).toList();
        evaluators.add(UnsafeProjection.create(CollectionConverters.asScala(exprs).toSeq(),
            CollectionConverters.asScala(schema).toSeq()));
        List<Attribute> next = new ArrayList<>();
        for (NamedExpression e : step.projectList()) {
          next.add(e.toAttribute());
        }
        schema = next;
      }
    }
    Iterator<InternalRow> rows = batch.rowIterator();
    while (rows.hasNext()) {
      InternalRow row = rows.next();
      for (Object evaluator : evaluators) {
        if (evaluator instanceof BasePredicate p) {
          if (!p.eval(row)) {
            break;
          }
        } else {
          row = ((UnsafeProjection) evaluator).apply(row);
        }
      }
    }
    // Spark found nothing wrong: the GPU and Spark disagree, which is a Tessera bug.
    return new IllegalStateException("Tessera bug: the GPU reported " + gpuError.getMessage()
        + " but Spark evaluates the batch without error", gpuError);
  }
}
