package dev.tessera.spark.expr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.junit.jupiter.api.Test;

/** How a chain with join probes compiles: the fused program, and the stages cut at expansions. */
class PipelineCompilerTest {
  private static final int MAX_ROWS = 1000;

  private final Attribute a = attribute("a");
  private final Attribute b = attribute("b");
  private final Attribute buildKey = attribute("k");
  private final Attribute payload = attribute("p");

  @Test
  void aChainWithoutJoinsIsOneStage() throws Unsupported {
    Pipeline p = compile(List.of(PipelineStep.filter(positive(a)),
        PipelineStep.project(List.of(b))), List.of(a, b));
    assertTrue(p.staged().isEmpty());
    assertTrue(p.expandingTables().isEmpty());
    assertEquals(List.of(b), p.output());
    assertEquals(List.of(), p.fused().tables());
  }

  @Test
  void anInnerJoinIsFusedAndAlsoStagedAroundItsExpansion() throws Unsupported {
    List<PipelineStep> chain = List.of(PipelineStep.filter(positive(b)),
        PipelineStep.probe(probe(0, JoinKind.INNER, a)),
        PipelineStep.project(List.of(b, payload)));
    Pipeline p = compile(chain, List.of(a, b));
    assertEquals(List.of(b, payload), p.output());
    assertEquals(List.of(0), p.fused().tables());
    assertEquals(1, count(p.fused().program(), Opcode.PROBE));

    assertEquals(2, p.staged().size());
    Pipeline.Stage first = p.staged().get(0);
    Pipeline.Stage last = p.staged().get(1);
    // The first stage keeps the filter, outputs the stream columns and the probe's key.
    assertEquals(0, first.expandTable());
    assertEquals(List.of(), first.tables());
    assertEquals(0, count(first.program(), Opcode.PROBE));
    assertEquals(3, first.program().outputs().size());
    assertEquals(2, first.keyColumns()[0]);
    assertFalse(first.leftOuter());
    // The last reads the expansion: the first's outputs (a, b, the key), then the payload (k, p).
    assertEquals(5, last.input().size());
    assertEquals(List.of(buildKey, payload), last.input().subList(3, 5));
    assertFalse(last.expands());
    assertEquals(2, last.program().outputs().size());
    assertEquals(List.of(0), p.expandingTables());
  }

  @Test
  void semiAndAntiJoinsNeverExpand() throws Unsupported {
    Pipeline p = compile(List.of(PipelineStep.probe(probe(0, JoinKind.LEFT_SEMI, a)),
        PipelineStep.probe(probe(1, JoinKind.LEFT_ANTI, b))), List.of(a, b));
    assertTrue(p.staged().isEmpty());
    assertEquals(List.of(0, 1), p.fused().tables());
  }

  @Test
  void aStageKeepsTheProbesThatNeedNoExpansion() throws Unsupported {
    Pipeline p = compile(List.of(PipelineStep.probe(probe(0, JoinKind.LEFT_SEMI, a)),
        PipelineStep.probe(probe(1, JoinKind.LEFT_OUTER, b))), List.of(a, b));
    assertEquals(2, p.staged().size());
    assertEquals(List.of(0), p.staged().get(0).tables());
    assertEquals(1, p.staged().get(0).expandTable());
    assertTrue(p.staged().get(0).leftOuter());
    assertEquals(List.of(1), p.expandingTables());
    assertEquals(List.of(0, 1), p.fused().tables());
  }

  @Test
  void aProgramOverABatchReadsEveryColumnEvenWhenAnAttributeRepeats() throws Unsupported {
    // Spark's aggregate for count(DISTINCT a) ... GROUP BY a, b outputs (a, b, a): a GPU node
    // above it runs on those three columns as they are.
    Pipeline p = compile(List.of(PipelineStep.project(List.of(a, b))), List.of(a, b, a));
    assertEquals(List.of(0, 1, 2), p.inputOrdinals());
    assertEquals(3, p.fused().program().inputTypes().size());
  }

  @Test
  void overAnEmptyBuildSideOnlyTheKeysOfInnerSemiAndAntiProbesChange() throws Unsupported {
    Pipeline p = compile(List.of(PipelineStep.probe(probe(0, JoinKind.LEFT_SEMI, a)),
        PipelineStep.probe(probe(1, JoinKind.LEFT_OUTER, b))), List.of(a, b));
    assertSame(p, PipelineCompiler.overEmptyBuildSides(p, Set.of(1)));

    Pipeline overEmpty = PipelineCompiler.overEmptyBuildSides(p, Set.of(0, 1));
    assertEquals(p.inputOrdinals(), overEmpty.inputOrdinals());
    assertEquals(p.output(), overEmpty.output());
    JoinProbe semi = overEmpty.fused().steps().get(0).probe();
    assertTrue(semi.streamKeys().get(0) instanceof If);
    assertEquals(List.of(a), semi.relationKeys());
    assertEquals(List.of(b), overEmpty.fused().steps().get(1).probe().streamKeys());
  }

  private static Pipeline compile(List<PipelineStep> chain, List<Attribute> input)
      throws Unsupported {
    return PipelineCompiler.compile(chain, input, false, e -> true, true, MAX_ROWS);
  }

  /** A join on {@code streamKey} = k whose table carries k and p; semi/anti carry nothing. */
  private JoinProbe probe(int table, JoinKind kind, Attribute streamKey) {
    int[] carried = kind.matchOnly() ? new int[0] : new int[] {0, 1};
    List<ColumnType> payloadTypes = new ArrayList<>();
    for (int i = 0; i < carried.length; i++) {
      payloadTypes.add(ColumnType.INT);
    }
    List<Attribute> output = new ArrayList<>(List.of(a, b));
    if (!kind.matchOnly()) {
      output.add(buildKey);
      output.add(payload);
    }
    return new JoinProbe(table, kind, List.of(streamKey), List.of(streamKey),
        List.of(new BoundReference(0, DataTypes.IntegerType, true)), List.of(buildKey, payload),
        carried, new JoinTableSchema(List.of(ColumnType.INT), payloadTypes), null, output,
        kind + " " + streamKey.name() + " = k", false, Double.NaN);
  }

  private static Expression positive(Attribute x) {
    return new GreaterThan(x, Literal.create(0, DataTypes.IntegerType));
  }

  private static int count(Program program, Opcode op) {
    int n = 0;
    for (int i = 0; i < program.code().length; i += Program.WORDS) {
      n += program.code()[i] == op.code() ? 1 : 0;
    }
    return n;
  }

  private static Attribute attribute(String name) {
    return new AttributeReference(name, DataTypes.IntegerType, true, Metadata.empty(),
        NamedExpression$.MODULE$.newExprId(), scala.collection.immutable.List$.MODULE$.empty());
  }
}
