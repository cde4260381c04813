package dev.tessera.gpu.codegen;

/**
 * A group key or function input of a generated aggregate kernel, as the group arrays hold it
 * (hash_aggregate.cuh Canonical): the value sign-extended from its type's width (a string's
 * address), its validity (a .pred, or null: never NULL), a string's byte length (null for
 * other types) and a dictionary string's code as loaded ({@link Val#code}; null otherwise).
 */
record AggregateValue(String value, String valid, String length, String code) {
  /** A value without a dictionary code. */
  AggregateValue(String value, String valid, String length) {
    this(value, valid, length, null);
  }

  boolean isString() {
    return length != null;
  }
}
