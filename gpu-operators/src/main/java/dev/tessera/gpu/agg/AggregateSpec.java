package dev.tessera.gpu.agg;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.io.Serializable;
import java.util.List;

/**
 * A hash aggregation: the input batch's first {@code keyTypes.size()} columns are the grouping
 * keys, the rest are read by the functions (by column index in the batch). The output has one
 * row per group: the keys, then one column per function. NULL keys form one group; keys compare
 * by their bytes (floating point keys must arrive normalized: one NaN, no -0.0). With no keys
 * there is exactly one group, also for an empty input.
 *
 * @param inputTypes the types of every input column (keys first)
 * @param keyCount how many leading input columns are keys
 * @param functions the aggregates
 * @param ansi Spark's ANSI mode (overflow raises instead of wrapping or giving NULL)
 */
public record AggregateSpec(List<ColumnType> inputTypes, int keyCount,
    List<AggregateFunction> functions, boolean ansi) implements Serializable {

  public AggregateSpec {
    inputTypes = List.copyOf(inputTypes);
    functions = List.copyOf(functions);
    if (keyCount < 0 || keyCount > inputTypes.size()) {
      throw new IllegalArgumentException("keyCount " + keyCount + " of " + inputTypes.size());
    }
    for (AggregateFunction f : functions) {
      if (f.kind() != AggregateFunction.Kind.COUNT_ROWS
          && (f.input() < 0 || f.input() >= inputTypes.size())) {
        throw new IllegalArgumentException(f + " reads no input column");
      }
    }
  }

  public List<ColumnType> keyTypes() {
    return inputTypes.subList(0, keyCount);
  }

  /**
   * Whether every key is of a type a direct group map can index (an integer, a date, a
   * timestamp, a decimal or a boolean: not a string or a floating-point number). The CUDA
   * aggregation builds a map only then, and its generated kernels hold the map's code only then.
   */
  public boolean directMapKeys() {
    for (ColumnType t : keyTypes()) {
      if (t.isString() || t.id() == TypeId.FLOAT || t.id() == TypeId.DOUBLE) {
        return false;
      }
    }
    return true;
  }
}
