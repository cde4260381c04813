package dev.tessera.gpu.codegen;

import static dev.tessera.gpu.codegen.TestPtx.hits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Comparison;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * INT comparisons and multiplies in 32-bit arithmetic where both operands are sign-extended
 * 32-bit values (PtxBuilder.signExtend): columns of 32-lane types, constants that fit in 32 bits.
 * A LONG column or a constant beyond 32 bits keeps the 64-bit form, and the kernel's key says
 * which of its constants fit, so that a kernel is never reused for a constant it reads as 32
 * bits but does not fit. No GPU: the CUDA suites run these kernels (SSB's filters are this
 * shape).
 */
class NarrowIntegerArithmeticTest {
  private static final String COMPARE_32 = "setp\\.lt\\.s32 %p\\d+, %r\\d+, %r\\d+;";
  private static final String COMPARE_64 = "setp\\.lt\\.s64 %p\\d+, %rd\\d+, %rd\\d+;";
  private static final String MULTIPLY_32 = "mul\\.wide\\.s32 %rd\\d+, %r\\d+, %r\\d+;";
  private static final String MULTIPLY_64 = "mul\\.lo\\.s64 %rd\\d+, %rd\\d+, %rd\\d+;";

  /** WHERE column 0 < limit, SELECT column 0 * column 1 (wrapping to the type's width). */
  private static Program program(ColumnType type, long limit) {
    ProgramBuilder b = new ProgramBuilder(List.of(type, type), false);
    int x = b.loadColumn(0);
    int keep = b.emitNew(Opcode.CMP_INT, x, b.loadConstant(limit), Comparison.LT.code());
    int product = b.emitNew(Opcode.MUL_INT, x, b.loadColumn(1),
        type.id().width() * Byte.SIZE);
    return b.build(keep, List.of(new Program.Output(product, type)));
  }

  private static List<InputSpec> inputs(Program program) {
    return program.inputTypes().stream().map(t -> new InputSpec(t, Encoding.PLAIN, false))
        .toList();
  }

  private static String kernel(ColumnType type, long limit) throws CodegenUnsupportedException {
    Program program = program(type, limit);
    return FilterProjectGenerator.generate(program, inputs(program)).ptx();
  }

  /**
   * The kernel emits the program once an item (a thread's rows); the tile's own code has compares
   * and multiplies too, so the tests count what changes between two kernels.
   */
  @Test
  void aComparisonOfAnIntColumnWithAConstantThatFitsRunsIn32Bits() throws Exception {
    String narrow = kernel(ColumnType.INT, 25);
    String wide = kernel(ColumnType.INT, 1L << 40);
    int items = hits(wide, COMPARE_64) - hits(narrow, COMPARE_64);
    assertTrue(items > 0, "the constant beyond 32 bits compared in 64 bits, once an item");
    assertEquals(items, hits(narrow, COMPARE_32) - hits(wide, COMPARE_32));
  }

  @Test
  void aProductOfIntColumnsRunsIn32BitsAndOfLongColumnsIn64() throws Exception {
    String ints = kernel(ColumnType.INT, 25);
    String longs = kernel(ColumnType.LONG, 25);
    int items = hits(longs, MULTIPLY_64) - hits(ints, MULTIPLY_64);
    assertTrue(items > 0, "the LONG product in 64 bits, once an item");
    assertEquals(items, hits(ints, MULTIPLY_32) - hits(longs, MULTIPLY_32));
    assertEquals(hits(longs, COMPARE_32), hits(kernel(ColumnType.LONG, 1L << 40), COMPARE_32),
        "a LONG column is compared in 64 bits whatever the constant");
  }

  @Test
  void theKeySaysWhichConstantsFitIn32Bits() {
    String small = key(ColumnType.INT, 25);
    assertEquals(small, key(ColumnType.INT, Integer.MIN_VALUE), "both fit: one kernel");
    assertNotEquals(small, key(ColumnType.INT, 1L << 40));
    assertNotEquals(small, key(ColumnType.INT, Integer.MAX_VALUE + 1L));
  }

  private static String key(ColumnType type, long limit) {
    Program program = program(type, limit);
    return FilterProjectGenerator.programKey(program, inputs(program));
  }
}
