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
      int entries = CudaHashAggregate.localEntries(1, functions);
      assertTrue(entries == 0 || Integer.bitCount(entries) == 1, "a power of two: " + entries);
      assertTrue(CudaHashAggregate.localTableBytes(entries, functions) <= 16 << 10,
          functions + " functions");
      assertTrue(entries <= 256);
    }
    assertEquals(128, CudaHashAggregate.localEntries(1, 4)); // 84 bytes an entry
    assertEquals(10_752, CudaHashAggregate.localTableBytes(128, 4));
    assertEquals(1, CudaHashAggregate.localEntries(0, 13)); // a global aggregate: one group
    assertEquals(0, CudaHashAggregate.localEntries(2, 0)); // nothing to accumulate
    assertEquals(0, CudaHashAggregate.localTableBytes(0, 5));
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
