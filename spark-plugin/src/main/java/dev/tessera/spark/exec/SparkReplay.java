package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.GpuStream;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnTransfer;
import dev.tessera.gpu.column.DeviceColumn;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.gpu.expr.RowErrorException;
import dev.tessera.spark.expr.PipelineStep;
import dev.tessera.spark.expr.JoinKind;
import dev.tessera.spark.expr.JoinProbe;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Predicate;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.joins.EmptyHashedRelation$;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Raises the error Spark itself would raise for a batch in which the GPU found an ANSI error: the
 * batch's rows go through the original filters, projections and join probes with Spark's own
 * evaluation (probes look the keys up in Spark's broadcast relation) until Spark throws. Errors
 * are rare, so this costs nothing in the common case and gives the user Spark's exact error class
 * and message. The same evaluation also hands its rows on, for a check that needs Spark's order
 * ({@link OrderedSumReplay}).
 */
final class SparkReplay {
  private SparkReplay() {}

  /**
   * Spark's error for a device batch (still owned by the caller) in which a GPU program over
   * {@code input} reported {@code gpuError}: the batch is copied to the host and replayed.
   * {@code relations} are Spark's broadcast relations of the join tables the steps probe.
   */
  static RuntimeException raiseForDeviceBatch(ColumnBatch<DeviceColumn> deviceBatch,
      List<Attribute> input, List<PipelineStep> steps, List<HashedRelation> relations,
      RowErrorException gpuError, Backend backend, GpuStream stream) {
    forEachRow(deviceBatch, input, steps, relations, backend, stream, row -> { });
    // Spark found nothing wrong: the GPU and Spark disagree, which is a Tessera bug.
    return new IllegalStateException("Tessera bug: the GPU reported " + gpuError.getMessage()
        + " but Spark evaluates the batch without error", gpuError);
  }

  /**
   * Evaluates the steps over a device batch (still owned by the caller) with Spark's own
   * expressions, in the batch's order, and hands each row the last step outputs to {@code sink}
   * (a row it must copy to keep). Spark's errors propagate.
   */
  static void forEachRow(ColumnBatch<DeviceColumn> deviceBatch, List<Attribute> input,
      List<PipelineStep> steps, List<HashedRelation> relations, Backend backend,
      GpuStream stream, Consumer<InternalRow> sink) {
    try (ColumnBatch<HostColumn> batch = ColumnTransfer.toHost(deviceBatch,
        backend.stagingAllocator(), stream)) {
      feedAll(sparkView(batch, input), chain(input, steps, relations, sink));
    }
  }

  private static ColumnarBatch sparkView(ColumnBatch<HostColumn> batch, List<Attribute> input) {
    ColumnVector[] vectors = new ColumnVector[batch.columns().size()];
    for (int i = 0; i < vectors.length; i++) {
      vectors[i] = HostColumnVector.view(input.get(i).dataType(), batch.column(i));
    }
    return new ColumnarBatch(vectors, batch.rowCount());
  }

  /** The steps as Spark evaluates them, then {@code sink}. */
  private static List<RowStep> chain(List<Attribute> input, List<PipelineStep> steps,
      List<HashedRelation> relations, Consumer<InternalRow> sink) {
    List<Attribute> schema = input;
    List<RowStep> chain = new ArrayList<>();
    for (PipelineStep step : steps) {
      if (step.isFilter()) {
        chain.add(filter(step.condition(), schema));
      } else if (step.isProbe()) {
        ProbeStep probe = new ProbeStep(step.probe(), schema,
            relations.get(step.probe().table()));
        chain.add(probe);
        schema = probe.outputSchema;
      } else {
        chain.add(project(step.projectList(), schema));
        schema = step.projectList().stream().map(NamedExpression::toAttribute).toList();
      }
    }
    chain.add((row, next) -> sink.accept(row));
    return chain;
  }

  private static void feedAll(ColumnarBatch batch, List<RowStep> chain) {
    Iterator<InternalRow> rows = batch.rowIterator();
    while (rows.hasNext()) {
      feed(chain, 0, rows.next());
    }
  }

  /** Sends a row through steps {@code i} onwards, depth first (a join may give several rows). */
  private static void feed(List<RowStep> chain, int i, InternalRow row) {
    if (i < chain.size()) {
      chain.get(i).apply(row, next -> feed(chain, i + 1, next));
    }
  }

  /** One Spark step over rows: passes on zero or more rows for each row it gets. */
  private interface RowStep {
    void apply(InternalRow row, Consumer<InternalRow> next);
  }

  private static RowStep filter(Expression condition, List<Attribute> schema) {
    BasePredicate p = predicate(condition, schema);
    return (row, next) -> {
      if (p.eval(row)) {
        next.accept(row);
      }
    };
  }

  private static RowStep project(List<NamedExpression> list, List<Attribute> schema) {
    UnsafeProjection p = projection(list.stream().map(e -> (Expression) e).toList(), schema);
    return (row, next) -> next.accept(p.apply(row));
  }

  private static BasePredicate predicate(Expression condition, List<Attribute> schema) {
    BasePredicate p = Predicate.create(condition, CollectionConverters.asScala(schema).toSeq());
    p.initialize(0);
    return p;
  }

  private static UnsafeProjection projection(List<? extends Expression> exprs,
      List<Attribute> schema) {
    List<Expression> list = new ArrayList<>(exprs);
    return UnsafeProjection.create(CollectionConverters.asScala(list).toSeq(),
        CollectionConverters.asScala(schema).toSeq());
  }

  /** A broadcast hash join as Spark's BroadcastHashJoinExec evaluates it, row by row. */
  private static final class ProbeStep implements RowStep {
    private final JoinProbe probe;
    private final UnsafeProjection key;
    private final HashedRelation relation;
    private final BasePredicate condition;
    private final UnsafeProjection output;
    private final InternalRow noMatch;
    private final JoinedRow joined = new JoinedRow();
    /**
     * The attributes of the rows it passes on: a semi or anti join passes the stream rows as they
     * are; an inner or outer join outputs the join's attributes that the stream rows carry (the
     * batch holds only the columns the pipeline reads) and the build side's.
     */
    final List<Attribute> outputSchema;

    ProbeStep(JoinProbe probe, List<Attribute> stream, HashedRelation relation) {
      this.probe = probe;
      this.key = projection(probe.relationKeys(), stream);
      this.relation = relation.asReadOnlyCopy();
      List<Attribute> both = new ArrayList<>(stream);
      both.addAll(probe.buildOutput());
      this.condition = probe.condition() == null ? null : predicate(probe.condition(), both);
      Set<ExprId> available = both.stream().map(Attribute::exprId).collect(Collectors.toSet());
      this.outputSchema = probe.kind().matchOnly() ? stream
          : probe.output().stream().filter(a -> available.contains(a.exprId())).toList();
      this.output = probe.kind().matchOnly() ? null : projection(outputSchema, both);
      this.noMatch = new GenericInternalRow(probe.buildOutput().size());
    }

    @Override
    public void apply(InternalRow row, Consumer<InternalRow> next) {
      if (relation == EmptyHashedRelation$.MODULE$ && probe.kind() != JoinKind.LEFT_OUTER) {
        // Spark's HashJoin never evaluates the keys over an empty build side: an inner or semi
        // join outputs nothing, an anti join every row.
        if (probe.kind() == JoinKind.LEFT_ANTI) {
          next.accept(row);
        }
        return;
      }
      UnsafeRow k = key.apply(row);
      scala.collection.Iterator<InternalRow> found = k.anyNull() ? null : relation.get(k);
      Iterator<InternalRow> matches = found == null ? null : CollectionConverters.asJava(found);
      boolean matched = false;
      while (matches != null && matches.hasNext()) {
        joined.apply(row, matches.next());
        if (condition != null && !condition.eval(joined)) {
          continue;
        }
        matched = true;
        if (probe.kind().matchOnly()) {
          break;
        }
        next.accept(output.apply(joined));
      }
      if (probe.kind() == JoinKind.LEFT_SEMI && matched
          || probe.kind() == JoinKind.LEFT_ANTI && !matched) {
        next.accept(row);
      } else if (probe.kind() == JoinKind.LEFT_OUTER && !matched) {
        next.accept(output.apply(joined.apply(row, noMatch)));
      }
    }
  }
}
