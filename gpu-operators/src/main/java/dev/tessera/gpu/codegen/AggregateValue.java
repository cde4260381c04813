package dev.tessera.gpu.codegen;

/**
 * A group key or function input of a generated aggregate kernel, as the group arrays hold it
 * (hash_aggregate.cuh Canonical): the value sign-extended from its type's width (a string's
 * address), its validity (a .pred, or null: never NULL) and a string's byte length (null for
 * other types).
 */
record AggregateValue(String value, String valid, String length) {
  boolean isString() {
    return length != null;
  }
}
