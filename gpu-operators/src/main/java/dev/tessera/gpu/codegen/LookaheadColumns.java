package dev.tessera.gpu.codegen;

import dev.tessera.gpu.codec.Encoding;
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
 */
final class LookaheadColumns {
  /**
   * One column's raw words: its value (.b64, or .b32 for a 4-byte type) and, where it can be
   * NULL, its validity bitmap's byte that holds the row's bit (.b32), else null.
   */
  record Raw(ColumnType type, String word, String validity) {}

  private final PtxBuilder b;
  private final ProgramEmitter body;
  /** Per column read ahead, the registers the next row's words are loaded into. */
  private final Map<Integer, Raw> next = new LinkedHashMap<>();

  /** {@code columns}: those of {@link #columns(SortedSet, List)}, not empty. */
  LookaheadColumns(PtxBuilder b, ProgramEmitter body, List<InputSpec> inputs,
      SortedSet<Integer> columns) {
    this.b = b;
    this.body = body;
    for (int c : columns) {
      InputSpec spec = inputs.get(c);
      String word = wide(spec.type()) ? b.b64() : b.b32();
      next.put(c, new Raw(spec.type(), word,
          spec.nullable() ? b.b32() : null));
    }
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
    for (Map.Entry<Integer, Raw> column : next.entrySet()) {
      Raw raw = column.getValue();
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
   * A copy of the words loaded last, for the item whose row they are: call before the next
   * {@link #load}, which overwrites them.
   */
  Map<Integer, Raw> take() {
    Map<Integer, Raw> copy = new LinkedHashMap<>();
    next.forEach((c, raw) -> {
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

  /** 8-byte values, which ColumnLoads.plainValue reads whole. */
  private static boolean wide(ColumnType type) {
    return type.id().width() == 8;
  }

  /** The 4-byte values ColumnLoads.plainValue reads: sign-extended, or a FLOAT's bits. */
  private static boolean narrow(ColumnType type) {
    return type.id() == TypeId.INT || type.id() == TypeId.DATE || type.id() == TypeId.FLOAT;
  }
}
