package dev.tessera.gpu.column;

/**
 * The column types the device supports, with their element width in the data buffer.
 * Layouts follow Arrow's, except that booleans take one byte per value (as cuDF's BOOL8), so a
 * kernel reads them like any other fixed-width column.
 */
public enum TypeId {
  BOOLEAN(1),
  BYTE(1),
  SHORT(2),
  INT(4),
  LONG(8),
  FLOAT(4),
  DOUBLE(8),
  /** Days since 1970-01-01, int32 (Spark's DateType). */
  DATE(4),
  /** Microseconds since the epoch, UTC, int64 (Spark's TimestampType). */
  TIMESTAMP(8),
  /** Unscaled value as int64, precision at most 18 (Spark's compact decimal). */
  DECIMAL(8),
  /** UTF-8 bytes in the data buffer, int32 offsets (rows + 1) in the offsets buffer. */
  STRING(1);

  private final int width;

  TypeId(int width) {
    this.width = width;
  }

  /** Bytes per element of the data buffer (per byte of text for strings). */
  public int width() {
    return width;
  }
}
