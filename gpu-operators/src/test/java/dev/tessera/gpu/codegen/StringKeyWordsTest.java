package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A generated aggregate kernel reads string keys a word at a time (GroupLookup.rowWord and the
 * 8-byte aligned key heap): the row's bytes for the hash, the compare and the copy into the heap
 * as aligned 64-bit words, the group's stored bytes one 64-bit load per word. No GPU: the CUDA
 * aggregate suites check the values (string keys of every length and alignment).
 */
class StringKeyWordsTest {
  private static String ptx(int stringKeys) throws CodegenUnsupportedException {
    List<ColumnType> types = new ArrayList<>();
    for (int k = 0; k < stringKeys; k++) {
      types.add(ColumnType.STRING);
    }
    types.add(ColumnType.LONG);
    AggregateSpec spec = new AggregateSpec(types, stringKeys,
        List.of(new AggregateFunction(Kind.SUM, stringKeys, ColumnType.LONG)), false);
    List<InputSpec> inputs = types.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, true)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(types, false), inputs, spec)
        .ptx();
  }

  @Test
  void stringKeysAreReadAWordAtATime() throws Exception {
    for (int keys = 1; keys <= 2; keys++) {
      String ptx = ptx(keys);
      assertFalse(ptx.contains("ld.u8"), "a byte load of a row's key bytes");
      // The only byte loads from the group table are its keys' null flags, one a key.
      assertEquals(keys, hits(ptx, "ld\\.global\\.cg\\.u8"), "byte loads of the group table");
      assertTrue(hits(ptx, "ld\\.global\\.cg\\.u64") >= 2 * keys, "word loads of stored keys");
      // The only byte stores are a new group's null flags, one a key; its bytes go as words.
      assertEquals(keys, hits(ptx, "st\\.global\\.u8"), "byte stores into the group table");
      assertTrue(hits(ptx, "st\\.global\\.u64") >= keys + 1, "word stores of the key bytes");
    }
  }
}
