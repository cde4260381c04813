package dev.tessera.gpu.codegen;

/**
 * What generated aggregate kernels read of hash_aggregate.cuh's plan (CudaHashAggregate writes
 * it): 64-bit words, the header, then a Key per group key, then a Function per function. Word
 * indexes as the CUDA structs declare them (HashAggregateAbiTest checks the H_, K_ and F_ names).
 */
final class AggregatePlan {
  static final int HEADER_WORDS = 16;
  static final int COLUMN_WORDS = 12;
  /** Header.table_mask: the group table's capacity - 1 (a power of two). */
  static final int H_TABLE_MASK = 3;
  /**
   * Header.slots: the group table, a hash_aggregate.cuh Slot each: the group's uint64 hash, then
   * its int32 index (-1 empty, -2 being written).
   */
  static final int H_SLOTS = 4;
  /** Header.hashes: per group its key tuple's uint64 hash. */
  static final int H_HASHES = 5;
  /** Header.group_count: the device's uint64 counter of groups. */
  static final int H_GROUP_COUNT = 6;
  /** Header.heap: the key heap's base, string keys' bytes (0 without string keys). */
  static final int H_HEAP = 7;
  /** Header.heap_used: the device's uint64 counter of heap bytes in use. */
  static final int H_HEAP_USED = 8;
  /** Header.heap_capacity: the key heap's bytes. */
  static final int H_HEAP_CAPACITY = 9;
  /**
   * Header.local_entries: entries of the per-block table (a power of two, or any count where a
   * generated kernel finds them by key, LocalKeyTable; 0: none).
   */
  static final int H_LOCAL_ENTRIES = 12;
  /** Header.direct: the direct group map, int32 per slot (0: none). */
  static final int H_DIRECT = 13;
  /** Key.values: per group int64, the key's value sign-extended from its width. */
  static final int K_VALUES = 3;
  /** Key.nulls: per group uint8, 1 when the key is NULL. */
  static final int K_NULLS = 4;
  /** Key.lengths: per group int32, a string key's byte length. */
  static final int K_LENGTHS = 6;
  /** Key.direct_min: the direct map's smallest value of the key. */
  static final int K_DIRECT_MIN = 9;
  /** Key.direct_span: the direct map's values of the key + 1 (the last digit: NULL). */
  static final int K_DIRECT_SPAN = 10;
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

  /** Byte offset in the plan of key {@code k}'s word {@code word}. */
  static int keyField(int k, int word) {
    return 8 * (HEADER_WORDS + COLUMN_WORDS * k + word);
  }

  /** Byte offset in the plan of header word {@code word}. */
  static int headerField(int word) {
    return 8 * word;
  }
}
