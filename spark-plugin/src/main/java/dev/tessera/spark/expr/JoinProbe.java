package dev.tessera.spark.expr;

import dev.tessera.gpu.join.JoinTableSchema;
import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;

/**
 * One broadcast hash join of a fused chain, as its stream side's rows go through it: the probe of
 * a join table built from the broadcast build side.
 *
 * @param table which of the GPU node's build sides (and join tables) it probes
 * @param kind the join, seen from the stream side
 * @param streamKeys the stream keys, over the chain's attributes at this point
 * @param relationKeys the stream keys as Spark's HashedRelation of the build side is keyed
 *     (HashJoin.rewriteKeyExpr of streamKeys), for replaying a batch on the CPU
 * @param buildKeys the build keys, bound to the build side's output
 * @param buildOutput the build side's output attributes
 * @param payload the build side's output columns the join table carries, by ordinal
 * @param schema the join table: the build keys' types, then the payload columns' types
 * @param condition a condition besides the keys, over stream and build attributes, or null
 * @param output the join's output attributes, in Spark's order
 * @param description the Spark join, for plans and explain
 * @param wholeBuildTable whether the build side is a whole table: a relation with no filter but
 *     null checks, so that in a foreign-key join nearly every stream row finds its build row
 *     ({@link ProbeOrder} probes such a table after the others)
 * @param keptShare the share of its table's rows the build side keeps (its rows over the table's,
 *     as a broadcast stage that has run counted them, or Spark's statistics give them), else
 *     NaN: in a foreign-key join, about the share of stream rows that find a build row
 *     ({@link ProbeOrder} probes the smaller shares first)
 */
public record JoinProbe(int table, JoinKind kind, List<Expression> streamKeys,
    List<Expression> relationKeys, List<Expression> buildKeys, List<Attribute> buildOutput,
    int[] payload, JoinTableSchema schema, Expression condition, List<Attribute> output,
    String description, boolean wholeBuildTable, double keptShare) implements Serializable {

  public JoinProbe {
    streamKeys = List.copyOf(streamKeys);
    relationKeys = List.copyOf(relationKeys);
    buildKeys = List.copyOf(buildKeys);
    buildOutput = List.copyOf(buildOutput);
    payload = payload.clone();
    output = List.copyOf(output);
  }

  /** The same probe of another of the node's tables. */
  public JoinProbe withTable(int newTable) {
    return new JoinProbe(newTable, kind, streamKeys, relationKeys, buildKeys, buildOutput, payload,
        schema, condition, output, description, wholeBuildTable, keptShare);
  }

  /**
   * The same probe with other stream keys (Spark's relation keys, for the CPU replay, stay those
   * of the join).
   */
  public JoinProbe withStreamKeys(List<Expression> newStreamKeys) {
    return new JoinProbe(table, kind, newStreamKeys, relationKeys, buildKeys, buildOutput, payload,
        schema, condition, output, description, wholeBuildTable, keptShare);
  }

  /** The build attributes the join table carries, in payload order. */
  public List<Attribute> payloadAttributes() {
    return java.util.Arrays.stream(payload).mapToObj(buildOutput::get).toList();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof JoinProbe p && table == p.table && kind == p.kind
        && streamKeys.equals(p.streamKeys) && buildKeys.equals(p.buildKeys)
        && java.util.Arrays.equals(payload, p.payload) && java.util.Objects.equals(condition,
            p.condition) && output.equals(p.output);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(table, kind, streamKeys, output);
  }

  @Override
  public String toString() {
    return "Probe#" + table + " " + description;
  }
}
