package dev.tessera.gpu.join;

import dev.tessera.gpu.column.ColumnType;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * The shape of a join table that a {@link dev.tessera.gpu.expr.Program} probes: the types of its
 * key columns and of its payload columns (the build side's columns the join outputs or its
 * condition reads). A program names the tables it probes by their index in
 * {@link dev.tessera.gpu.expr.Program#tables()}; the tables given at run time must have these
 * shapes.
 *
 * @param keyTypes the key columns' types (integral, date, timestamp, decimal or string)
 * @param payloadTypes the payload columns' types
 */
public record JoinTableSchema(List<ColumnType> keyTypes, List<ColumnType> payloadTypes)
    implements Serializable {

  public JoinTableSchema {
    keyTypes = List.copyOf(keyTypes);
    payloadTypes = List.copyOf(payloadTypes);
    if (keyTypes.isEmpty()) {
      throw new IllegalArgumentException("a join table needs at least one key column");
    }
  }

  /** The build batch's column types: the keys, then the payload. */
  public List<ColumnType> buildColumnTypes() {
    List<ColumnType> all = new ArrayList<>(keyTypes);
    all.addAll(payloadTypes);
    return all;
  }

  /** Refuses a build batch whose columns are not {@link #buildColumnTypes()}. */
  public void checkBuildColumns(List<ColumnType> actual) {
    if (!buildColumnTypes().equals(actual)) {
      throw new IllegalArgumentException("the build batch has columns " + actual
          + ", the join table schema says " + buildColumnTypes());
    }
  }
}
