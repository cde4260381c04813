package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.GpuForLayout;

/**
 * LOAD_COLUMN in PTX for one row, as program.cuh's LoadColumn reads each layout: the validity
 * bit when the column has a bitmap, then the value by type (sign-extended integers, a float's
 * bits zero-extended, a string's address and length), GPU-FOR decoded inline (gpufor.cuh
 * ForValue: the block's reference and bit-width word, then the one to three words holding the
 * value), GPU-DFOR from the tile's values the prelude decoded, and dictionary codes resolved to
 * their string.
 */
final class ColumnLoads {
  private ColumnLoads() {}

  /**
   * @param data the column's data (or dictionary bytes) address, global
   * @param validity the validity bitmap's address, or null when the column has none
   * @param offsets a string column's (or dictionary's) offsets, else null
   * @param words an encoded column's words, else null
   * @param blockStarts an encoded column's block starts, else null
   * @param dfor a GPU-DFOR column's values for the thread's items (the prelude's), else null
   * @param miniblock a GPU-FOR column's miniblock that holds the row, {@code later} rows after
   *     the miniblock's row (a run's: {@link ProgramEmitter#beginRun}; an item's own, its
   *     header handed over by its warp: {@link TileForHeaders}), else null: the row's own header
   *     is read
   */
  static Val load(PtxBuilder b, InputSpec spec, String data, String validity, String offsets,
      String words, String blockStarts, String[] dfor, ForMiniblock miniblock, int later,
      RowEmitter.Item item, boolean codeOnly) {
    String row = item.row();
    String valid = validity == null ? null : validBit(b, validity, row);
    switch (spec.encoding()) {
      case PLAIN -> {
        if (spec.type().isString()) {
          return stringAt(b, data, offsets, row, valid);
        }
        return new Val(plainValue(b, spec.type(), data, row), valid, null, null);
      }
      case FOR -> {
        String value = miniblock == null
            ? forValue(b, words, blockStarts, row, spec.referenceWords())
            : forValue(b, miniblock, later, spec.referenceWords());
        return decoded(b, spec, data, offsets, value, valid, codeOnly);
      }
      default -> {
        return decoded(b, spec, data, offsets, dfor[item.index()], valid, codeOnly);
      }
    }
  }

  /** program.cuh IsNullAt, negated: bit row % 8 of byte row / 8. */
  private static String validBit(PtxBuilder b, String validity, String row) {
    return validBit(b, validity, row, null);
  }

  /**
   * The validity bit of {@code row} in the bitmap at generic address {@code validity}, or true
   * when that address is 0 (a column without a bitmap: known only at run time). Also a join
   * table's probe filter's bit (ProgramEmitter.probeFilter), laid out alike.
   */
  static String validBitIfPresent(PtxBuilder b, String validity, String row) {
    String present = b.pred();
    b.op("setp.ne.u64 %s, %s, 0", present, validity);
    return validBit(b, validity, row, present);
  }

  /** Bit {@code row} (.b64) of the bitmap at generic address {@code bitmap}, read always. */
  static String bitAt(PtxBuilder b, String bitmap, String row) {
    return validBit(b, bitmap, row, null);
  }

  /** The bit, read only where {@code present} holds (all ones otherwise); null: always read. */
  private static String validBit(PtxBuilder b, String validity, String row, String present) {
    String address = bitmapByte(b, validity, row);
    String bits = b.b32();
    if (present == null) {
      b.op("ld.global.nc.u8 %s, [%s]", bits, address);
    } else {
      b.op("mov.b32 %s, 255", bits);
      b.op("@%s ld.global.nc.u8 %s, [%s]", present, bits, address);
    }
    return bitOfByte(b, bits, row);
  }

  /** The address (.b64) of the byte of the bitmap at {@code bitmap} that holds bit {@code row}. */
  static String bitmapByte(PtxBuilder b, String bitmap, String row) {
    String byteIndex = b.b64();
    b.op("shr.s64 %s, %s, 3", byteIndex, row);
    String address = b.b64();
    b.op("add.s64 %s, %s, %s", address, bitmap, byteIndex);
    return address;
  }

