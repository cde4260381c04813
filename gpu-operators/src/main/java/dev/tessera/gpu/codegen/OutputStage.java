package dev.tessera.gpu.codegen;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Program;
import java.util.List;

/**
 * A filter-project tile's output rows, gathered in shared memory at their place among the tile's
 * kept rows before the tile knows where its rows go in the output: phase B's loads and arithmetic
 * then run while the look-back waits for the tiles before this one, and the rows are copied out
 * afterwards, each warp writing consecutive output rows.
 *
 * <p>Every staged part of an output (a fixed-width value; a string's length and address; a row's
 * validity flag) is its own array of one entry a tile row, so that a warp's consecutive rows are
 * consecutive words.
 */
final class OutputStage {
  /**
   * The most shared memory a block's stage may take: at FilterProjectBench's 9 blocks of 128
   * threads a multiprocessor (its registers' limit), 9 of them and the blocks' other shared
   * memory fit the H100's and H200's 228 KiB.
   */
  static final int MAX_BLOCK_BYTES = 20 << 10;

  private final PtxBuilder b;
  private final int tileRows;
  private int arrays;
  private int bytes;

  OutputStage(PtxBuilder b, int tileRows) {
    this.b = b;
    this.tileRows = tileRows;
  }

  /**
   * The shared bytes a stage of {@code outputs} takes for tiles of {@code tileRows} rows, counting
   * a validity flag for every output (whether one is NULL shows only as the kernel is written).
   */
  static int blockBytes(List<Program.Output> outputs, int tileRows) {
    int rowBytes = 0;
    for (Program.Output o : outputs) {
      rowBytes += valueBytes(o.type()) + 1;
    }
    return rowBytes * tileRows;
  }

  /** Whether {@code outputs} are staged in tiles of {@code tileRows} rows. */
  static boolean fits(List<Program.Output> outputs, int tileRows) {
    return !outputs.isEmpty() && blockBytes(outputs, tileRows) <= MAX_BLOCK_BYTES;
  }

  private static int valueBytes(ColumnType type) {
    return type.isString() ? Integer.BYTES + Long.BYTES : type.id().width();
  }

  /** A new array of {@code width}-byte entries, one a tile row. */
  Part part(int width) {
    String name = "stage_" + arrays++;
    bytes += width * tileRows;
    if (bytes > MAX_BLOCK_BYTES) {
      throw new IllegalStateException("the output stage takes " + bytes + " bytes, more than "
          + MAX_BLOCK_BYTES + ": fits() was not asked");
    }
    b.declare(".shared .align 8 .b8 " + name + "[" + width * tileRows + "]");
    return new Part(name, width);
  }

  /** One staged array: {@code width}-byte entries at {@code name}. */
  final class Part {
    private final String name;
    private final int width;

    private Part(String name, int width) {
      this.name = name;
      this.width = width;
    }

    /**
     * Stores the low {@code width} bytes of {@code value} (.b64 where {@code wide}, else .b32) at
     * tile row {@code row} (.b32).
     */
    void store(String row, String value, boolean wide) {
      String address = address(row);
      if (wide && width < 8) {
        String low = b.b32();
        b.op("cvt.u32.u64 %s, %s", low, value);
        value = low;
      }
      b.op("st.shared.u%d [%s], %s", width * 8, address, value);
    }

    /**
     * The entry at tile row {@code row} (.b32): a .b64 register for 8-byte entries, else a .b32
     * one, zero-extended.
     */
    String load(String row) {
      String address = address(row);
      String value = width == 8 ? b.b64() : b.b32();
      b.op("ld.shared.u%d %s, [%s]", width * 8, value, address);
      return value;
    }

    int width() {
      return width;
    }

    private String address(String row) {
      String base = b.b32();
      b.op("mov.u32 %s, %s", base, name);
      String address = b.b32();
      b.op("mad.lo.u32 %s, %s, %d, %s", address, row, width, base);
      return address;
    }
  }
}
