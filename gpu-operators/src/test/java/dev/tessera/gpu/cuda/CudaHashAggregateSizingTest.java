package dev.tessera.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
