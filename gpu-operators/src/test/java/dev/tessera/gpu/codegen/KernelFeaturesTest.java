package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tessera.gpu.agg.AggregateFunction;
import dev.tessera.gpu.agg.AggregateFunction.Kind;
import dev.tessera.gpu.agg.AggregateSpec;
import dev.tessera.gpu.codec.Encoding;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.gpu.expr.ProgramBuilder;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Kernels generated for what a device has: redux.sync from sm_80 on, in a module that declares
 * the target it needs, and the shuffles every supported device (sm_75 on) runs everywhere else.
 * No GPU: the in-jar compiler compiles each for the oldest device it may run on.
 */
class KernelFeaturesTest {
  private static final List<ColumnType> TYPES = List.of(ColumnType.LONG, ColumnType.LONG,
      ColumnType.DOUBLE);
  private static final Pattern TARGET = Pattern.compile("(?m)^\\.target (sm_\\d+a?)$");

  @Test
  void reduxSyncFromAmpereOn() {
    assertFalse(KernelFeatures.forArch("sm_75").reduxSync());
    assertFalse(KernelFeatures.forDevice(7, 5).reduxSync());
    for (String arch : List.of("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120")) {
      assertTrue(KernelFeatures.forArch(arch).reduxSync(), arch);
    }
    assertTrue(KernelFeatures.forDevice(12, 1).reduxSync());
    assertFalse(KernelFeatures.OLDEST.reduxSync());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> KernelFeatures.forArch("compute_90"));
    assertTrue(e.getMessage().contains("compute_90"), e.getMessage());
  }

  /** GROUP BY a LONG: count(*), sum, min and max of a LONG, sum and max of a DOUBLE. */
  private static GeneratedKernel kernel(KernelFeatures features)
      throws CodegenUnsupportedException {
    AggregateSpec spec = new AggregateSpec(TYPES, 1, List.of(
        new AggregateFunction(Kind.COUNT_ROWS, -1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MIN, 1, ColumnType.LONG),
        new AggregateFunction(Kind.MAX, 1, ColumnType.LONG),
        new AggregateFunction(Kind.SUM, 2, ColumnType.DOUBLE),
        new AggregateFunction(Kind.MAX, 2, ColumnType.DOUBLE)), false);
    List<InputSpec> inputs = TYPES.stream()
        .map(t -> new InputSpec(t, Encoding.PLAIN, true)).toList();
    return AggregateUpdateGenerator.generate(ProgramBuilder.identity(TYPES, false), inputs, spec,
        features);
  }

  private static String target(String module) {
    Matcher m = TARGET.matcher(module);
    assertTrue(m.find(), "no .target");
    String target = m.group(1);
    assertFalse(m.find(), "a second .target");
    return target;
  }

  @Test
  void theWarpsIntegerReductionsUseReduxSyncOnlyWhereTheDeviceHasIt() throws Exception {
    GeneratedKernel everywhere = kernel(KernelFeatures.OLDEST);
    GeneratedKernel ampere = kernel(KernelFeatures.forArch("sm_90"));
    assertNull(everywhere.target());
    assertFalse(everywhere.ptx().contains("redux.sync"));
    assertEquals("sm_75", target(GeneratedModule.text(everywhere)));
    assertEquals("sm_80", ampere.target());
    assertEquals("sm_80", target(GeneratedModule.text(ampere)));
    // The integer sum (three pieces) and the integer minimum and maximum (two words each).
    assertEquals(3 + 2 + 2, count(ampere.ptx(), "redux.sync."));
    // The DOUBLE sum and maximum keep their shuffles.
    assertTrue(ampere.ptx().contains("shfl.sync.bfly"));
    assertFalse(ampere.entry().equals(everywhere.entry()), "the two share an entry name");
  }

  @Test
  @RequiresPtxCompiler
  void eachCompilesForTheOldestDeviceItMayRunOn() throws Exception {
    for (String[] pair : new String[][] {{"sm_75", null}, {"sm_80", "sm_90"}}) {
      GeneratedKernel kernel = kernel(pair[1] == null ? KernelFeatures.OLDEST
          : KernelFeatures.forArch(pair[1]));
      CompileReport report = GeneratedModule.compile(kernel, pair[0]).report(kernel.entry());
      assertNull(GeneratedModule.rejection(report), pair[0] + ": " + report.summary());
    }
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      n++;
    }
    return n;
  }
}
