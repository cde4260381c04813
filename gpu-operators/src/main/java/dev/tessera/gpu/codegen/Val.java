package dev.tessera.gpu.codegen;

/**
 * One program register's content for one row, as PTX operands: what program.cuh's Register holds,
 * with what the generator knows statically left out of the code. A NULL value's {@code value} and
 * {@code length} are unspecified (every reader checks {@code valid} first, and outputs write 0
 * for NULL rows), which spares an instruction per operation.
 *
 * @param value a .b64 register or immediate: INT, F32 bits (low 32 bits), F64 bits or an address
 * @param valid a .pred register, or null when the value is never NULL
 * @param error a .b32 register holding a RowError code, or null when it is always 0
 * @param length a .b32 register or immediate: a string's byte length; null for other kinds
 * @param code a .b64 register: a string's code in its column's per-batch dictionary, as loaded
 *     (one code a string, one string a code, within a launch); null for any other value,
 *     including every string an operation made
 */
record Val(String value, String valid, String error, String length, String code) {
  /** A value without a dictionary code. */
  Val(String value, String valid, String error, String length) {
    this(value, valid, error, length, null);
  }

  static Val of(String value) {
    return new Val(value, null, null, null);
  }
}
