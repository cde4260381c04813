package dev.tessera.gpu.codegen;

/**
 * What generated aggregate kernels read of hash_aggregate.cuh's plan (CudaHashAggregate writes
 * it): 64-bit words, the header, then a Key per group key, then a Function per function. Word
 * indexes as the CUDA structs declare them (HashAggregateAbiTest checks the H_ and F_ names).
 */
final class AggregatePlan {
  static final int HEADER_WORDS = 16;
  static final int COLUMN_WORDS = 12;
  /** Header.local_entries: entries of the per-block table (a power of two; 0: none). */
  static final int H_LOCAL_ENTRIES = 12;
  /** Function.value: per group uint64 (sums: the low word of the int128). */
  static final int F_VALUE = 4;
  /** Function.high: per group uint64 (sums: the high word). */
  static final int F_HIGH = 5;
  /** Function.seen: per group uint32. */
  static final int F_SEEN = 6;

  private AggregatePlan() {}

  /** Byte offset in the plan of function {@code f}'s word {@code word}, after {@code keys} keys. */
  static int functionField(int keys, int f, int word) {
    return 8 * (HEADER_WORDS + COLUMN_WORDS * keys + COLUMN_WORDS * f + word);
  }

  /** Byte offset in the plan of header word {@code word}. */
  static int headerField(int word) {
    return 8 * word;
  }
}
