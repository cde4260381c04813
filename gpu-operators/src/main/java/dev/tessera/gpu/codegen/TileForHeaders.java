package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The GPU-FOR block headers of a tile's items, read once a tile by a few lanes of each warp and
 * kept in the warp's shared memory for its items (part of AggregateUpdateGenerator's loop of one
 * copy of the item's code). Where a block's threads are {@link GpuForLayout#BLOCK_VALUES} and a
 * thread's items a block's threads apart, a tile's item k lies in the tile's GPU-FOR block k, the
 * same for the block's every thread. Read by the item, a value waited for three loads one after
 * the other (the block's start, its reference and bit-widths, then the value's words), and the
 * probe that follows for a fourth: SSB's grouped kernels waited on that chain (long scoreboard
 * 63-67% of their stall samples; H200, ncu). Here lane k of each warp reads block k's header of
 * every column at the tile's start, all in flight together, and an item takes its block's from
 * shared memory: its value waits only for its words. SSB SF10, cached, on an H200 (ncu, each
 * query's fused kernel over its 32 launches, against the kernels before): Q2.1 1,997 to 1,828 µs
 * (-8.4%: its first part, the part's key and its probe, is where 24 rows in 25 end), Q3.1 +0.6%
 * (64 to 72 registers: 7 blocks a multiprocessor instead of 8), Q4.1 the same. Handed over by
 * shuffles from the lanes' registers instead, the same within 1.5%; from shared memory an item
 * may take them where only some of its warp's lanes run.
 *
 * <p>A warp's headers: per item, per column, 16 bytes (one vector load): the block's first word
 * in the packed words, its reference's one or two words, its miniblocks' bit-widths (a byte
 * each).
 */
final class TileForHeaders {
  private static final int HEADER_BYTES = 16;

  private final PtxBuilder b;
  private final ProgramEmitter body;
  private final int items;
  private final String symbol;
  private final int warps;
  /** Per column, in order, its reference's words. */
  private final Map<Integer, Integer> columns = new LinkedHashMap<>();
  /** The warp's headers' shared address (.b32), set by {@link #begin}. */
  private String warpHeaders;
  /** The tile's first GPU-FOR block (.b32), set by {@link #load}. */
  private String tileBlock;

  /**
   * @param columns those of {@link #columns}, not empty
   * @param items a thread's items in a tile, up to a warp's 32 lanes
   * @param symbol the headers' shared array
   * @param blockThreads the block's threads (fixed at generation: the array's size)
   */
  TileForHeaders(PtxBuilder b, ProgramEmitter body, List<InputSpec> inputs,
      SortedSet<Integer> columns, int items, String symbol, int blockThreads) {
    if (items > TilePrimitives.WARP_THREADS) {
      throw new IllegalArgumentException("a tile's items are read by a warp's lanes, one each:"
          + " at most 32, not " + items);
    }
    this.b = b;
    this.body = body;
    this.items = items;
    this.symbol = symbol;
    this.warps = blockThreads / TilePrimitives.WARP_THREADS;
    for (int c : columns) {
      this.columns.put(c, inputs.get(c).referenceWords());
    }
  }

  /** The GPU-FOR columns of {@code loaded} (columns an item's code loads). */
  static SortedSet<Integer> columns(SortedSet<Integer> loaded, List<InputSpec> inputs) {
    SortedSet<Integer> encoded = new TreeSet<>();
    for (int c : loaded) {
      if (inputs.get(c).encoding() == Encoding.FOR) {
        encoded.add(c);
      }
    }
    return encoded;
  }

  /**
   * At the kernel's start, {@code thread} (.b32) its thread: the warp's headers' address, held
   * through the items with the tile's block. (Computed again where an item takes its header,
   * SSB Q2.1's kernel took 56 registers instead of 60, and 5% more time; Q3.1's 3% more; H200,
   * ncu.)
   */
  void begin(String thread) {
    int warpBytes = items * columns.size() * HEADER_BYTES;
    b.declare(".shared .align 16 .b8 " + symbol + "[" + warps * warpBytes + "]");
    warpHeaders = b.b32();
    b.op("shr.u32 %s, %s, 5", warpHeaders, thread);
    String base = b.b32();
    b.op("mov.u32 %s, %s", base, symbol);
    b.op("mad.lo.u32 %s, %s, %d, %s", warpHeaders, warpHeaders, warpBytes, base);
    tileBlock = b.b32();
  }

  /**
   * At the tile's start, row {@code tileStart} (.b32, a multiple of the block's values) of the
   * batch's {@code rows32} (.b32), every lane of the warp: the tile's blocks' headers of every
   * column into the warp's shared memory. A block past the batch's last is read as the last (a
   * row past the batch reads the last row's); a tile past the batch reads nothing.
   */
  void load(String tileStart, String rows32) {
    int blockShift = Integer.numberOfTrailingZeros(GpuForLayout.BLOCK_VALUES);
    b.comment("the tile's GPU-FOR headers (TileForHeaders)");
    b.op("shr.u32 %s, %s, %d", tileBlock, tileStart, blockShift);
    String lane = b.b32();
    b.op("mov.u32 %s, %%laneid", lane);
    String block = b.b32();
    b.op("add.u32 %s, %s, %s", block, lane, tileBlock);
    String lastBlock = b.b32();
    b.op("add.u32 %s, %s, -1", lastBlock, rows32);
    b.op("shr.u32 %s, %s, %d", lastBlock, lastBlock, blockShift);
    b.op("min.u32 %s, %s, %s", block, block, lastBlock);
    String reads = b.pred();
    b.op("setp.lt.u32 %s, %s, %s", reads, tileStart, rows32);
    String reader = b.pred();
    b.op("setp.lt.u32 %s, %s, %d", reader, lane, items);
    b.op("and.pred %s, %s, %s", reads, reads, reader);
    String startOffset = b.b64();
    b.op("mul.wide.u32 %s, %s, 4", startOffset, block);
    Map<Integer, String> starts = new LinkedHashMap<>();
    for (int c : columns.keySet()) {
      String startAddress = b.b64();
      b.op("add.s64 %s, %s, %s", startAddress, body.columnBlockStartsHere(c), startOffset);
      String start = b.b32();
      // Written where the load is off too: the store below reads it either way, and a register
      // some path reads unwritten is kept live through every loop of the kernel.
      b.op("mov.u32 %s, 0", start);
      b.op("@%s ld.global.nc.s32 %s, [%s]", reads, start, startAddress);
      starts.put(c, start);
    }
    // The tile before's items have taken their headers.
    b.op("bar.warp.sync -1");
    String at = b.b32();
    b.op("mad.lo.u32 %s, %s, %d, %s", at, lane, columns.size() * HEADER_BYTES, warpHeaders);
    int j = 0;
    for (Map.Entry<Integer, Integer> column : columns.entrySet()) {
      String start = starts.get(column.getKey());
      String blockAddress = ColumnLoads.blockAddress(b, body.columnWordsHere(column.getKey()),
          start);
      String[] words = {start, start, start, start}; // the last one or two: padding
      for (int w = 0; w <= column.getValue(); w++) { // the reference's words, then the widths
        words[1 + w] = b.b32();
        b.op("mov.u32 %s, 0", words[1 + w]); // as the block start's
        b.op("@%s ld.global.nc.u32 %s, [%s+%d]", reads, words[1 + w], blockAddress, 4 * w);
      }
      b.op("@%s st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s}", reads, at, j * HEADER_BYTES,
          words[0], words[1], words[2], words[3]);
      j++;
    }
    b.op("bar.warp.sync -1");
  }

  /** Whether the tile's headers include column {@code c}'s. */
  boolean covers(int c) {
    return columns.containsKey(c);
  }

  /**
   * Column {@code c}'s miniblock ({@link #covers}) for the thread's item whose row is {@code row}
   * (.b64: one of the tile's {@link #load} read, or the batch's last row for a row past it), its
   * block's header from the warp's. Taken where the item loads the column, so that no register
   * holds it before.
   */
  ColumnLoads.ForMiniblock miniblock(int c, String row) {
    String row32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", row32, row);
    // The row's block in the tile: the headers the lane k read.
    String at = b.b32();
    b.op("shr.u32 %s, %s, %d", at, row32,
        Integer.numberOfTrailingZeros(GpuForLayout.BLOCK_VALUES));
    b.op("sub.u32 %s, %s, %s", at, at, tileBlock);
    b.op("mad.lo.u32 %s, %s, %d, %s", at, at, columns.size() * HEADER_BYTES, warpHeaders);
    String[] words = {b.b32(), b.b32(), b.b32(), b.b32()};
    b.op("ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d]", words[0], words[1], words[2], words[3],
        at, List.copyOf(columns.keySet()).indexOf(c) * HEADER_BYTES);
    int referenceWords = columns.get(c);
    String reference = b.b64();
    if (referenceWords == 2) {
      b.op("mov.b64 %s, {%s, %s}", reference, words[1], words[2]);
    } else {
      b.op("cvt.s64.s32 %s, %s", reference, words[1]);
    }
    String blockAddress = ColumnLoads.blockAddress(b, body.columnWordsHere(c), words[0]);
    return ColumnLoads.forMiniblock(b, blockAddress, reference, words[1 + referenceWords], row32,
        referenceWords);
  }
}
