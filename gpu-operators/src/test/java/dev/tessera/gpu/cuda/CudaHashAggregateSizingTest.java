package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The host-side sizing of the CUDA hash aggregation (no GPU needed). */
class CudaHashAggregateSizingTest {
  @Test
  void thePerBlockTableFitsItsSharedMemoryBudget() {
    for (int functions = 1; functions <= 64; functions++) {
      int entries = CudaHashAggregate.localEntries(1, functions, 0);
      assertTrue(entries == 0 || Integer.bitCount(entries) == 1, "a power of two: " + entries);
      assertTrue(CudaHashAggregate.localTableBytes(entries, functions) <= 16 << 10,
          functions + " functions");
      assertTrue(entries <= 256);
      // With each entry's key (8 bytes and a null word): 24 KiB in all.
      int keyed = CudaHashAggregate.localEntries(1, functions, 12);
      assertTrue(keyed == 0 || Integer.bitCount(keyed) == 1, "a power of two: " + keyed);
      assertTrue(CudaHashAggregate.localTableBytes(keyed, functions) + 12 * keyed <= 24 << 10,
          functions + " functions, keyed");
      assertTrue(keyed <= 256 && keyed >= entries);
    }
    assertEquals(128, CudaHashAggregate.localEntries(1, 4, 0)); // 84 bytes an entry
    assertEquals(256, CudaHashAggregate.localEntries(1, 4, 12)); // 96
    assertEquals(10_752, CudaHashAggregate.localTableBytes(128, 4));
    assertEquals(1, CudaHashAggregate.localEntries(0, 13, 0)); // a global aggregate: one group
    assertEquals(0, CudaHashAggregate.localEntries(2, 0, 0)); // nothing to accumulate
    assertEquals(0, CudaHashAggregate.localTableBytes(0, 5));
  }

  @Test
  void aTableOfAWholeMultiprocessorFitsItsBudget() {
    // An H100's or H200's 228 KiB, 85% of it, less the 1 KiB the system keeps for a block.
    int budget = 233_472 * 85 / 100 - 1024;
    assertEquals(2048, CudaHashAggregate.wholeMultiprocessorEntries(4, 12, budget));
    for (int functions = 1; functions <= 64; functions++) {
      int entries = CudaHashAggregate.wholeMultiprocessorEntries(functions, 12, budget);
      assertTrue(Integer.bitCount(entries) == 1 && entries <= 2048, "a power of two: " + entries);
      assertTrue(CudaHashAggregate.localTableBytes(entries, functions) + 12 * entries <= budget,
          functions + " functions");
      assertTrue(entries >= CudaHashAggregate.localEntries(1, functions, 12));
    }
    assertEquals(0, CudaHashAggregate.wholeMultiprocessorEntries(4, 12, 95)); // one is 96 bytes
    assertEquals(1, CudaHashAggregate.wholeMultiprocessorEntries(4, 12, 96));
    assertEquals(0, CudaHashAggregate.wholeMultiprocessorEntries(0, 12, budget));
  }

  @Test
  void stringConstantsBoundTheKeyHeap() {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.STRING), false);
    int s = b.loadColumn(0);
    int x = b.loadString("abc".getBytes(StandardCharsets.UTF_8));
    int y = b.loadString("grüße".getBytes(StandardCharsets.UTF_8)); // 7 bytes
    int c = b.emitNew(Opcode.COALESCE, s, x, 0);
    Program p = b.build(-1, List.of(new Program.Output(c, ColumnType.STRING),
        new Program.Output(y, ColumnType.STRING)));
    assertEquals(10, CudaHashAggregate.stringConstantBytes(p));
    assertEquals(7, CudaHashAggregate.longestStringConstant(p));
    Program none = ProgramBuilder.identity(List.of(ColumnType.STRING), false);
    assertEquals(0, CudaHashAggregate.stringConstantBytes(none));
    assertEquals(0, CudaHashAggregate.longestStringConstant(none));
  }
}