  /** Bit row % 8 of {@code bits} (.b32, the bitmap's byte row / 8), as a new .pred. */
  static String bitOfByte(PtxBuilder b, String bits, String row) {
    String shift = b.b32();
    b.op("cvt.u32.u64 %s, %s", shift, row);
    b.op("and.b32 %s, %s, 7", shift, shift);
    String bit = b.b32();
    b.op("shr.u32 %s, %s, %s", bit, bits, shift);
    b.op("and.b32 %s, %s, 1", bit, bit);
    String valid = b.pred();
    b.op("setp.ne.u32 %s, %s, 0", valid, bit);
    return valid;
  }

  /** A plain fixed-width value of {@code type} at {@code row}, in its register form. */
  static String plainValue(PtxBuilder b, dev.tessera.gpu.column.ColumnType type, String data,
      String row) {
    int width = type.id().width();
    String address = b.b64();
    b.op("mad.lo.s64 %s, %s, %d, %s", address, row, width, data);
    String stored;
    switch (type.id()) {
      case BOOLEAN, BYTE, SHORT, INT, DATE -> {
        stored = b.b32();
        b.op("ld.global.nc.s%d %s, [%s]", width * 8, stored, address);
      }
      case FLOAT -> {
        stored = b.b32();
        b.op("ld.global.nc.u32 %s, [%s]", stored, address);
      }
      default -> {
        stored = b.b64();
        b.op("ld.global.nc.u64 %s, [%s]", stored, address);
      }
    }
    return widened(b, type, stored);
  }

  /**
   * A plain fixed-width value as LOAD_COLUMN holds it (.b64), from {@code stored}, the value as
   * loaded (.b32 up to 4 bytes, read signed; .b64 for 8): sign-extended, a FLOAT's bits
   * zero-extended, 8 bytes as they are. {@link #plainValue}'s, and LookaheadColumns' for the
   * words it loaded ahead.
   */
  static String widened(PtxBuilder b, dev.tessera.gpu.column.ColumnType type, String stored) {
    return switch (type.id()) {
      case BOOLEAN, BYTE, SHORT, INT, DATE -> b.signExtend(stored);
      case FLOAT -> {
        String value = b.b64();
        b.op("cvt.u64.u32 %s, %s", value, stored); // the bits, zero-extended
        yield value;
      }
      default -> stored;
    };
  }

  /** A string at {@code index} of the offsets: its address in {@code data} and its length. */
  static Val stringAt(PtxBuilder b, String data, String offsets, String index,
      String valid) {
    String at = b.b64();
    b.op("mad.lo.s64 %s, %s, 4, %s", at, index, offsets);
    String start = b.b32();
    b.op("ld.global.nc.s32 %s, [%s]", start, at);
    String end = b.b32();
    b.op("ld.global.nc.s32 %s, [%s+4]", end, at);
    String start64 = b.b64();
    b.op("cvt.s64.s32 %s, %s", start64, start);
    String address = b.b64();
    b.op("add.s64 %s, %s, %s", address, data, start64);
    String length = b.b32();
    b.op("sub.s32 %s, %s, %s", length, end, start);
    return new Val(address, valid, null, length);
  }

  /**
   * program.cuh SetDecoded: a dictionary code becomes its string (the code kept beside it, {@link
   * Val#code}); other values stay. With {@code codeOnly} (ProgramEmitter.leaveCoded) the code
   * stays undecoded: the value and length are 0, for a reader that decodes the code itself.
   */
  private static Val decoded(PtxBuilder b, InputSpec spec, String data, String offsets,
      String value, String valid, boolean codeOnly) {
    if (spec.dictionary() && codeOnly) {
      return new Val("0", valid, null, "0", value);
    }
    if (spec.dictionary()) {
      Val string = stringAt(b, data, offsets, value, valid);
      return new Val(string.value(), string.valid(), string.error(), string.length(), value);
    }
    return new Val(value, valid, null, null);
  }

  /**
   * gpufor.cuh ReadSigned: a lanes-wide signed value stored in {@code referenceWords} words at
   * {@code address}, sign-extended. Words are 4-byte aligned only, so a 64-bit one is read as two
   * halves.
   */
  static String readSigned(PtxBuilder b, String address, int referenceWords) {
    String value = b.b64();
    if (referenceWords == 2) {
      String low = b.b32();
      String high = b.b32();
      b.op("ld.global.nc.u32 %s, [%s]", low, address);
      b.op("ld.global.nc.u32 %s, [%s+4]", high, address);
      b.op("mov.b64 %s, {%s, %s}", value, low, high);
    } else {
      String low = b.b32();
      b.op("ld.global.nc.s32 %s, [%s]", low, address);
      b.op("cvt.s64.s32 %s, %s", value, low);
    }
    return value;
  }

