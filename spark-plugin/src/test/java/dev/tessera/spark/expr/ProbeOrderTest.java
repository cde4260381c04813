package dev.tessera.spark.expr;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Add;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * Which probes a fused program runs first: those of filtered build sides before whole tables,
 * within runs of movable probes and column projections, the run's columns unchanged.
 */
class ProbeOrderTest {
  private final Attribute a = attribute("a");
  private final Attribute b = attribute("b");
  private final Attribute c = attribute("c");
  private final List<Attribute> input = List.of(a, b, c);

  /** SSB's Q2.1 shape: the date (a whole table), then part and supplier, projections between. */
  @Test
  void wholeTablesAreProbedAfterTheOthers() throws Unsupported {
    JoinProbe date = probe(0, JoinKind.INNER, a, input, true);
    JoinProbe part = probe(1, JoinKind.INNER, b, date.output(), false);
    JoinProbe supplier = probe(2, JoinKind.INNER, c, part.output(), false);
    PipelineStep filter = PipelineStep.filter(positive(a));
    PipelineStep afterDate = project(date.output());
    PipelineStep afterPart = project(part.output());
    List<PipelineStep> chain = List.of(filter, PipelineStep.probe(date), afterDate,
        PipelineStep.probe(part), afterPart, PipelineStep.probe(supplier));

    List<PipelineStep> ordered = ProbeOrder.forProgram(chain);
    assertEquals(List.of(filter, PipelineStep.probe(part), PipelineStep.probe(supplier),
        PipelineStep.probe(date), afterDate, afterPart, project(supplier.output())), ordered);

    Pipeline p = PipelineCompiler.compile(chain, input, false, e -> true, false, 1000);
    assertEquals(List.of(1, 2, 0), p.fused().tables());
    assertEquals(chain, p.fused().steps()); // explain and the CPU replay keep Spark's order
    assertEquals(supplier.output(), p.output());
    // The staged form (for repeated build keys) keeps Spark's order too.
    assertEquals(List.of(0, 1, 2), p.expandingTables());
  }

  /**
   * SSB's Q4.3 shape: date (2 rows in 7 kept), customer (1 in 5), supplier and part (1 in 25
   * each) in Spark's order; the program probes supplier, part, customer, then date (which keeps
   * 1.43 times customer's share).
   */
  @Test
  void filteredTablesAreProbedByTheShareOfRowsTheyKeep() throws Unsupported {
    Attribute d = attribute("d");
    List<Attribute> fact = List.of(a, b, c, d);
    JoinProbe date = probe(0, JoinKind.INNER, a, fact, false, 2 / 7.0);
    JoinProbe customer = probe(1, JoinKind.INNER, b, date.output(), false, 1 / 5.0);
    JoinProbe supplier = probe(2, JoinKind.INNER, c, customer.output(), false, 1 / 25.0);
    JoinProbe part = probe(3, JoinKind.INNER, d, supplier.output(), false, 1 / 25.0);
    List<PipelineStep> chain = List.of(PipelineStep.probe(date), project(date.output()),
        PipelineStep.probe(customer), PipelineStep.probe(supplier), PipelineStep.probe(part));

    assertEquals(List.of(PipelineStep.probe(supplier), PipelineStep.probe(part),
        PipelineStep.probe(customer), PipelineStep.probe(date), project(date.output()),
        project(part.output())), ProbeOrder.forProgram(chain));
    Pipeline p = PipelineCompiler.compile(chain, fact, false, e -> true, false, 1000);
    assertEquals(List.of(2, 3, 1, 0), p.fused().tables());
    assertEquals(chain, p.fused().steps());
    assertEquals(part.output(), p.output());
  }

  @Test
  void sharesCloseToTheSmallestKeepTheirOrder() {
    // SSB's Q3.1 at SF1: customer 19.9%, supplier 19.1%, date 85.8%.
    JoinProbe customer = probe(0, JoinKind.INNER, a, input, false, 0.199);
    JoinProbe supplier = probe(1, JoinKind.INNER, b, customer.output(), false, 0.191);
    JoinProbe date = probe(2, JoinKind.INNER, c, supplier.output(), false, 0.858);
    List<PipelineStep> chain = List.of(PipelineStep.probe(customer), PipelineStep.probe(supplier),
        PipelineStep.probe(date));
    assertEquals(chain, ProbeOrder.forProgram(chain));

    // Each next: the first of those within 1.25 times the smallest share left (0.1; then 0.2,
    // which 0.24 is within, before it in Spark's order; then 0.2; then 0.5).
    List<PipelineStep> probes = List.of(PipelineStep.probe(probe(0, JoinKind.INNER, a, input,
        false, 0.5)), PipelineStep.probe(probe(1, JoinKind.INNER, a, input, false, 0.24)),
        PipelineStep.probe(probe(2, JoinKind.INNER, a, input, false, 0.1)),
        PipelineStep.probe(probe(3, JoinKind.INNER, a, input, false, 0.2)));
    assertEquals(List.of(2, 1, 3, 0), ProbeOrder.bySharesKept(probes).stream()
        .map(step -> step.probe().table()).toList());
  }

