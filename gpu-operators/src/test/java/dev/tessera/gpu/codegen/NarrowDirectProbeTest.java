package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A join table's direct map is probed in 32-bit arithmetic where its key has at most 4 bytes
 * (ProgramEmitter.DirectMap), in 64-bit where it has 8; a probe key not loaded as a 32-bit value
 * is checked to be one first. No GPU: what the kernels compute is
 * CudaGeneratedHashJoinDifferentialTest's (longsProbingAMapOfIntKeysFindOnlyTheirOwnValues among
 * them) and SsbQueriesSuite's (INT and DATE keys, LONG keys).
 */
class NarrowDirectProbeTest {
  private static final ColumnType LONG = ColumnType.LONG;
  private static final ColumnType INT = ColumnType.INT;
  /** Where a direct map's code ends: the walk's label, taken where the table has no map. */
  private static final Pattern WALK = Pattern.compile("\n\\$L_probes?_hashed_\\d+:");

  /**
   * Over (a LONG key, an INT key, v): inner joins with a table of each key, grouped by the INT
   * key, SUM(v); the INT key's table probed by column {@code narrowKeyColumn} (1: the INT key;
   * 0: the LONG one, a value that may lie outside 32 bits).
   */
  private static GeneratedKernel kernel(int narrowKeyColumn) throws CodegenUnsupportedException {
    ProgramBuilder b = new ProgramBuilder(List.of(LONG, INT, LONG), false);
    int wide = b.table(new JoinTableSchema(List.of(LONG), List.of(LONG)));
    int narrow = b.table(new JoinTableSchema(List.of(INT), List.of(INT)));
    int wideRow = b.emitNew(Opcode.PROBE, wide, b.constant(b.loadColumn(0)), 1);
    int narrowKey = b.loadColumn(1);
    int narrowRow = b.emitNew(Opcode.PROBE, narrow,
        b.constant(narrowKeyColumn == 1 ? narrowKey : b.loadColumn(narrowKeyColumn)), 1);
    int keep = b.emitNew(Opcode.AND, b.emitNew(Opcode.IS_NOT_NULL, wideRow, 0, 0),
        b.emitNew(Opcode.IS_NOT_NULL, narrowRow, 0, 0), 0);
    Program program = b.build(keep, List.of(new Program.Output(narrowKey, INT),
        new Program.Output(b.loadColumn(2), LONG)));
    AggregateSpec spec = new AggregateSpec(List.of(INT, LONG), 1,
        List.of(new AggregateFunction(Kind.SUM, 1, LONG)), false);
    List<InputSpec> inputs = List.of(LONG, INT, LONG).stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, false)).toList();
    return AggregateUpdateGenerator.generate(program, inputs, spec, KernelFeatures.OLDEST);
  }

  /** Each copy of join table {@code table}'s direct map code: from its probe's comment. */
  private static List<String> directCode(String ptx, int table) {
    List<String> copies = new ArrayList<>();
    Matcher probe = Pattern.compile("// probes? of join table " + table + "\\b").matcher(ptx);
    while (probe.find()) {
      Matcher walk = WALK.matcher(ptx);
      assertTrue(walk.find(probe.end()), "a walk follows the direct map");
      copies.add(ptx.substring(probe.end(), walk.start()));
    }
    return copies;
  }

  @Test
  void aMapOfAFourByteKeyIsProbedIn32Bits() throws Exception {
    GeneratedKernel kernel = kernel(1);
    String ptx = kernel.ptx();
    List<String> wide = directCode(ptx, 0);
    List<String> narrow = directCode(ptx, 1);
    assertFalse(wide.isEmpty(), "the LONG key's table is probed");
    assertFalse(narrow.isEmpty(), "the INT key's table is probed");
    for (String code : wide) {
      assertTrue(code.contains("sub.s64") && code.contains(".u64"), code);
      assertFalse(code.contains("sub.u32"), code);
    }
    for (String code : narrow) {
      assertTrue(code.contains("sub.u32") && code.contains("setp.lt.u32")
          && code.contains("mul.wide.u32"), code);
      assertFalse(code.contains("sub.s64") || code.contains("setp.lt.u64")
          || code.contains("setp.ge.u64"), code);
      assertFalse(code.contains("setp.eq.s64"), "a loaded INT needs no range check: " + code);
    }
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    assertTrue(report.clean(), report.toString());
  }

  @Test
  void aKeyThatMayLieOutside32BitsIsCheckedBeforeA32BitProbe() throws Exception {
    GeneratedKernel kernel = kernel(0);
    List<String> narrow = directCode(kernel.ptx(), 1);
    assertFalse(narrow.isEmpty(), "the INT key's table is probed");
    for (String code : narrow) {
      // The LONG's low word sign-extended again must give the LONG back, else no build row.
      assertTrue(code.contains("cvt.s64.s32") && code.contains("setp.eq.s64")
          && code.contains("setp.lt.u32"), code);
    }
    assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
    CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
    assertTrue(report.clean(), report.toString());
  }
}