  /**
   * What {@link #forValue} reads of a GPU-FOR column for one row and shares with the rows after
   * it in the same miniblock: the block's address and reference, the miniblock's first packed
   * word (in words after the packed data's start) and bit-width, and the row's first bit in the
   * miniblock (.b32 registers but the .b64 address and reference), and the mask of a value's
   * bits, {@code (1 << width) - 1} (.b32 for 32-lane values, else .b64): computed once for the
   * rows that share the miniblock, since their items lie in blocks of their own that the
   * compiler does not share it across.
   */
  record ForMiniblock(String blockAddress, String reference, String offset, String width,
      String firstBit, String mask) {}

  /** gpufor.cuh ForValue then Narrow: the value of {@code row}, sign-extended from its lanes. */
  static String forValue(PtxBuilder b, String words, String blockStarts, String row,
      int referenceWords) {
    return forValue(b, forMiniblock(b, words, blockStarts, row, referenceWords), 0,
        referenceWords);
  }

  /** The {@link ForMiniblock} of {@code row}, its block's header read. */
  static ForMiniblock forMiniblock(PtxBuilder b, String words, String blockStarts, String row,
      int referenceWords) {
    // A batch's rows are int32, so the row's block and place in it are 32-bit arithmetic.
    String row32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", row32, row);
    String block = b.b32();
    b.op("shr.u32 %s, %s, %d", block, row32, Integer.numberOfTrailingZeros(
        GpuForLayout.BLOCK_VALUES));
    String startOffset = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", startOffset, block);
    String startAddress = b.b64();
    b.op("add.s64 %s, %s, %s", startAddress, blockStarts, startOffset);
    String start = b.b32();
    b.op("ld.global.nc.s32 %s, [%s]", start, startAddress);
    String blockAddress = blockAddress(b, words, start);
    String reference = readSigned(b, blockAddress, referenceWords);
    String widths = b.b32();
    b.op("ld.global.nc.u32 %s, [%s+%d]", widths, blockAddress, 4 * referenceWords);
    return forMiniblock(b, blockAddress, reference, widths, row32, referenceWords);
  }

  /** The address of the block whose first word is word {@code start} (.b32) of {@code words}. */
  static String blockAddress(PtxBuilder b, String words, String start) {
    String blockOffset = b.b64();
    b.op("mul.wide.s32 %s, %s, 4", blockOffset, start);
    String blockAddress = b.b64();
    b.op("add.s64 %s, %s, %s", blockAddress, words, blockOffset);
    return blockAddress;
  }

  /**
   * The {@link ForMiniblock} of {@code row32} (.b32) in the block at {@code blockAddress}, whose
   * header is {@code reference} (.b64, sign-extended) and {@code widths} (its miniblocks'
   * bit-widths, a byte each).
   */
  static ForMiniblock forMiniblock(PtxBuilder b, String blockAddress, String reference,
      String widths, String row32, int referenceWords) {
    String inBlock = b.b32();
    b.op("and.b32 %s, %s, %d", inBlock, row32, GpuForLayout.BLOCK_VALUES - 1);
    // 8 * the row's miniblock: (inBlock / 32) * 8.
    String byteShift = b.b32();
    b.op("shr.u32 %s, %s, %d", byteShift, inBlock,
        Integer.numberOfTrailingZeros(GpuForLayout.MINIBLOCK_VALUES) - 3);
    b.op("and.b32 %s, %s, %d", byteShift, byteShift, 8 * (GpuForLayout.MINIBLOCKS - 1));
    // Algorithm 7 in one multiply: byte m of widths * 0x01010100 is the sum of the widths of
    // miniblocks 0..m-1 (at most 3 * 64, so no byte carries into the next).
    String offsets = b.b32();
    b.op("mul.lo.u32 %s, %s, %d", offsets, widths, 0x01010100);
    String offset = b.b32();
    b.op("shr.u32 %s, %s, %s", offset, offsets, byteShift);
    b.op("and.b32 %s, %s, 255", offset, offset);
    String width = b.b32();
    b.op("shr.u32 %s, %s, %s", width, widths, byteShift);
    b.op("and.b32 %s, %s, 255", width, width);
    // The row's first bit in its miniblock: (row % 32) * width.
    String startBit = b.b32();
    b.op("and.b32 %s, %s, %d", startBit, inBlock, GpuForLayout.MINIBLOCK_VALUES - 1);
    b.op("mul.lo.u32 %s, %s, %s", startBit, startBit, width);
    String mask;
    if (referenceWords == 1) {
      // A shift by 32 gives 0 in PTX, so width 32 keeps every bit.
      mask = b.b32();
      b.op("shl.b32 %s, 1, %s", mask, width);
      b.op("sub.s32 %s, %s, 1", mask, mask);
    } else {
      // PTX clamps a shift by 64 to give 0, so width 64 keeps every bit.
      mask = b.b64();
      b.op("shl.b64 %s, 1, %s", mask, width);
      b.op("sub.s64 %s, %s, 1", mask, mask);
    }
    return new ForMiniblock(blockAddress, reference, offset, width, startBit, mask);
  }

