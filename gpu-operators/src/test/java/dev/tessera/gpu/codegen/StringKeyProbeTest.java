package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.Opcode;
import dev.tessera.gpu.expr.Program;
import dev.tessera.gpu.expr.ProgramBuilder;
import dev.tessera.gpu.join.JoinTableSchema;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * PROBE of a join table with a string key, generated as program.cuh FindBuildRow walks: the key's
 * bytes hashed as the build hashed them (hash.cuh HashBytes, through StringWords, which the
 * grouped aggregates' string keys use too), each candidate build row's stored hash compared
 * before its keys, then its fixed-width keys at once, then the string's length and words. No
 * GPU: which rows the kernels find is CudaGeneratedHashJoinDifferentialTest's, on a GPU.
 */
class StringKeyProbeTest {
  /** hash.cuh kStringHashSeed, as a PTX immediate. */
  private static final String STRING_HASH_SEED = Long.toString(0x452821e638d01377L);

  /**
   * Over (an INT, a STRING, a LONG): the LONG of the rows whose (INT, STRING) has a build row,
   * and the table's payload.
   */
  private static Program program() {
    ProgramBuilder b = new ProgramBuilder(
        List.of(ColumnType.INT, ColumnType.STRING, ColumnType.LONG), false);
    int table = b.table(new JoinTableSchema(List.of(ColumnType.INT, ColumnType.STRING),
        List.of(ColumnType.LONG)));
    int first = b.constant(b.loadColumn(0));
    b.constant(b.loadColumn(1));
    int row = b.emitNew(Opcode.PROBE, table, first, 2);
    int keep = b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0);
    int payload = b.emitNew(Opcode.LOAD_BUILD, table, row, 0);
    return b.build(keep, List.of(new Program.Output(b.loadColumn(2), ColumnType.LONG),
        new Program.Output(payload, ColumnType.LONG)));
  }

  private static List<InputSpec> inputs(Encoding stringEncoding) {
    return List.of(new InputSpec(ColumnType.INT, Encoding.PLAIN, true),
        new InputSpec(ColumnType.STRING, stringEncoding, true), // encoded: dictionary codes
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false));
  }

  @Test
  void theWalkComparesTheStoredHashThenTheKeys() throws Exception {
    assertNull(FilterProjectGenerator.whyNotGenerated(program()));
    for (Encoding encoding : List.of(Encoding.PLAIN, Encoding.FOR)) {
      GeneratedKernel kernel = FilterProjectGenerator.generate(program(), inputs(encoding));
      String ptx = kernel.ptx();
      int probe = ptx.indexOf("// probe of join table 0");
      assertTrue(probe >= 0, "the table is probed");
      String walk = ptx.substring(probe);
      int seed = walk.indexOf(STRING_HASH_SEED);
      int storedHash = walk.indexOf(ProgramEmitter.CANDIDATE_HASH);
      int bytes = walk.indexOf(ProgramEmitter.STRING_KEY_COMPARE);
      assertTrue(seed >= 0, "the key's bytes are hashed");
      assertTrue(seed < storedHash && storedHash < bytes,
          "the key hashed, then the candidate's hash, then its bytes: " + seed + ", "
              + storedHash + ", " + bytes);
      // The INT key is compared between the hash and the string, a 4-byte load at the row.
      String keys = walk.substring(storedHash, bytes);
      assertTrue(keys.contains("ld.global.nc.s32") && keys.contains("setp.ne.s64"), keys);
      assertEquals(count(ptx, "// probe of join table 0"),
          count(ptx, ProgramEmitter.STRING_KEY_COMPARE), "one string key compared a probe");
      assumeTrue(PtxCompiler.available(), PtxCompiler::unavailableReason);
      CompileReport report = GeneratedModule.compile(kernel, "sm_90").report(kernel.entry());
      assertNull(GeneratedModule.rejection(report), report.summary());
    }
  }

  @Test
  void aTableOfFixedWidthKeysReadsNoStoredHash() throws Exception {
    ProgramBuilder b = new ProgramBuilder(List.of(ColumnType.LONG, ColumnType.LONG), false);
    int table = b.table(new JoinTableSchema(List.of(ColumnType.LONG, ColumnType.LONG),
        List.of(ColumnType.LONG)));
    int first = b.constant(b.loadColumn(0));
    b.constant(b.loadColumn(1));
    int row = b.emitNew(Opcode.PROBE, table, first, 2);
    Program program = b.build(b.emitNew(Opcode.IS_NOT_NULL, row, 0, 0),
        List.of(new Program.Output(b.emitNew(Opcode.LOAD_BUILD, table, row, 0),
            ColumnType.LONG)));
    String ptx = FilterProjectGenerator.generate(program, List.of(
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false),
        new InputSpec(ColumnType.LONG, Encoding.PLAIN, false))).ptx();
    assertTrue(ptx.contains("// probe of join table 0"), "the table is probed");
    assertFalse(ptx.contains(ProgramEmitter.CANDIDATE_HASH), ptx);
    assertFalse(ptx.contains(ProgramEmitter.STRING_KEY_COMPARE), ptx);
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      n++;
    }
    return n;
  }
}
