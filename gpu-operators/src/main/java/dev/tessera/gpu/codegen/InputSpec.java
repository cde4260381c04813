package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.DeviceColumn;
import java.io.Serializable;
import java.util.List;

/**
 * What a generated kernel bakes in about one input column: its type, how it is stored (plain,
 * GPU-FOR or GPU-DFOR; a string column stored encoded holds dictionary codes) and whether it has
 * a validity bitmap. The buffers themselves are the kernel's arguments (program.cuh InputColumn),
 * so every batch of the same layout runs the same kernel.
 */
public record InputSpec(ColumnType type, Encoding encoding, boolean nullable)
    implements Serializable {

  public static InputSpec of(DeviceColumn column) {
    return new InputSpec(column.type(), column.encoding(), column.validity() != null);
  }

  /**
   * Whether any of {@code inputs} is GPU-DFOR: its tiles are decoded block-wide into per-item
   * registers (TilePrimitives.dforTile), which shapes the whole kernel.
   */
  static boolean anyDfor(List<InputSpec> inputs) {
    return inputs.stream().anyMatch(i -> i.encoding() == Encoding.DFOR);
  }

  /** A string column whose values are codes into a per-batch dictionary. */
  boolean dictionary() {
    return type.isString() && encoding != Encoding.PLAIN;
  }

  /** Words of an encoded column's references: program.cuh ReferenceWords. */
  int referenceWords() {
    return !type.isString() && type.id().width() == 8 ? 2 : 1;
  }
}