  /**
   * The value {@code later} rows after the first of {@code miniblock} (which holds that row
   * too), sign-extended from its lanes: ExtractBits(packed, (row % 32) * width, width) plus the
   * reference, packed = block + reference + widths word.
   */
  static String forValue(PtxBuilder b, ForMiniblock miniblock, int later, int referenceWords) {
    String blockAddress = miniblock.blockAddress();
    String reference = miniblock.reference();
    String offset = miniblock.offset();
    String width = miniblock.width();
    String startBit = miniblock.firstBit();
    if (later > 0) {
      startBit = b.b32();
      b.op("mad.lo.u32 %s, %s, %d, %s", startBit, width, later, miniblock.firstBit());
    }
    String word = b.b32();
    b.op("shr.u32 %s, %s, 5", word, startBit);
    b.op("add.s32 %s, %s, %s", word, word, offset);
    String wordOffset = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", wordOffset, word);
    String wordAddress = b.b64();
    b.op("add.s64 %s, %s, %s", wordAddress, blockAddress, wordOffset);
    int packed = 4 * (referenceWords + 1); // the packed words' first byte in the block
    String shift = b.b32();
    b.op("and.b32 %s, %s, 31", shift, startBit);
    // The two words the bits may lie in, read whatever the width: the device copy's words are
    // followed by GpuForLayout.TRAILING_WORDS zero words, and the mask drops the bits past the
    // value (every bit when the width is 0).
    String first = b.b32();
    b.op("ld.global.nc.u32 %s, [%s+%d]", first, wordAddress, packed);
    String second = b.b32();
    b.op("ld.global.nc.u32 %s, [%s+%d]", second, wordAddress, packed + 4);
    if (referenceWords == 1) {
      // 32-lane values in 32-bit arithmetic: the funnel shift of the two words, the low width
      // bits, the reference's low word added modulo 2^32, then Narrow's sign extension.
      String bits = b.b32();
      b.op("shf.r.wrap.b32 %s, %s, %s, %s", bits, first, second, shift);
      b.op("and.b32 %s, %s, %s", bits, bits, miniblock.mask());
      String low = b.b32();
      b.op("cvt.u32.u64 %s, %s", low, reference);
      b.op("add.s32 %s, %s, %s", low, low, bits);
      return b.signExtend(low);
    }
    String window = b.b64();
    b.op("mov.b64 %s, {%s, %s}", window, first, second);
    String bits = b.b64();
    b.op("shr.u64 %s, %s, %s", bits, window, shift);
    // 64-lane values: a value may reach into a third word (end > 64 implies shift > 0), read
    // only then: a miniblock of width 0 at the array's end has no third word.
    String end = b.b32();
    b.op("add.s32 %s, %s, %s", end, shift, width);
    String third = b.b32();
    b.op("mov.b32 %s, 0", third);
    String three = b.pred();
    b.op("setp.gt.u32 %s, %s, 64", three, end);
    b.op("@%s ld.global.nc.u32 %s, [%s+%d]", three, third, wordAddress, packed + 8);
    String third64 = b.b64();
    b.op("cvt.u64.u32 %s, %s", third64, third);
    String back = b.b32();
    b.op("sub.s32 %s, 64, %s", back, shift);
    b.op("shl.b64 %s, %s, %s", third64, third64, back);
    b.op("or.b64 %s, %s, %s", bits, bits, third64);
    b.op("and.b64 %s, %s, %s", bits, bits, miniblock.mask());
    String value = b.b64();
    b.op("add.s64 %s, %s, %s", value, reference, bits);
    return value;
  }
}
