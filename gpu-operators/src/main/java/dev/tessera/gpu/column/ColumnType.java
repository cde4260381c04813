package dev.tessera.gpu.column;

import java.io.Serializable;

/**
 * A column's type: a {@link TypeId} plus, for decimals, precision and scale.
 *
 * @param id the physical type
 * @param precision decimal digits (decimals only; 0 otherwise)
 * @param scale digits after the point (decimals only; 0 otherwise)
 */
public record ColumnType(TypeId id, int precision, int scale) implements Serializable {
  /** The most decimal digits an int64 unscaled value always holds. */
  public static final int MAX_DECIMAL_PRECISION = 18;

  public static final ColumnType BOOLEAN = new ColumnType(TypeId.BOOLEAN, 0, 0);
  public static final ColumnType BYTE = new ColumnType(TypeId.BYTE, 0, 0);
  public static final ColumnType SHORT = new ColumnType(TypeId.SHORT, 0, 0);
  public static final ColumnType INT = new ColumnType(TypeId.INT, 0, 0);
  public static final ColumnType LONG = new ColumnType(TypeId.LONG, 0, 0);
  public static final ColumnType FLOAT = new ColumnType(TypeId.FLOAT, 0, 0);
  public static final ColumnType DOUBLE = new ColumnType(TypeId.DOUBLE, 0, 0);
  public static final ColumnType DATE = new ColumnType(TypeId.DATE, 0, 0);
  public static final ColumnType TIMESTAMP = new ColumnType(TypeId.TIMESTAMP, 0, 0);
  public static final ColumnType STRING = new ColumnType(TypeId.STRING, 0, 0);

  public ColumnType {
    if (id == null) {
      throw new IllegalArgumentException("type id must not be null");
    }
    if (id == TypeId.DECIMAL) {
      if (precision < 1 || precision > MAX_DECIMAL_PRECISION || scale < 0 || scale > precision) {
        throw new IllegalArgumentException(String.format(
            "decimal(%d,%d) is not supported on the device: precision must be 1 to %d and scale"
                + " 0 to precision", precision, scale, MAX_DECIMAL_PRECISION));
      }
    } else if (precision != 0 || scale != 0) {
      throw new IllegalArgumentException(id + " has no precision or scale");
    }
  }

  public static ColumnType decimal(int precision, int scale) {
    return new ColumnType(TypeId.DECIMAL, precision, scale);
  }

  public boolean isString() {
    return id == TypeId.STRING;
  }

  /** Bytes of the data buffer for {@code rows} fixed-width values. */
  public long fixedDataBytes(long rows) {
    if (isString()) {
      throw new IllegalStateException("strings have no fixed width");
    }
    return rows * id.width();
  }

  @Override
  public String toString() {
    return id == TypeId.DECIMAL ? "decimal(" + precision + "," + scale + ")"
        : id.name().toLowerCase(java.util.Locale.ROOT);
  }
}
