package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * How a generated aggregate kernel's row updates the per-block entry its keys found (the shared
 * copy of GroupAccumulation's row path): the wrapping sum's lower half, returning its old value,
 * and the integer MIN's and MAX's reads issued before anything waits for them, where no
 * function's input can be NULL. No GPU (the CUDA differential suites run these kernels against
 * the host reference).
 */
class SharedRowUpdateTest {
  private static final Pattern GLOBAL_COPY = Pattern.compile("\\$L_rows_global_\\d+");

  private static GeneratedKernel kernel(boolean keyNullable, boolean valueNullable)
      throws CodegenUnsupportedException {
    // HashAggregateBench's: GROUP BY a LONG, COUNT(*), SUM, MIN and MAX of a LONG, not ANSI.
    AggregateSpec spec = ShortcutModeTest.benchSpec(ColumnType.LONG);
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(spec.inputTypes(), false),
        List.of(new InputSpec(ColumnType.LONG, Encoding.PLAIN, keyNullable),
            new InputSpec(ColumnType.LONG, Encoding.PLAIN, valueNullable)),
        spec, KernelFeatures.forArch("sm_90"));
  }

  /** Each shared copy of the row path: from its branch to the global copy to that copy's label. */
  private static List<String> sharedCopies(String ptx) {
    Set<String> names = new LinkedHashSet<>();
    Matcher label = GLOBAL_COPY.matcher(ptx);
    while (label.find()) {
      names.add(label.group());
    }
    List<String> copies = new ArrayList<>();
    for (String name : names) {
      int branch = ptx.indexOf("bra " + name + ";");
      int placed = ptx.indexOf("\n" + name + ":");
      assertTrue(branch >= 0 && placed > branch, name);
      copies.add(ptx.substring(branch, placed));
    }
    return copies;
  }

  @Test
  void aRowIssuesItsSharedAtomicAndReadsBeforeItWaits() throws Exception {
    // Keys that can be NULL or not: the functions' input cannot, so the updates are deferred.
    for (boolean keyNullable : new boolean[] {false, true}) {
      List<String> copies = sharedCopies(kernel(keyNullable, false).ptx());
      assertTrue(!copies.isEmpty(), "a row path with a shared copy");
      for (String copy : copies) {
        int lowHalf = copy.indexOf("atom.shared.add.u32");
        int maxRead = copy.lastIndexOf("ld.volatile.shared.s64");
        int upperHalf = copy.indexOf("red.shared.add.u32 [%rd", lowHalf);
        int minWrite = copy.indexOf("atom.shared.min.s64");
        assertEquals(2, copy.split("ld\\.volatile\\.shared\\.s64", -1).length - 1, copy);
        assertTrue(lowHalf >= 0 && lowHalf < maxRead, "the sum's atomic, then the reads");
        assertTrue(maxRead < upperHalf && maxRead < minWrite,
            "what waits (the carry's upper half, the MIN's compare) after the MAX's read");
      }
    }
  }

  @Test
  void whereAValueCanBeNullEachFunctionIsWrittenWhole() throws Exception {
    // Held across the value's NULL tests, the deferred waits took two-key kernels of nullable
    // keys and values from 64 to 96-102 registers.
    for (String copy : sharedCopies(kernel(true, true).ptx())) {
      int minWrite = copy.indexOf("atom.shared.min.s64");
      int maxRead = copy.lastIndexOf("ld.volatile.shared.s64");
      assertTrue(minWrite >= 0 && minWrite < maxRead, "the MIN whole before the MAX's read");
    }
  }

  @Test
  @RequiresPtxCompiler
  void theKernelsCompileClean() throws Exception {
    for (boolean keyNullable : new boolean[] {false, true}) {
      for (boolean valueNullable : new boolean[] {false, true}) {
        TestPtx.assertCompilesClean(kernel(keyNullable, valueNullable), "sm_90");
      }
    }
  }
}
