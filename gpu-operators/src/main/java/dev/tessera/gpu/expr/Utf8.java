package dev.tessera.gpu.expr;

import org.apache.arrow.memory.util.MemoryUtil;

/** UTF-8 byte-string operations over (address, length) pairs, as Spark's UTF8String does them. */
final class Utf8 {
  private Utf8() {}

  /** Unsigned byte-wise lexicographic order. */
  static int compare(long a, int aLength, long b, int bLength) {
    int n = Math.min(aLength, bLength);
    for (int i = 0; i < n; i++) {
      int x = MemoryUtil.getByte(a + i) & 0xff;
      int y = MemoryUtil.getByte(b + i) & 0xff;
      if (x != y) {
        return x < y ? -1 : 1;
      }
    }
    return Integer.compare(aLength, bLength);
  }

  static boolean startsWith(long s, int sLength, long p, int pLength) {
    return pLength <= sLength && equalBytes(s, p, pLength);
  }

  static boolean endsWith(long s, int sLength, long p, int pLength) {
    return pLength <= sLength && equalBytes(s + sLength - pLength, p, pLength);
  }

  static boolean contains(long s, int sLength, long p, int pLength) {
    for (int i = 0; i + pLength <= sLength; i++) {
      if (equalBytes(s + i, p, pLength)) {
        return true;
      }
    }
    return false;
  }

  /** Characters: bytes that do not continue a multi-byte sequence. */
  static int characterCount(long s, int sLength) {
    int count = 0;
    for (int i = 0; i < sLength; i++) {
      if ((MemoryUtil.getByte(s + i) & 0xC0) != 0x80) {
        count++;
      }
    }
    return count;
  }

  private static boolean equalBytes(long a, long b, int n) {
    for (int i = 0; i < n; i++) {
      if (MemoryUtil.getByte(a + i) != MemoryUtil.getByte(b + i)) {
        return false;
      }
    }
    return true;
  }
}