  @Test
  void whereOneFilteredTablesShareIsUnknownTheyKeepTheirOrder() {
    JoinProbe unknown = probe(0, JoinKind.INNER, a, input, false, Double.NaN);
    JoinProbe whole = probe(1, JoinKind.INNER, b, unknown.output(), true, 1.0);
    JoinProbe known = probe(2, JoinKind.INNER, c, whole.output(), false, 0.01);
    List<PipelineStep> chain = List.of(PipelineStep.probe(unknown), PipelineStep.probe(whole),
        PipelineStep.probe(known));
    assertEquals(List.of(PipelineStep.probe(unknown), PipelineStep.probe(known),
        PipelineStep.probe(whole), project(known.output())), ProbeOrder.forProgram(chain));

    // Shares known and already smallest first: the chain as it is.
    JoinProbe first = probe(0, JoinKind.INNER, a, input, false, 0.1);
    JoinProbe second = probe(1, JoinKind.INNER, b, first.output(), false, 0.2);
    List<PipelineStep> inOrder = List.of(PipelineStep.probe(first), PipelineStep.probe(second));
    assertEquals(inOrder, ProbeOrder.forProgram(inOrder));
  }

  @Test
  void probesAlreadyInOrderStay() {
    JoinProbe filtered = probe(0, JoinKind.INNER, a, input, false);
    JoinProbe whole = probe(1, JoinKind.INNER, b, filtered.output(), true);
    JoinProbe semi = probe(2, JoinKind.LEFT_SEMI, c, whole.output(), true);
    List<PipelineStep> chain = List.of(PipelineStep.probe(filtered), PipelineStep.probe(whole),
        PipelineStep.probe(semi));
    assertEquals(chain, ProbeOrder.forProgram(chain));
  }

  @Test
  void aFilterOrComputedColumnBetweenProbesKeepsThem() {
    JoinProbe whole = probe(0, JoinKind.INNER, a, input, true);
    JoinProbe filtered = probe(1, JoinKind.INNER, b, whole.output(), false);
    for (PipelineStep between : List.of(PipelineStep.filter(positive(b)),
        PipelineStep.project(List.of(alias(new Add(a, b)))))) {
      List<PipelineStep> chain = List.of(PipelineStep.probe(whole), between,
          PipelineStep.probe(filtered));
      assertEquals(chain, ProbeOrder.forProgram(chain), between.toString());
    }
  }

  @Test
  void aProbeKeyedByAColumnTheRunMadeStaysAfterIt() {
    JoinProbe whole = probe(0, JoinKind.INNER, a, input, true);
    Attribute payload = whole.buildOutput().get(1);
    JoinProbe byPayload = probe(1, JoinKind.INNER, payload, whole.output(), false);
    List<PipelineStep> chain = List.of(PipelineStep.probe(whole), PipelineStep.probe(byPayload));
    assertEquals(chain, ProbeOrder.forProgram(chain));

    // Nor by a renamed column a projection of the run made.
    NamedExpression renamed = alias(b);
    JoinProbe byRename = probe(1, JoinKind.INNER, renamed.toAttribute(), whole.output(), false);
    List<PipelineStep> renaming = List.of(PipelineStep.probe(whole),
        PipelineStep.project(List.of(a, renamed)), PipelineStep.probe(byRename));
    assertEquals(renaming, ProbeOrder.forProgram(renaming));
  }

  @Test
  void outerJoinsConditionsAndComputedKeysAreNotMoved() {
    JoinProbe whole = probe(0, JoinKind.INNER, a, input, true);
    JoinProbe outer = probe(1, JoinKind.LEFT_OUTER, b, whole.output(), false);
    JoinProbe computed = new JoinProbe(1, JoinKind.INNER, List.of(new Add(b, c)),
        List.of(new Add(b, c)), outer.buildKeys(), outer.buildOutput(), outer.payload(),
        outer.schema(), null, outer.output(), "computed key", false, Double.NaN);
    JoinProbe conditioned = new JoinProbe(1, JoinKind.INNER, List.of(b), List.of(b),
        outer.buildKeys(), outer.buildOutput(), outer.payload(), outer.schema(), positive(c),
        outer.output(), "with a condition", false, Double.NaN);
    for (JoinProbe second : List.of(outer, computed, conditioned)) {
      List<PipelineStep> chain = List.of(PipelineStep.probe(whole), PipelineStep.probe(second));
      assertEquals(chain, ProbeOrder.forProgram(chain), second.description());
    }
  }

