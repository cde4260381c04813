package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.column.TypeId;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * A thread's next row's plain fixed-width column values, loaded while its current row runs (part
 * of AggregateUpdateGenerator's loop of one copy of the item's code). Loaded by the item that
 * reads them, a row's key waited for its load before anything else could run: with 100 groups
 * 17% of HashAggregateBench's stall samples were that wait, at 31% of DRAM's bandwidth (H200,
 * ncu). Here the loads of the thread's next row are issued at the start of an item, so the item
 * that reads them finds them there, a whole item later.
 *
 * <p>The words are loaded raw (a 4-byte value as it is stored) into registers that live from one
 * item to the next; an item takes a copy of them ({@link #take}) before the next loads overwrite
 * them, and its LOAD_COLUMNs turn the copy into values ({@link #value}), so no instruction waits
 * for a load before the item reads the column. A column that can be NULL has its validity
 * bitmap's byte loaded ahead with its value: loaded by the item, the byte and then the value were
 * the wait of HashAggregateBench's nullable-keys kernel (22% of its stall samples at one group;
 * with both ahead, 1 to 1,000 groups 5-8% faster; H200, ncu).
 *
 * <p>In a kernel that fills a multiprocessor, one GPU-FOR column too ({@link #columns(SortedSet,
 * List, boolean)}): its block start with the plain words, its block's header at the end of the
 * item before ({@link #loadHeaders}). HashAggregateBench's dictionary string keys 9-10% faster
 * at 1 to 1,000 groups (H200, ncu).
 */
final class LookaheadColumns {
  /**
   * One column's raw words: its value (.b64, or .b32 for a 4-byte type) and, where it can be
   * NULL, its validity bitmap's byte that holds the row's bit (.b32), else null. A GPU-FOR
   * column's ({@code header} not null): {@code word} is its block's start (.b32, in words), and
   * {@code header} that block's header.
   */
  record Raw(ColumnType type, String word, String validity, ForHeader header) {
    Raw(ColumnType type, String word, String validity) {
      this(type, word, validity, null);
    }
  }

  /**
   * A GPU-FOR block's header as loaded ahead: its reference's words (.b32; {@code high} null
   * for a reference of one word) and its miniblocks' bit-widths (.b32).
   */
  record ForHeader(String low, String high, String widths) {}

  private final PtxBuilder b;
  private final ProgramEmitter body;
  private final List<InputSpec> inputs;
  /** Per column read ahead, the registers the next row's words are loaded into. */
  private final Map<Integer, Raw> next = new LinkedHashMap<>();
  /** Whether the last {@link #load} loaded a row (.pred), for {@link #loadHeaders}. */
  private final String loaded;

  /** {@code columns}: those of {@link #columns(SortedSet, List)}, not empty. */
  LookaheadColumns(PtxBuilder b, ProgramEmitter body, List<InputSpec> inputs,
      SortedSet<Integer> columns) {
    this.b = b;
    this.body = body;
    this.inputs = inputs;
    this.loaded = b.pred();
    for (int c : columns) {
      InputSpec spec = inputs.get(c);
      if (spec.encoding() == Encoding.FOR) {
        next.put(c, new Raw(spec.type(), b.b32(), null, new ForHeader(b.b32(),
            spec.referenceWords() == 2 ? b.b32() : null, b.b32())));
        continue;
      }
      String word = wide(spec.type()) ? b.b64() : b.b32();
      next.put(c, new Raw(spec.type(), word,
          spec.nullable() ? b.b32() : null));
    }
  }

  /**
   * {@link #columns(SortedSet, List)} and, with {@code encoded}, the first GPU-FOR column too:
   * a GPU-FOR value's decode is three loads, each waiting for the one before (the block's start,
   * its header, the packed words); ahead, the start is loaded with the plain columns and the
   * header at the end of the item before ({@link #loadHeaders}), so the item waits for the
   * packed words alone. One column: with two dictionary string keys ahead, the in-jar compiler
   * gave the kernel 90 registers (64 with one).
   */
  static SortedSet<Integer> columns(SortedSet<Integer> loaded, List<InputSpec> inputs,
      boolean encoded) {
    SortedSet<Integer> ahead = columns(loaded, inputs);
    if (encoded) {
      for (int c : loaded) {
        if (inputs.get(c).encoding() == Encoding.FOR) {
          ahead.add(c);
          break;
        }
      }
    }
    return ahead;
  }

  /**
   * The columns of {@code loaded} (the plain columns the row's instructions load) whose values
   * are read ahead: fixed-width values of 4 or 8 bytes; of those that can be NULL, only one alone
   * (HashAggregateBench's kernel of nullable keys and values took 92 registers with both ahead,
   * where 64 hold it without).
   */
  static SortedSet<Integer> columns(SortedSet<Integer> loaded, List<InputSpec> inputs) {
    SortedSet<Integer> ahead = new TreeSet<>();
    for (int c : loaded) {
      InputSpec spec = inputs.get(c);
      if (spec.encoding() == Encoding.PLAIN && !spec.type().isString()
          && (wide(spec.type()) || narrow(spec.type()))) {
        ahead.add(c);
      }
    }
    if (ahead.stream().filter(c -> inputs.get(c).nullable()).count() > 1) {
      ahead.removeIf(c -> inputs.get(c).nullable());
    }
    return ahead;
  }

  /**
   * Loads row {@code row32} (.b32) of every column, and its validity byte, where {@code when}
   * (.pred) holds.
   */
  void load(String row32, String when) {
    String row = b.b64();
    b.op("cvt.u64.u32 %s, %s", row, row32);
    b.op("mov.pred %s, %s", loaded, when);
    for (Map.Entry<Integer, Raw> column : next.entrySet()) {
      Raw raw = column.getValue();
      if (raw.header() != null) {
        String block = b.b32();
        b.op("shr.u32 %s, %s, %d", block, row32,
            Integer.numberOfTrailingZeros(GpuForLayout.BLOCK_VALUES));
        String at = b.b64();
        b.op("mul.wide.u32 %s, %s, 4", at, block);
        b.op("add.s64 %s, %s, %s", at, at, body.columnBlockStarts(column.getKey()));
        b.op("@%s ld.global.nc.s32 %s, [%s]", when, raw.word(), at);
        continue;
      }
      String data = body.columnData(column.getKey());
      int width = raw.type().id().width();
      String address = b.b64();
      b.op("mad.lo.s64 %s, %s, %d, %s", address, row, width, data);
      b.op("@%s ld.global.nc.%s %s, [%s]", when, width == 8 ? "u64" : "u32", raw.word(),
          address);
      if (raw.validity() != null) {
        String at = ColumnLoads.bitmapByte(b, body.columnValidity(column.getKey()), row);
        b.op("@%s ld.global.nc.u8 %s, [%s]", when, raw.validity(), at);
      }
    }
  }

  /**
   * After {@link #load}, at the end of the item before the row's: each GPU-FOR column's block
   * header, from the block start that load asked for (which has had the item to arrive).
   */
  void loadHeaders() {
    for (Map.Entry<Integer, Raw> column : next.entrySet()) {
      Raw raw = column.getValue();
      ForHeader header = raw.header();
      if (header == null) {
        continue;
      }
      String block = ColumnLoads.blockAddress(b, body.columnWords(column.getKey()), raw.word());
      b.op("@%s ld.global.nc.u32 %s, [%s]", loaded, header.low(), block);
      int widthsAt = 4;
      if (header.high() != null) {
        b.op("@%s ld.global.nc.u32 %s, [%s+4]", loaded, header.high(), block);
        widthsAt = 8;
      }
      b.op("@%s ld.global.nc.u32 %s, [%s+%d]", loaded, header.widths(), block, widthsAt);
    }
  }

  /**
   * A copy of the words loaded last, for the item whose row they are: call before the next
   * {@link #load}, which overwrites them.
   */
  Map<Integer, Raw> take() {
    Map<Integer, Raw> copy = new LinkedHashMap<>();
    next.forEach((c, raw) -> {
      if (raw.header() != null) {
        ForHeader h = raw.header();
        String high = null;
        if (h.high() != null) {
          high = b.b32();
          b.op("mov.b32 %s, %s", high, h.high());
        }
        String start = b.b32();
        String low = b.b32();
        String widths = b.b32();
        b.op("mov.b32 %s, %s", start, raw.word());
        b.op("mov.b32 %s, %s", low, h.low());
        b.op("mov.b32 %s, %s", widths, h.widths());
        copy.put(c, new Raw(raw.type(), start, null, new ForHeader(low, high, widths)));
        return;
      }
      String word = wide(raw.type()) ? b.b64() : b.b32();
      b.op("mov.b%d %s, %s", wide(raw.type()) ? 64 : 32, word, raw.word());
      String validity = null;
      if (raw.validity() != null) {
        validity = b.b32();
        b.op("mov.b32 %s, %s", validity, raw.validity());
      }
      copy.put(c, new Raw(raw.type(), word, validity));
    });
    return copy;
  }

  /**
   * LOAD_COLUMN's value of {@code raw}, row {@code row} (.b64), as ColumnLoads reads the column:
   * the value, and where the column has a validity bitmap its bit, from the byte loaded ahead.
   */
  static Val value(PtxBuilder b, Raw raw, String row) {
    String value = ColumnLoads.widened(b, raw.type(), raw.word());
    if (raw.validity() == null) {
      return Val.of(value);
    }
    return new Val(value, ColumnLoads.bitOfByte(b, raw.validity(), row), null, null);
  }

  /**
   * The {@link ColumnLoads.ForMiniblock} of row {@code row} (.b64) of a GPU-FOR column whose
   * block start and header were loaded ahead ({@code raw}), its words at {@code words}.
   */
  static ColumnLoads.ForMiniblock miniblock(PtxBuilder b, Raw raw, String words, String row,
      int referenceWords) {
    ForHeader h = raw.header();
    String reference = b.b64();
    if (h.high() != null) {
      b.op("mov.b64 %s, {%s, %s}", reference, h.low(), h.high());
    } else {
      b.op("cvt.s64.s32 %s, %s", reference, h.low());
    }
    String row32 = b.b32();
    b.op("cvt.u32.u64 %s, %s", row32, row);
    return ColumnLoads.forMiniblock(b, ColumnLoads.blockAddress(b, words, raw.word()), reference,
        h.widths(), row32, referenceWords);
  }

  /** 8-byte values, which ColumnLoads.plainValue reads whole. */
  private static boolean wide(ColumnType type) {
    return type.id().width() == 8;
  }

  /** The 4-byte values ColumnLoads.plainValue reads: sign-extended, or a FLOAT's bits. */
  private static boolean narrow(ColumnType type) {
    return type.id() == TypeId.INT || type.id() == TypeId.DATE || type.id() == TypeId.FLOAT;
  }
}
