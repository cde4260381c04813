package dev.tessera.gpu.codec;

import java.util.Arrays;

/**
 * A string column's dictionary (distinct values in order of first appearance) and its rows'
 * codes, built with an open-addressing table of entry numbers, so that no object is made per
 * row. A null row takes the code of the row before it (0 at the start), as
 * {@link GpuForLayout} asks of null slots.
 */
final class StringDictionary {
  /** Per row, the code, as the codec's long values. */
  private final long[] codes;
  /** The distinct values, each the first row's array that held it. */
  private final byte[][] entries;
  private final int size;
  private final long entryBytes;

  private StringDictionary(long[] codes, byte[][] entries, int size, long entryBytes) {
    this.codes = codes;
    this.entries = entries;
    this.size = size;
    this.entryBytes = entryBytes;
  }

  /** The dictionary of {@code values[0, rows)}, a null element being a null row. */
  static StringDictionary build(byte[][] values, int rows) {
    long[] codes = new long[rows];
    byte[][] entries = new byte[16][];
    int[] hashes = new int[16];
    int[] table = new int[64]; // entry + 1; 0 is empty
    int size = 0;
    long entryBytes = 0;
    int previous = 0;
    for (int r = 0; r < rows; r++) {
      byte[] value = values[r];
      if (value == null) {
        codes[r] = previous;
        continue;
      }
      int hash = mix(Arrays.hashCode(value));
      int slot = hash & (table.length - 1);
      int code = -1;
      while (table[slot] != 0) {
        int candidate = table[slot] - 1;
        if (hashes[candidate] == hash && Arrays.equals(entries[candidate], value)) {
          code = candidate;
          break;
        }
        slot = (slot + 1) & (table.length - 1);
      }
      if (code < 0) {
        if (size == entries.length) {
          entries = Arrays.copyOf(entries, 2 * size);
          hashes = Arrays.copyOf(hashes, 2 * size);
        }
        code = size++;
        entries[code] = value;
        hashes[code] = hash;
        entryBytes += value.length;
        table[slot] = code + 1;
        if (2 * size > table.length) {
          table = rehash(hashes, size, 2 * table.length);
        }
      }
      codes[r] = code;
      previous = code;
    }
    return new StringDictionary(codes, entries, size, entryBytes);
  }

  long[] codes() {
    return codes;
  }

  int size() {
    return size;
  }

  /** Bytes of the dictionary: its offsets (size + 1 of them) and its values. */
  long bytes() {
    return 4L * (size + 1) + entryBytes;
  }

  /** The dictionary's offsets, {@code size + 1} of them. */
  int[] offsets() {
    int[] offsets = new int[size + 1];
    for (int i = 0; i < size; i++) {
      offsets[i + 1] = offsets[i] + entries[i].length;
    }
    return offsets;
  }

  /** The dictionary's values, concatenated. */
  byte[] data() {
    if (entryBytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a dictionary of " + entryBytes + " bytes");
    }
    byte[] data = new byte[(int) entryBytes];
    int at = 0;
    for (int i = 0; i < size; i++) {
      System.arraycopy(entries[i], 0, data, at, entries[i].length);
      at += entries[i].length;
    }
    return data;
  }

  private static int[] rehash(int[] hashes, int size, int capacity) {
    int[] table = new int[capacity];
    for (int code = 0; code < size; code++) {
      int slot = hashes[code] & (capacity - 1);
      while (table[slot] != 0) {
        slot = (slot + 1) & (capacity - 1);
      }
      table[slot] = code + 1;
    }
    return table;
  }

  private static int mix(int hash) {
    int h = hash * 0x9E3779B9;
    return h ^ (h >>> 16);
  }
}
