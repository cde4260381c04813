package dev.tessera.spark.exec;

import java.util.Arrays;
import org.apache.spark.sql.execution.vectorized.Dictionary;

/**
 * One staged string column's dictionary entries as staging has decoded them, kept across the
 * Spark batches that share them: Spark's Parquet reader hands every batch of a column chunk the
 * same dictionary (in a new wrapper each time, {@link VectorStorage#entriesSource}), and decoding
 * an entry (Parquet's {@code Binary.getBytes()} copies it) once per batch cost more than the
 * rest of staging a dictionary-encoded string column. One per staged column and task; not
 * thread-safe.
 */
final class DictionaryStrings {
  private static final int FIRST_ENTRIES = 16;

  private Object source;
  private byte[][] entries = new byte[FIRST_ENTRIES][];

  /**
   * Makes this hold {@code dictionary}'s entries: those decoded so far when they come from the
   * same source as the last batch's, none otherwise.
   */
  void use(Dictionary dictionary) {
    Object from = VectorStorage.entriesSource(dictionary);
    if (from != source) {
      source = from;
      entries = new byte[FIRST_ENTRIES][];
    }
  }

  /** Entry {@code id}'s bytes as decoded before, or null. */
  byte[] get(int id) {
    return id < entries.length ? entries[id] : null;
  }

  /** Keeps entry {@code id}'s decoded bytes. */
  void put(int id, byte[] bytes) {
    if (id >= entries.length) {
      entries = Arrays.copyOf(entries, Math.max(id + 1, 2 * entries.length));
    }
    entries[id] = bytes;
  }
}
