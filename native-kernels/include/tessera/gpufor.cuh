// GPU-FOR and GPU-DFOR reads (Crystal thesis chapter 5). The layout is defined once, in Java:
// gpu-operators/.../codec/GpuForLayout.java (ProgramAbiTest checks the constants below against it).
//
// GPU-FOR is read one value at a time, wherever a program loads it (the thesis's Algorithm 6 with
// the miniblock offsets of Algorithm 7 computed in registers): the block's reference, its word of
// bit widths, and the one to three words holding the value. The 32 rows a warp loads together
// are one miniblock, so those reads are few and coalesced. GPU-DFOR needs the deltas of its whole
// set summed, so a tile (one set: kTileItems = 4 blocks) is decoded by the whole thread block at
// once with a block-wide scan (LoadDforTile), in registers, as the thesis's LoadDBitPack does.
#pragma once

namespace tessera {
namespace gpufor {

constexpr int kBlockValues = 128;
constexpr int kMiniblockValues = 32;
constexpr int kMiniblocks = kBlockValues / kMiniblockValues;
constexpr int kSetBlocks = 4;
constexpr int kBlockShift = 7;  // log2(kBlockValues)
static_assert((1 << kBlockShift) == kBlockValues, "kBlockShift");

// Encoding.java's ordinals (InputColumn.encoding).
constexpr int kPlain = 0;
constexpr int kFor = 1;
constexpr int kDfor = 2;

// Bits [start_bit, start_bit + width) of a little-endian word array, width 0..64. Reads only the
// words those bits lie in (the array may end right after them).
__device__ __forceinline__ unsigned long long ExtractBits(const unsigned int* words,
                                                          long long start_bit, int width) {
  if (width == 0) return 0;
  const unsigned int* w = words + (start_bit >> 5);
  const int shift = static_cast<int>(start_bit & 31);
  unsigned long long window = __ldg(w);
  if (shift + width > 32) window |= static_cast<unsigned long long>(__ldg(w + 1)) << 32;
  unsigned long long bits = window >> shift;
  // shift + width > 64 implies shift > 0, so the shift below is 1..63.
  if (shift + width > 64) bits |= static_cast<unsigned long long>(__ldg(w + 2)) << (64 - shift);
  return width == 64 ? bits : bits & ((1ull << width) - 1);
}

// A lanes-bit signed value stored in reference_words words (low word first).
__device__ __forceinline__ long long ReadSigned(const unsigned int* at, int reference_words) {
  if (reference_words == 2) {
    return static_cast<long long>(static_cast<unsigned long long>(__ldg(at)) |
                                  static_cast<unsigned long long>(__ldg(at + 1)) << 32);
  }
  return static_cast<int>(__ldg(at));
}

// Value `row` of GPU-FOR blocks (for GPU-DFOR: the delta), as reference + difference, modulo
// 2^64; the caller narrows a 32-lane value.
__device__ __forceinline__ unsigned long long ForValue(const unsigned int* words,
                                                       const int* block_starts, long long row,
                                                       int reference_words) {
  const unsigned int* block = words + __ldg(block_starts + (row >> kBlockShift));
  const unsigned long long reference =
      static_cast<unsigned long long>(ReadSigned(block, reference_words));
  const unsigned int widths = __ldg(block + reference_words);
  const int in_block = static_cast<int>(row & (kBlockValues - 1));
  const int miniblock = in_block / kMiniblockValues;
  // Byte m of `offsets` is the sum of the widths of miniblocks 0..m-1 (at most 3 x 64 < 256, so
  // no byte carries into the next): Algorithm 7's byte-wise prefix sum.
  const unsigned int offsets = (widths << 8) + (widths << 16) + (widths << 24);
  const int offset = (offsets >> (8 * miniblock)) & 255;
  const int width = (widths >> (8 * miniblock)) & 255;
  const unsigned int* packed = block + reference_words + 1 + offset;
  return reference + ExtractBits(packed, static_cast<long long>(in_block % kMiniblockValues) * width,
                                 width);
}

// A decoded value in the canonical form LoadColumn gives: 32-lane values sign-extended.
__device__ __forceinline__ long long Narrow(unsigned long long value, int reference_words) {
  return reference_words == 2 ? static_cast<long long>(value)
                              : static_cast<long long>(static_cast<int>(value));
}

}  // namespace gpufor
}  // namespace tessera
