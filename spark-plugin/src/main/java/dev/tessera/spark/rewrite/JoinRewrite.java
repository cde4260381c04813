package dev.tessera.spark.rewrite;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.exec.DeviceToHostExec;
import dev.tessera.spark.exec.HostToDeviceExec;
import dev.tessera.spark.exec.TesseraBroadcastHashJoinExec;
import dev.tessera.spark.exec.TesseraBroadcastHashJoinExec.Kind;
import dev.tessera.spark.expr.ExpressionCompiler;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.IntStream;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BindReferences;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.optimizer.BuildLeft$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftAnti$;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.RightOuter$;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A BroadcastHashJoinExec becomes a {@link TesseraBroadcastHashJoinExec} over its stream side
 * (device batches) and Spark's own broadcast of its build side:
 *
 * <pre>
 *   BroadcastHashJoinExec                  DeviceToHostExec
 *     stream                   ==>           TesseraBroadcastHashJoinExec [probe, expand]
 *     BroadcastExchangeExec build              HostToDeviceExec stream (or its GPU node)
 *                                              BroadcastExchangeExec build (unchanged)
 * </pre>
 *
 * Why Spark's broadcast: under adaptive execution the build side is a broadcast query stage that
 * has already run (with Spark's HashedRelation mode) before the join is planned, so a GPU
 * exchange could not replace it there; keeping Spark's exchange also keeps exchange reuse and
 * dynamic partition pruning as they are. Each executor converts the relation's rows to columns
 * once per broadcast (as compact as a columnar broadcast would be once on the device).
 */
final class JoinRewrite {
  private static final String NAME = "BroadcastHashJoinExec";
  /** The most rows of one batch of a 1:N expansion (a larger one is split). */
  static final int MAX_EXPANDED_ROWS = 1 << 20;

  private JoinRewrite() {}

  static SparkPlan toGpu(BroadcastHashJoinExec join, FilterProjectRewriter.Pass pass) {
    if (!pass.conf.isExecEnabled(NAME)) {
      return pass.stayOnCpu(join, NAME + " is disabled by " + TesseraConf.execEnabledKey(NAME));
    }
    try {
      return new DeviceToHostExec(plan(join, pass));
    } catch (Unsupported e) {
      return pass.stayOnCpu(join, e.getMessage());
    }
  }

  private static TesseraBroadcastHashJoinExec plan(BroadcastHashJoinExec join,
      FilterProjectRewriter.Pass pass) throws Unsupported {
    boolean buildLeft = join.buildSide() == BuildLeft$.MODULE$;
    Kind kind = kind(join.joinType(), buildLeft, join.isNullAwareAntiJoin());
    SparkPlan streamPlan = buildLeft ? join.right() : join.left();
    SparkPlan buildPlan = buildLeft ? join.left() : join.right();
    List<Expression> streamKeys = asJava(buildLeft ? join.rightKeys() : join.leftKeys());
    List<Expression> buildKeys = asJava(buildLeft ? join.leftKeys() : join.rightKeys());
    List<ColumnType> keyTypes = new ArrayList<>();
    for (Expression k : buildKeys) {
      keyTypes.add(keyType(k));
    }
    Expression condition = join.condition().isDefined() ? join.condition().get() : null;
    if (condition != null && kind != Kind.INNER) {
      // PROBE finds one build row; with repeated keys the condition must see every one, and a
      // left outer row must know that none passed: neither fits the fused program yet.
      throw new Unsupported("a join condition besides the keys is supported for inner joins"
          + " only");
    }
    if (condition != null && pass.ansi) {
      throw new Unsupported("a join condition under ANSI mode (its errors are not replayed on"
          + " the CPU yet)");
    }
    List<Attribute> streamAttrs = asJava(streamPlan.output());
    List<Attribute> buildAttrs = asJava(buildPlan.output());
    List<Attribute> output = asJava(join.output());
    int[] payload = kind.equals(Kind.LEFT_SEMI) || kind.equals(Kind.LEFT_ANTI) ? new int[0]
        : IntStream.range(0, buildAttrs.size()).toArray();
    List<ColumnType> payloadTypes = new ArrayList<>();
    for (int p : payload) {
      payloadTypes.add(SparkTypes.columnType(buildAttrs.get(p).dataType()));
    }
    for (Attribute a : streamAttrs) {
      SparkTypes.columnType(a.dataType());
    }
    JoinTableSchema schema = new JoinTableSchema(keyTypes, payloadTypes);
    Predicate<String> enabled =
        e -> !TesseraConf.hasExpressionSwitch(e) || pass.conf.isExpressionEnabled(e);
    Programs programs = new Programs(pass.ansi, enabled, streamAttrs, buildAttrs, payload,
        schema, output);
    Program probe = programs.probe(kind, streamKeys, condition);
    Program keys = programs.keys(streamKeys);
    Program expanded = programs.expanded(condition);
    List<Expression> boundBuildKeys = new ArrayList<>();
    for (Expression k : buildKeys) {
      boundBuildKeys.add(BindReferences.bindReference(k,
          org.apache.spark.sql.catalyst.expressions.package$.MODULE$.AttributeSeq(
              buildPlan.output()), false));
    }
    TesseraBroadcastHashJoinExec.Plan plan = new TesseraBroadcastHashJoinExec.Plan(kind, schema,
        boundBuildKeys, payload, probe, keys, expanded, MAX_EXPANDED_ROWS);
    return new TesseraBroadcastHashJoinExec(deviceInput(streamPlan, pass), buildPlan, plan,
        output, join.joinType() + " " + join.leftKeys().mkString(", ") + " = "
            + join.rightKeys().mkString(", ") + (condition == null ? "" : " AND " + condition.sql())
            + (buildLeft ? " (build left)" : ""));
  }

  /** The stream side as device batches of all its columns: a GPU node's, or uploaded. */
  private static SparkPlan deviceInput(SparkPlan stream, FilterProjectRewriter.Pass pass) {
    if (stream instanceof DeviceToHostExec d) {
      return d.child();
    }
    int[] all = IntStream.range(0, stream.output().size()).toArray();
    return new HostToDeviceExec(stream, all, pass.conf.batchSizeBytes());
  }

  private static Kind kind(JoinType type, boolean buildLeft, boolean nullAware)
      throws Unsupported {
    if (type == Inner$.MODULE$) {
      return Kind.INNER;
    } else if (type == LeftOuter$.MODULE$ && !buildLeft) {
      return Kind.LEFT_OUTER;
    } else if (type == RightOuter$.MODULE$ && buildLeft) {
      return Kind.LEFT_OUTER; // seen from the stream side, the right one
    } else if (type == LeftSemi$.MODULE$ && !buildLeft) {
      return Kind.LEFT_SEMI;
    } else if (type == LeftAnti$.MODULE$ && !buildLeft) {
      if (nullAware) {
        throw new Unsupported("the null-aware anti join of NOT IN (a NULL on either side"
            + " changes every row's result) is not supported on the GPU");
      }
      return Kind.LEFT_ANTI;
    }
    throw new Unsupported("join type " + type + " with the build side on the "
        + (buildLeft ? "left" : "right") + " is not supported on the GPU");
  }

  private static ColumnType keyType(Expression key) throws Unsupported {
    ColumnType t = SparkTypes.columnType(key.dataType());
    return switch (t.id()) {
      case BYTE, SHORT, INT, LONG, DATE, DECIMAL, STRING -> t;
      default -> throw new Unsupported("join keys of type " + key.dataType().sql()
          + " are not supported on the GPU");
    };
  }

  private static <T> List<T> asJava(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }

  /** Compiles the join's three programs. */
  private record Programs(boolean ansi, Predicate<String> enabled, List<Attribute> stream,
      List<Attribute> build, int[] payload, JoinTableSchema schema, List<Attribute> output) {

    /** A compiler whose program's inputs are the stream columns, in order. */
    private ExpressionCompiler streamCompiler(ProgramBuilder b) throws Unsupported {
      ExpressionCompiler c = new ExpressionCompiler(b, stream, ansi, enabled);
      for (Attribute a : stream) {
        c.compile(a);
      }
      return c;
    }

    /** Stream batch -> probe -> (filter) -> output columns, for unique keys or semi/anti. */
    Program probe(Kind kind, List<Expression> streamKeys, Expression condition)
        throws Unsupported {
      ProgramBuilder b = new ProgramBuilder(ansi);
      ExpressionCompiler c = streamCompiler(b);
      int[] keys = new int[streamKeys.size()];
      for (int k = 0; k < keys.length; k++) {
        keys[k] = c.compile(streamKeys.get(k)).register();
      }
      int table = b.table(schema);
      int first = b.constant(keys[0]);
      for (int k = 1; k < keys.length; k++) {
        b.constant(keys[k]);
      }
      int row = b.emitNew(Opcode.PROBE, table, first, keys.length);
      for (int p = 0; p < payload.length; p++) {
        Attribute a = build.get(payload[p]);
        c.bind(a.exprId(), new ExpressionCompiler.Value(
            b.emitNew(Opcode.LOAD_BUILD, table, row, p), a.dataType()));
      }
      int filter = switch (kind) {
        case LEFT_OUTER -> -1;
        case LEFT_ANTI -> b.emitNew(Opcode.IS_NULL, row, 0, 0);
        default -> {
          int matched = b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
          // The condition counts (and may raise errors) only where the keys matched.
          yield condition == null ? matched : b.emitNew(Opcode.SELECT, matched,
              c.compile(condition).register(), b.loadConstant(0));
        }
      };
      return finish(b, c, filter);
    }

    /** Stream batch -> its columns, then the stream keys' values (what expand probes with). */
    Program keys(List<Expression> streamKeys) throws Unsupported {
      ProgramBuilder b = new ProgramBuilder(ansi);
      ExpressionCompiler c = streamCompiler(b);
      List<Program.Output> outputs = new ArrayList<>();
      for (Attribute a : stream) {
        outputs.add(new Program.Output(c.compile(a).register(),
            SparkTypes.columnType(a.dataType())));
      }
      for (int k = 0; k < streamKeys.size(); k++) {
        outputs.add(new Program.Output(c.compile(streamKeys.get(k)).register(),
            schema.keyTypes().get(k)));
      }
      return check(b, b.build(-1, outputs));
    }

    /** Expanded batch (stream columns, keys, payload) -> (condition) -> output columns. */
    Program expanded(Expression condition) throws Unsupported {
      ProgramBuilder b = new ProgramBuilder(ansi);
      ExpressionCompiler c = streamCompiler(b);
      for (ColumnType k : schema.keyTypes()) {
        b.addInput(k); // carried by the expanded batch, not read
      }
      for (int p = 0; p < payload.length; p++) {
        Attribute a = build.get(payload[p]);
        int column = b.addInput(schema.payloadTypes().get(p));
        c.bind(a.exprId(), new ExpressionCompiler.Value(b.loadColumn(column), a.dataType()));
      }
      int filter = condition == null ? -1 : c.compile(condition).register();
      return finish(b, c, filter);
    }

    private Program finish(ProgramBuilder b, ExpressionCompiler c, int filter)
        throws Unsupported {
      List<Program.Output> outputs = new ArrayList<>();
      for (Attribute a : output) {
        outputs.add(new Program.Output(c.compile(a).register(),
            SparkTypes.columnType(a.dataType())));
      }
      return check(b, b.build(filter, outputs));
    }

    private static Program check(ProgramBuilder b, Program p) throws Unsupported {
      if (b.registerCount() > Program.MAX_REGISTERS) {
        throw new Unsupported("the join needs " + b.registerCount() + " registers, more than the "
            + Program.MAX_REGISTERS + " the GPU interpreter has");
      }
      return p;
    }
  }
}
