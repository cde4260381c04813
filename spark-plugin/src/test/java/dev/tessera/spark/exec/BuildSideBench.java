package dev.tessera.spark.exec;

import dev.tessera.gpu.Backend;
import dev.tessera.gpu.BackendKind;
import dev.tessera.gpu.Backends;
import dev.tessera.gpu.RuntimeOptions;
import dev.tessera.gpu.column.ColumnBatch;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.HostColumn;
import dev.tessera.spark.expr.SparkTypes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.joins.HashedRelation;
import org.apache.spark.sql.execution.joins.HashedRelation$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Benchmark (not a test) of turning a broadcast join's build side into host columns, as a task
 * does before it builds the device join table ({@link BuildSideColumns#collect}): SSB 4.2's part
 * side at scale factor 10 (about 320,000 rows: an INT key and a STRING payload), once in Spark's
 * LongHashedRelation (integral keys, as Spark broadcasts SSB's) and once in an
 * UnsafeHashedRelation (a STRING key), and without the payload; all of it twice (the second round
 * is the warmer). Prints the median of 5 runs after 3 warm-ups, in ns a row; {@code -DwarmUp=0
 * -Druns=1} times a cold first build, as a JVM's first query makes it.
 *
 * <pre>java -cp ... [-DwarmUp=N] [-Druns=N] dev.tessera.spark.exec.BuildSideBench [rows]</pre>
 */
public final class BuildSideBench {
  private static final int WARM_UP = Integer.getInteger("warmUp", 3);
  private static final int RUNS = Integer.getInteger("runs", 5);

  private BuildSideBench() {}

  public static void main(String[] args) throws Exception {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 320_000;
    List<DataType> schema = List.of(DataTypes.IntegerType, DataTypes.StringType,
        DataTypes.StringType);
    UnsafeProjection toUnsafe = UnsafeProjection.create(schema.toArray(new DataType[0]));
    List<InternalRow> input = new ArrayList<>(rows);
    for (int r = 0; r < rows; r++) {
      input.add(toUnsafe.apply(new GenericInternalRow(new Object[] {r * 3 + 1,
          UTF8String.fromString("MFGR#" + (1 + r % 5) + (1 + r % 5)),
          UTF8String.fromString("MFGR#" + (1 + r % 5) + (1 + r % 5) + (r % 40))})).copy());
    }
    Expression intKey = new BoundReference(0, DataTypes.IntegerType, false);
    Expression stringKey = new BoundReference(2, DataTypes.StringType, false);
    try (Backend backend = Backends.open(BackendKind.HOST_REFERENCE,
        RuntimeOptions.defaults().withPinnedMemoryCap(1L << 30))) {
      for (int round = 1; round <= 2; round++) {
      run("long relation, INT key, STRING payload", input,
          new Cast(intKey, DataTypes.LongType, scala.Option.empty(),
              org.apache.spark.sql.catalyst.expressions.EvalMode.LEGACY()), intKey, new int[] {1}, backend);
      run("unsafe relation, STRING key, STRING payload", input, stringKey, stringKey,
          new int[] {1}, backend);
      run("long relation, INT key, no payload", input,
          new Cast(intKey, DataTypes.LongType, scala.Option.empty(),
              org.apache.spark.sql.catalyst.expressions.EvalMode.LEGACY()), intKey, new int[0], backend);
      }
    }
  }

  private static void run(String name, List<InternalRow> input, Expression relationKey,
      Expression buildKey, int[] payload, Backend backend) throws Exception {
    HashedRelation relation = HashedRelation$.MODULE$.apply(
        CollectionConverters.asScala(input.iterator()),
        CollectionConverters.asScala(List.of(relationKey)).toSeq(), 64, null, false, false,
        false);
    List<ColumnType> types = new ArrayList<>();
    types.add(SparkTypes.columnType(buildKey.dataType()));
    for (int p : payload) {
      types.add(ColumnType.STRING);
    }
    double[] ns = new double[RUNS];
    for (int run = 0; run < WARM_UP + RUNS; run++) {
      long started = System.nanoTime();
      try (ColumnBatch<HostColumn> columns = BuildSideColumns.collect(
          relation.asReadOnlyCopy(), List.of(buildKey), payload, types,
          backend.stagingAllocator())) {
        if (columns.rowCount() != input.size()) {
          throw new AssertionError(columns.rowCount() + " rows");
        }
      }
      if (run >= WARM_UP) {
        ns[run - WARM_UP] = (System.nanoTime() - started) / (double) input.size();
      }
    }
    Arrays.sort(ns);
    System.out.printf("%-48s %s: %,d rows, %.1f ns a row (%.1f ms)%n", name,
        relation.getClass().getSimpleName(), input.size(), ns[RUNS / 2],
        ns[RUNS / 2] * input.size() / 1e6);
  }
}