  @Test
  void aKeyWidenedToALargerIntegerMovesANarrowedOneDoesNot() {
    JoinProbe whole = probe(0, JoinKind.INNER, a, input, true);
    JoinProbe filtered = probe(1, JoinKind.INNER, b, whole.output(), false);
    Expression widened = new Cast(b, DataTypes.LongType, Option.empty(), EvalMode.ANSI());
    JoinProbe byWidened = filtered.withStreamKeys(List.of(widened));
    assertEquals(List.of(PipelineStep.probe(byWidened), PipelineStep.probe(whole),
        project(byWidened.output())), ProbeOrder.forProgram(List.of(PipelineStep.probe(whole),
        PipelineStep.probe(byWidened))));

    Attribute big = new AttributeReference("big", DataTypes.LongType, true, Metadata.empty(),
        NamedExpression$.MODULE$.newExprId(), scala.collection.immutable.List$.MODULE$.empty());
    JoinProbe byNarrowed = filtered.withStreamKeys(List.of(
        new Cast(big, DataTypes.IntegerType, Option.empty(), EvalMode.ANSI())));
    List<PipelineStep> chain = List.of(PipelineStep.probe(whole), PipelineStep.probe(byNarrowed));
    assertEquals(chain, ProbeOrder.forProgram(chain)); // an ANSI narrowing may raise
  }

  @Test
  void overAnEmptyBuildSideTheProgramReadsTheSameColumns() throws Unsupported {
    JoinProbe whole = probe(0, JoinKind.INNER, a, input, true);
    JoinProbe filtered = probe(1, JoinKind.INNER, c, whole.output(), false);
    List<PipelineStep> chain = List.of(PipelineStep.probe(whole), PipelineStep.probe(filtered));
    Pipeline p = PipelineCompiler.compile(chain, input, false, e -> true, false, 1000);
    assertEquals(List.of(1, 0), p.fused().tables());
    assertEquals(List.of(2, 0, 1), p.inputOrdinals()); // c is the first key the program reads
    for (Set<Integer> empty : List.of(Set.of(0), Set.of(1), Set.of(0, 1))) {
      Pipeline overEmpty = PipelineCompiler.overEmptyBuildSides(p, empty);
      assertEquals(p.inputOrdinals(), overEmpty.inputOrdinals(), empty.toString());
      assertEquals(List.of(1, 0), overEmpty.fused().tables(), empty.toString());
    }
  }

  /**
   * An inner or outer join on {@code streamKey} = k whose table carries its own k and p (a semi
   * join carries nothing), over a stream with columns {@code stream}.
   */
  private static JoinProbe probe(int table, JoinKind kind, Attribute streamKey,
      List<Attribute> stream, boolean wholeBuildTable) {
    return probe(table, kind, streamKey, stream, wholeBuildTable, Double.NaN);
  }

  /** The same, whose build side keeps {@code keptShare} of its table's rows. */
  private static JoinProbe probe(int table, JoinKind kind, Attribute streamKey,
      List<Attribute> stream, boolean wholeBuildTable, double keptShare) {
    List<Attribute> build = List.of(attribute("k" + table), attribute("p" + table));
    int[] carried = kind.matchOnly() ? new int[0] : new int[] {0, 1};
    List<ColumnType> payloadTypes = new ArrayList<>();
    for (int i = 0; i < carried.length; i++) {
      payloadTypes.add(ColumnType.INT);
    }
    List<Attribute> output = new ArrayList<>(stream);
    if (!kind.matchOnly()) {
      output.addAll(build);
    }
    return new JoinProbe(table, kind, List.of(streamKey), List.of(streamKey),
        List.of(new BoundReference(0, DataTypes.IntegerType, true)), build, carried,
        new JoinTableSchema(List.of(ColumnType.INT), payloadTypes), null, output,
        kind + " " + streamKey.name() + " = k" + table, wholeBuildTable, keptShare);
  }

  private static PipelineStep project(List<Attribute> columns) {
    return PipelineStep.project(new ArrayList<NamedExpression>(columns));
  }

  private static NamedExpression alias(Expression e) {
    return new Alias(e, "x", NamedExpression$.MODULE$.newExprId(),
        scala.collection.immutable.List$.MODULE$.empty(), Option.empty(),
        scala.collection.immutable.List$.MODULE$.empty());
  }

  private static Expression positive(Attribute x) {
    return new GreaterThan(x, Literal.create(0, DataTypes.IntegerType));
  }

  private static Attribute attribute(String name) {
    return new AttributeReference(name, DataTypes.IntegerType, true, Metadata.empty(),
        NamedExpression$.MODULE$.newExprId(), scala.collection.immutable.List$.MODULE$.empty());
  }
}
