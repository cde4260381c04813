// Hashing shared by the kernels that index keys: hash_aggregate.cu's group table and the join
// tables that hash_join.cu builds and program.cuh's PROBE reads. Build and probe must hash a key
// identically, so both go through these functions and nothing else.
#pragma once

namespace tessera {

// splitmix64's finaliser: every input bit affects every output bit.
__device__ __forceinline__ unsigned long long Mix(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// HashBytes' seed, to which a string's length is added.
constexpr unsigned long long kStringHashSeed = 0x452821e638d01377ull;

// The bytes of a string, 8 at a time into a word (addresses need not be aligned).
__device__ __forceinline__ unsigned long long HashBytes(const unsigned char* bytes, int length) {
  unsigned long long h = Mix(kStringHashSeed + static_cast<unsigned long long>(length));
  unsigned long long word = 0;
  for (int i = 0; i < length; ++i) {
    word |= static_cast<unsigned long long>(bytes[i]) << ((i & 7) * 8);
    if ((i & 7) == 7) {
      h = Mix(h ^ word);
      word = 0;
    }
  }
  return Mix(h ^ word);
}

// Folds key column k's value hash into a running hash of a key tuple.
__device__ __forceinline__ unsigned long long CombineKeyHash(unsigned long long h,
                                                             unsigned long long value_hash,
                                                             int k) {
  return Mix(h ^ Mix(value_hash + static_cast<unsigned long long>(k)));
}

constexpr unsigned long long kKeyTupleSeed = 0x243f6a8885a308d3ull;

// The probe filter's hash of a key tuple (program.cuh JoinTableView.filter), whose high bits
// index the filter: from 0, each key column's value hash added, then multiplied by this odd
// constant (2^64 / the golden ratio: the high bits of k * it spread keys in arithmetic
// progression evenly). One multiply a key, where the tuple's hash takes two rounds of Mix: a
// generated probe tests the filter for every row, and most probes of a filtered table end there.
constexpr unsigned long long kProbeFilterMultiplier = 0x9e3779b97f4a7c15ull;

// Folds key column k's value hash into a running probe filter hash (0 before the first key).
__device__ __forceinline__ unsigned long long CombineFilterHash(unsigned long long h,
                                                                unsigned long long value_hash) {
  return (h + value_hash) * kProbeFilterMultiplier;
}

}  // namespace tessera
